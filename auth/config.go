package auth

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config holds the security settings, under Apache Pulsar's key names
// (broker.conf / standalone.conf). Set fills it from key=value pairs.
type Config struct {
	AuthenticationEnabled             bool
	AuthenticationProviders           []string // token, tls, basic (or Pulsar class names)
	AnonymousUserRole                 string
	AuthenticationRefreshCheckSeconds int
	AuthenticateMetricsEndpoint       bool

	AuthorizationEnabled                bool
	SuperUserRoles                      []string
	AuthorizationAllowWildcardsMatching bool

	// Proxies acting for clients (see proxy.go).
	ProxyRoles                   []string
	AuthenticateOriginalAuthData bool

	TokenSecretKey               string
	TokenPublicKey               string
	TokenPublicAlg               string
	TokenAuthClaim               string
	TokenAudienceClaim           string
	TokenAudience                string
	TokenAllowedClockSkewSeconds int

	BasicAuthConf string

	// Listeners. An empty BrokerServicePort/WebServicePort that was set
	// explicitly turns the plaintext listener off.
	BrokerServicePort    string
	WebServicePort       string
	BrokerServicePortTls string
	WebServicePortTls    string

	// TLSEnabled is Pulsar's deprecated switch: TLS ports default to
	// 6651 and 8443 when it is set and they are not.
	TLSEnabled                           bool
	TLSCertificateFilePath               string
	TLSKeyFilePath                       string
	TLSTrustCertsFilePath                string
	TLSRequireTrustedClientCertOnConnect bool
	TLSAllowInsecureConnection           bool
	TLSProtocols                         []string
	TLSCiphers                           []string
	TLSCertRefreshCheckDurationSec       int

	// The broker's own client identity towards bookies.
	BrokerClientAuthenticationPlugin     string
	BrokerClientAuthenticationParameters string
	BrokerClientTrustCertsFilePath       string
	BrokerClientTLSEnabled               bool
	BrokerClientCertificateFilePath      string
	BrokerClientKeyFilePath              string

	// set records which keys were given explicitly.
	set map[string]bool
}

// DefaultConfig returns Pulsar's defaults.
func DefaultConfig() Config {
	return Config{
		AuthenticationRefreshCheckSeconds: 60,
		TokenPublicAlg:                    "RS256",
		TokenAuthClaim:                    "sub",
		TLSCertRefreshCheckDurationSec:    300,
	}
}

type field struct {
	key string
	doc string
	str *string
	b   *bool
	n   *int
	ls  *[]string
}

