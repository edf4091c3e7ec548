package iopolicy

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
)

// EnvPolicy is the environment variable in which the worker hands a
// builtin connector instance the policy (JSON).
const EnvPolicy = "MAGNETAR_IO_POLICY"

// DefaultListen is the listen allow-list when the operator names none:
// loopback only.
var DefaultListen = []string{"127.0.0.1:*", "[::1]:*"}

// ErrRefused wraps every refused value.
var ErrRefused = errors.New("not allowed")

// Keys name the operator's settings in errors (the worker sets them to
// its configuration keys).
type Keys struct{ Directories, Listen, Hosts string }

// DefaultKeys are Magnetar's configuration keys.
var DefaultKeys = Keys{Directories: "connectorsAllowedDirectories", Listen: "connectorsAllowedListenAddresses",
	Hosts: "connectorsAllowedHosts"}

// Policy is the operator's allow-list. The zero Policy allows nothing.
type Policy struct {
	// Directories are absolute directory roots, possibly with {tenant}.
	Directories []string `json:"directories,omitempty"`
	// Listen and Hosts are HOST:PORTS entries (see the package comment).
	Listen []string `json:"listen,omitempty"`
	Hosts  []string `json:"hosts,omitempty"`

	listen, hosts []rule
	keys          Keys
}

// rule is one parsed HOST:PORTS entry.
type rule struct {
	any, all bool   // host "*"; all interfaces (0.0.0.0 or ::)
	ip       net.IP // nil with any, all or name
	name     string // a DNS name (hosts only), lower case
	lo, hi   int    // port range; lo 0 with any port
	anyPort  bool
}

// New parses the three lists. Directory entries must be absolute.
func New(dirs, listen, hosts []string) (*Policy, error) {
	p := &Policy{keys: DefaultKeys}
	for _, d := range dirs {
		if d = strings.TrimSpace(d); d == "" {
			continue
		}
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("%s: %q is not an absolute path", p.keys.Directories, d)
		}
		if hasDotDot(d) {
			return nil, fmt.Errorf("%s: %q has a .. element", p.keys.Directories, d)
		}
		p.Directories = append(p.Directories, filepath.Clean(d))
	}
	var err error
	if p.Listen, p.listen, err = parseRules(listen, false, p.keys.Listen); err != nil {
		return nil, err
	}
	if p.Hosts, p.hosts, err = parseRules(hosts, true, p.keys.Hosts); err != nil {
		return nil, err
	}
	return p, nil
}

// WithKeys returns p naming its settings keys in errors.
func (p *Policy) WithKeys(k Keys) *Policy {
	q := *p
	q.keys = k
	return &q
}

// Encode returns the policy as the JSON handed to instances.
func (p *Policy) Encode() string {
	b, _ := json.Marshal(p)
	return string(b)
}

// Decode reads a policy written by Encode; an empty string is the zero
// Policy (nothing allowed).
func Decode(s string) (*Policy, error) {
	var raw Policy
	if s != "" {
		if err := json.Unmarshal([]byte(s), &raw); err != nil {
			return nil, fmt.Errorf("%s: %w", EnvPolicy, err)
		}
	}
	return New(raw.Directories, raw.Listen, raw.Hosts)
}

func parseRules(entries []string, hosts bool, key string) ([]string, []rule, error) {
	var keep []string
	var out []rule
	for _, e := range entries {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		h, ports, err := net.SplitHostPort(e)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %q: want HOST:PORTS (PORTS is *, N or N-M): %v", key, e, err)
		}
		r := rule{}
		switch {
		case h == "*":
			r.any = true
		case h == "localhost":
			// Both loopback addresses: two rules.
			for _, lo := range []string{"127.0.0.1", "::1"} {
				_, rr, err := parseRules([]string{net.JoinHostPort(lo, ports)}, hosts, key)
				if err != nil {
					return nil, nil, err
				}
				out = append(out, rr...)
			}
			keep = append(keep, e)
			continue
		case h == "":
			return nil, nil, fmt.Errorf("%s: %q: name a host (0.0.0.0 for all interfaces, * for any)", key, e)
		default:
			if ip := net.ParseIP(h); ip != nil {
				if ip.IsUnspecified() {
					r.all = true
				} else {
					r.ip = ip
				}
			} else if hosts && validName(h) {
				r.name = strings.ToLower(h)
			} else {
				return nil, nil, fmt.Errorf("%s: %q: host must be an IP address, localhost or *", key, e)
			}
		}
		if r.lo, r.hi, r.anyPort, err = parsePorts(ports); err != nil {
			return nil, nil, fmt.Errorf("%s: %q: %v", key, e, err)
		}
		keep = append(keep, e)
		out = append(out, r)
	}
	return keep, out, nil
}

