package iopolicy

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// pgFileKeys are connection settings that name a file or a service
// definition the PostgreSQL client would read: a tenant may not set
// them (the connector's TLS uses the system's trusted roots).
var pgFileKeys = []string{"passfile", "service", "servicefile", "sslcert", "sslkey", "sslrootcert", "sslpassword", "hostaddr"}

// CheckPostgresURL checks a PostgreSQL connection string (a
// postgres:// URL or keyword=value settings, as the jdbc-postgres sink's
// client reads them): every host it names, with its port (default 5432),
// must be allowed, it must name at least one, no host may be a Unix
// socket directory, and it may set no file-naming setting. It reads
// nothing and connects nowhere.
func (p *Policy) CheckPostgresURL(s string) error {
	settings, err := pgSettings(s)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRefused, err)
	}
	for _, k := range pgFileKeys {
		if _, ok := settings[k]; ok {
			return fmt.Errorf("%w: the connection setting %s names a file or service; it may not be set", ErrRefused, k)
		}
	}
	hosts := splitList(settings["host"])
	if len(hosts) == 0 {
		return fmt.Errorf("%w: the connection string names no host", ErrRefused)
	}
	ports := splitList(settings["port"])
	if len(ports) == 0 {
		ports = []string{"5432"}
	}
	if len(ports) != 1 && len(ports) != len(hosts) {
		return fmt.Errorf("%w: %d hosts and %d ports", ErrRefused, len(hosts), len(ports))
	}
	for i, h := range hosts {
		ps := ports[0]
		if len(ports) > 1 {
			ps = ports[i]
		}
		port, err := strconv.Atoi(ps)
		if err != nil || port < 1 || port > 65535 {
			return fmt.Errorf("%w: port %q", ErrRefused, ps)
		}
		if strings.HasPrefix(h, "/") || strings.HasPrefix(h, "@") {
			return fmt.Errorf("%w: host %q is a Unix socket; name a network host", ErrRefused, h)
		}
		if err := p.CheckHost(h, port); err != nil {
			return err
		}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// pgSettings reads a connection string into settings the way the
// PostgreSQL client does: a URL's hosts and ports (comma-separated in
// the authority) become host and port, and its query parameters are
// further settings that override them; otherwise keyword=value pairs.
func pgSettings(s string) (map[string]string, error) {
	if strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://") {
		return pgURLSettings(s)
	}
	return pgKeywordSettings(s)
}

func pgURLSettings(s string) (map[string]string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("connection URL: %v", err)
	}
	settings := map[string]string{}
	var hosts, ports []string
	for _, hp := range strings.Split(u.Host, ",") {
		if hp == "" {
			continue
		}
		h, p, err := net.SplitHostPort(hp)
		if err != nil {
			// No port: the whole element is the host.
			h, p = strings.Trim(hp, "[]"), ""
		}
		hosts = append(hosts, h)
		if p != "" {
			ports = append(ports, p)
		}
	}
	if len(hosts) > 0 {
		settings["host"] = strings.Join(hosts, ",")
	}
	if len(ports) > 0 {
		settings["port"] = strings.Join(ports, ",")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("connection URL query: %v", err)
	}
	for k, v := range q {
		settings[k] = v[0]
	}
	return settings, nil
}

// pgKeywordSettings reads "key=value key='quoted \' value'" settings.
func pgKeywordSettings(s string) (map[string]string, error) {
	settings := map[string]string{}
	for {
		s = strings.TrimLeft(s, " \t\n\r\v\f")
		if s == "" {
			return settings, nil
		}
		eq := strings.IndexRune(s, '=')
		if eq < 0 {
			return nil, fmt.Errorf("connection settings: %q is not key=value", s)
		}
		key := strings.TrimSpace(s[:eq])
		if key == "" || strings.ContainsAny(key, " \t\n\r\v\f") {
			return nil, fmt.Errorf("connection settings: bad key %q", key)
		}
		s = strings.TrimLeft(s[eq+1:], " \t\n\r\v\f")
		var val strings.Builder
		if strings.HasPrefix(s, "'") {
			s = s[1:]
			closed := false
			for len(s) > 0 {
				c := s[0]
				s = s[1:]
				if c == '\\' && len(s) > 0 {
					val.WriteByte(s[0])
					s = s[1:]
					continue
				}
				if c == '\'' {
					closed = true
					break
				}
				val.WriteByte(c)
			}
			if !closed {
				return nil, fmt.Errorf("connection settings: unterminated quote in %s", key)
			}
		} else {
			for len(s) > 0 && !strings.ContainsRune(" \t\n\r\v\f", rune(s[0])) {
				c := s[0]
				s = s[1:]
				if c == '\\' && len(s) > 0 {
					c, s = s[0], s[1:]
				}
				val.WriteByte(c)
			}
		}
		settings[key] = val.String()
	}
}