func (c *Config) fields() []field {
	return []field{
		{key: "authenticationEnabled", b: &c.AuthenticationEnabled, doc: "authenticate every client"},
		{key: "authenticationProviders", ls: &c.AuthenticationProviders, doc: "comma list: token, tls, basic (Pulsar class names accepted)"},
		{key: "anonymousUserRole", str: &c.AnonymousUserRole, doc: "role of clients that present no credentials (empty: refused)"},
		{key: "authenticationRefreshCheckSeconds", n: &c.AuthenticationRefreshCheckSeconds, doc: "how often expiring credentials are checked and challenged"},
		{key: "authenticateMetricsEndpoint", b: &c.AuthenticateMetricsEndpoint, doc: "require authentication on /metrics"},
		{key: "authorizationEnabled", b: &c.AuthorizationEnabled, doc: "check every operation against grants"},
		{key: "superUserRoles", ls: &c.SuperUserRoles, doc: "comma list of roles allowed everything"},
		{key: "authorizationAllowWildcardsMatching", b: &c.AuthorizationAllowWildcardsMatching, doc: "granted roles with a leading or trailing * match by suffix or prefix"},
		{key: "proxyRoles", ls: &c.ProxyRoles, doc: "comma list of roles that may act for a client (send an original principal)"},
		{key: "authenticateOriginalAuthData", b: &c.AuthenticateOriginalAuthData, doc: "re-authenticate the client credentials a proxy forwards; the original principal must match them"},
		{key: "tokenSecretKey", str: &c.TokenSecretKey, doc: "HMAC key: data:;base64,..., file:///path, a path, or base64"},
		{key: "tokenPublicKey", str: &c.TokenPublicKey, doc: "public key (X.509 DER or PEM) for RS*/ES* tokens, same forms"},
		{key: "tokenPublicAlg", str: &c.TokenPublicAlg, doc: "key family of tokenPublicKey (informational; the key type decides)"},
		{key: "tokenAuthClaim", str: &c.TokenAuthClaim, doc: "claim holding the role"},
		{key: "tokenAudienceClaim", str: &c.TokenAudienceClaim, doc: "claim holding the audience (requires tokenAudience)"},
		{key: "tokenAudience", str: &c.TokenAudience, doc: "this service's audience"},
		{key: "tokenAllowedClockSkewSeconds", n: &c.TokenAllowedClockSkewSeconds, doc: "leeway on exp and nbf"},
		{key: "basicAuthConf", str: &c.BasicAuthConf, doc: "htpasswd file: bcrypt, APR1-MD5 or crypt hashes (same forms as keys)"},
		{key: "brokerServicePort", str: &c.BrokerServicePort, doc: "plaintext binary port or address (empty: off)"},
		{key: "webServicePort", str: &c.WebServicePort, doc: "plaintext HTTP port or address (empty: off)"},
		{key: "brokerServicePortTls", str: &c.BrokerServicePortTls, doc: "TLS binary port or address, e.g. 6651"},
		{key: "webServicePortTls", str: &c.WebServicePortTls, doc: "HTTPS port or address, e.g. 8443"},
		{key: "tlsEnabled", b: &c.TLSEnabled, doc: "deprecated Pulsar switch: TLS ports default to 6651 and 8443"},
		{key: "tlsCertificateFilePath", str: &c.TLSCertificateFilePath, doc: "server certificate chain (PEM)"},
		{key: "tlsKeyFilePath", str: &c.TLSKeyFilePath, doc: "server private key (PEM, PKCS#8 or PKCS#1/SEC1)"},
		{key: "tlsTrustCertsFilePath", str: &c.TLSTrustCertsFilePath, doc: "CA bundle that verifies client certificates"},
		{key: "tlsRequireTrustedClientCertOnConnect", b: &c.TLSRequireTrustedClientCertOnConnect, doc: "refuse TLS clients without a trusted certificate"},
		{key: "tlsAllowInsecureConnection", b: &c.TLSAllowInsecureConnection, doc: "accept unverifiable client certificates (never used as identity)"},
		{key: "tlsProtocols", ls: &c.TLSProtocols, doc: "comma list, e.g. TLSv1.3,TLSv1.2 (TLS 1.0/1.1 refused)"},
		{key: "tlsCiphers", ls: &c.TLSCiphers, doc: "comma list of cipher suite names (TLS 1.2)"},
		{key: "tlsCertRefreshCheckDurationSec", n: &c.TLSCertRefreshCheckDurationSec, doc: "how often certificate files are checked for changes (0: every handshake)"},
		{key: "brokerClientAuthenticationPlugin", str: &c.BrokerClientAuthenticationPlugin, doc: "the broker's own credentials towards bookies: token or tls"},
		{key: "brokerClientAuthenticationParameters", str: &c.BrokerClientAuthenticationParameters, doc: "parameters of that plugin (token:..., file:..., tlsCertFile:...,tlsKeyFile:...)"},
		{key: "brokerClientTrustCertsFilePath", str: &c.BrokerClientTrustCertsFilePath, doc: "CA bundle that verifies bookies"},
		{key: "brokerClientTlsEnabled", b: &c.BrokerClientTLSEnabled, doc: "use TLS towards bookies"},
		{key: "brokerClientCertificateFilePath", str: &c.BrokerClientCertificateFilePath, doc: "client certificate presented to bookies (mutual TLS) with any plugin"},
		{key: "brokerClientKeyFilePath", str: &c.BrokerClientKeyFilePath, doc: "key of brokerClientCertificateFilePath"},
	}
}