func parsePorts(s string) (lo, hi int, any bool, err error) {
	if s == "*" {
		return 0, 65535, true, nil
	}
	a, b, isRange := strings.Cut(s, "-")
	if lo, err = strconv.Atoi(a); err != nil || lo < 0 || lo > 65535 {
		return 0, 0, false, fmt.Errorf("port %q: want 0..65535", a)
	}
	hi = lo
	if isRange {
		if hi, err = strconv.Atoi(b); err != nil || hi < lo || hi > 65535 {
			return 0, 0, false, fmt.Errorf("port range %q: want N-M with N <= M <= 65535", s)
		}
	}
	return lo, hi, false, nil
}

func validName(h string) bool {
	if len(h) == 0 || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

func (r rule) portOK(port int, listen bool) bool {
	if r.anyPort {
		return port > 0 || listen
	}
	return port >= r.lo && port <= r.hi
}

// CheckListen reports whether a webhook may listen on addr (HOST:PORT;
// an empty host, 0.0.0.0 or [::] is every interface).
func (p *Policy) CheckListen(addr string) error {
	h, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: listen address %q: %v", ErrRefused, addr, err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 0 || port > 65535 {
		return fmt.Errorf("%w: listen address %q: port must be a number 0..65535", ErrRefused, addr)
	}
	var ips []net.IP
	all := false
	switch ip := net.ParseIP(h); {
	case h == "" || ip != nil && ip.IsUnspecified():
		all = true
	case h == "localhost":
		ips = []net.IP{net.IPv4(127, 0, 0, 1)}
	case ip != nil:
		ips = []net.IP{ip}
	default:
		return fmt.Errorf("%w: listen address %q: the host must be an IP address or localhost", ErrRefused, addr)
	}
	for _, r := range p.listen {
		if !r.portOK(port, true) {
			continue
		}
		// An entry for all interfaces also allows any one of them.
		if r.any || r.all || !all && r.ip != nil && r.ip.Equal(ips[0]) {
			return nil
		}
	}
	return fmt.Errorf("%w: listen address %q is not allowed by %s %q", ErrRefused, addr, p.keys.Listen, strings.Join(p.Listen, ","))
}

// CheckHost reports whether a connector may connect to host:port (host a
// name or an IP address).
func (p *Policy) CheckHost(host string, port int) error {
	ip := net.ParseIP(strings.Trim(host, "[]"))
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	for _, r := range p.hosts {
		if !r.portOK(port, false) {
			continue
		}
		switch {
		case r.any:
			return nil
		case r.ip != nil && ip != nil && r.ip.Equal(ip):
			return nil
		case r.name != "" && ip == nil && r.name == name:
			return nil
		}
	}
	return fmt.Errorf("%w: host %s is not allowed by %s %q", ErrRefused, net.JoinHostPort(host, strconv.Itoa(port)),
		p.keys.Hosts, strings.Join(p.Hosts, ","))
}

// Root is an allowed directory expanded for one tenant.
type Root string

// roots returns the directory entries that apply to tenant.
func (p *Policy) roots(tenant string) []Root {
	var out []Root
	for _, d := range p.Directories {
		if strings.Contains(d, "{tenant}") {
			if tenant == "" || tenant == "." || tenant == ".." || strings.ContainsAny(tenant, "/\x00") {
				continue
			}
			d = strings.ReplaceAll(d, "{tenant}", tenant)
		}
		out = append(out, Root(filepath.Clean(d)))
	}
	return out
}

// CheckPath reports whether tenant's connector may use path, and returns
// the root it lies in and the path relative to it ("." for the root).
func (p *Policy) CheckPath(tenant, path string) (Root, string, error) {
	if !filepath.IsAbs(path) {
		return "", "", fmt.Errorf("%w: path %q is not absolute", ErrRefused, path)
	}
	if hasDotDot(path) {
		return "", "", fmt.Errorf("%w: path %q has a .. element", ErrRefused, path)
	}
	clean := filepath.Clean(path)
	for _, r := range p.roots(tenant) {
		if clean == string(r) {
			return r, ".", nil
		}
		if rel, ok := strings.CutPrefix(clean, strings.TrimSuffix(string(r), "/")+"/"); ok {
			return r, rel, nil
		}
	}
	var names []string
	for _, r := range p.roots(tenant) {
		names = append(names, string(r))
	}
	if len(names) == 0 {
		return "", "", fmt.Errorf("%w: path %q: file connectors may use no directory (%s is empty)", ErrRefused, path, p.keys.Directories)
	}
	return "", "", fmt.Errorf("%w: path %q is outside the directories %s allows for tenant %s: %s", ErrRefused, path,
		p.keys.Directories, tenant, strings.Join(names, ", "))
}

func hasDotDot(p string) bool {
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return true
		}
	}
	return false
}