// Keys lists every setting: key and one-line description.
func (c *Config) Keys() [][2]string {
	var out [][2]string
	for _, f := range c.fields() {
		out = append(out, [2]string{f.key, f.doc})
	}
	return out
}

// IsBool reports whether key is a boolean setting.
func (c *Config) IsBool(key string) bool {
	return slices.ContainsFunc(c.fields(), func(f field) bool { return f.key == key && f.b != nil })
}

// Set assigns one setting by its Pulsar key.
func (c *Config) Set(key, value string) error {
	value = strings.TrimSpace(value)
	for _, f := range c.fields() {
		if f.key != key {
			continue
		}
		switch {
		case f.str != nil:
			*f.str = value
		case f.b != nil:
			if value == "" {
				*f.b = false
				break
			}
			v, err := strconv.ParseBool(value)
			if err != nil {
				return fmt.Errorf("auth: %s: %q is not a boolean", key, value)
			}
			*f.b = v
		case f.n != nil:
			v, err := strconv.Atoi(value)
			if err != nil || v < 0 {
				return fmt.Errorf("auth: %s: %q is not a non-negative integer", key, value)
			}
			if v == 0 && key == "authenticationRefreshCheckSeconds" {
				// Pulsar schedules the check at this period: 0 is refused
				// there too (no "never").
				return fmt.Errorf("auth: %s: must be at least 1", key)
			}
			*f.n = v
		case f.ls != nil:
			*f.ls = nil
			for _, s := range strings.Split(value, ",") {
				if s = strings.TrimSpace(s); s != "" {
					*f.ls = append(*f.ls, s)
				}
			}
		}
		if c.set == nil {
			c.set = map[string]bool{}
		}
		c.set[key] = true
		return nil
	}
	return fmt.Errorf("auth: unknown setting %q", key)
}

// IsSet reports whether key was given explicitly.
func (c *Config) IsSet(key string) bool { return c.set[key] }

// Known reports whether key is a security setting.
func (c *Config) Known(key string) bool {
	return slices.ContainsFunc(c.fields(), func(f field) bool { return f.key == key })
}

// LoadFile applies a Pulsar-style properties file: key=value lines, #
// comments, blank lines. Keys that are not security settings are
// returned (the caller may apply them elsewhere or report them).
func (c *Config) LoadFile(path string) (unknown []string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want key=value", path, n)
		}
		k = strings.TrimSpace(k)
		if !c.Known(k) {
			unknown = append(unknown, k)
			continue
		}
		if err := c.Set(k, v); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return unknown, sc.Err()
}

// ListenAddr turns a Pulsar port setting ("6651") into a listen address
// (":6651"); an address with a host is kept.
func ListenAddr(v string) string {
	if v == "" || strings.Contains(v, ":") {
		return v
	}
	return ":" + v
}

// RefreshInterval is AuthenticationRefreshCheckSeconds as a duration.
func (c *Config) RefreshInterval() time.Duration {
	return time.Duration(c.AuthenticationRefreshCheckSeconds) * time.Second
}

// providerName maps a Pulsar provider class name to a method name.
func providerName(s string) (string, error) {
	switch low := strings.ToLower(s); {
	case low == MethodToken || strings.HasSuffix(low, "authenticationprovidertoken"):
		return MethodToken, nil
	case low == MethodTLS || strings.HasSuffix(low, "authenticationprovidertls"):
		return MethodTLS, nil
	case low == MethodBasic || strings.HasSuffix(low, "authenticationproviderbasic"):
		return MethodBasic, nil
	}
	return "", fmt.Errorf("auth: unsupported authentication provider %q (token, tls, basic)", s)
}
