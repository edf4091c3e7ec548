package auth

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
)

// Authenticator picks the provider by method name and applies the
// anonymous-role rule.
type Authenticator struct {
	providers map[string]Provider
	anonymous string
	// verify checks a chain the TLS stack did not verify (set with
	// tlsAllowInsecureConnection, where any certificate is accepted for
	// the transport): only a chain it accepts becomes an identity.
	verify func([]*x509.Certificate) bool
}

// NewAuthenticator returns an authenticator over providers. anonymous is
// the role given to a client that presents no credentials ("" = such
// clients are refused).
func NewAuthenticator(anonymous string, providers ...Provider) *Authenticator {
	a := &Authenticator{providers: map[string]Provider{}, anonymous: anonymous}
	for _, p := range providers {
		a.providers[p.Name()] = p
	}
	return a
}

// Provider returns the provider for method, or nil.
func (a *Authenticator) Provider(method string) Provider { return a.providers[method] }

// Anonymous is the configured anonymous role ("" if none).
func (a *Authenticator) Anonymous() string { return a.anonymous }

// Authenticate runs the provider named method. An empty or "none" method
// with no data is anonymous (if configured). Unlike Pulsar, an unknown
// method is refused rather than mapped to the anonymous role, and bad
// credentials never fall back to anonymous.
func (a *Authenticator) Authenticate(method string, c Credentials) (Identity, error) {
	if method == "" || method == "none" {
		if a.anonymous == "" {
			return Identity{}, fmt.Errorf("%w: no credentials and no anonymous role", ErrAuthentication)
		}
		return Identity{Role: a.anonymous}, nil
	}
	p := a.providers[method]
	if p == nil {
		return Identity{}, fmt.Errorf("%w: method %q is not enabled", ErrAuthentication, abbreviate(method))
	}
	return p.Authenticate(c)
}

// PeerCertificates returns the verified client chain of a TLS session
// (nil when there is none, or it was not verified).
func PeerCertificates(cs *tls.ConnectionState) Credentials {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
		return Credentials{}
	}
	return Credentials{PeerCertificates: cs.PeerCertificates}
}

// peer is PeerCertificates, plus chains accepted by a.verify.
func (a *Authenticator) peer(cs *tls.ConnectionState) Credentials {
	c := PeerCertificates(cs)
	if len(c.PeerCertificates) == 0 && cs != nil && len(cs.PeerCertificates) > 0 && a.verify != nil && a.verify(cs.PeerCertificates) {
		c.PeerCertificates = cs.PeerCertificates
	}
	return c
}

// AuthenticateHTTP authenticates a request: "Authorization: Bearer"
// selects token, "Basic" selects basic, otherwise a verified client
// certificate selects tls (when enabled), otherwise anonymous. Header
// X-Pulsar-Auth-Method-Name, if sent, must agree.
func (a *Authenticator) AuthenticateHTTP(r *http.Request) (Identity, error) {
	c := a.peer(r.TLS)
	c.Remote = r.RemoteAddr
	method := ""
	h := r.Header.Get("Authorization")
	switch {
	case strings.HasPrefix(h, "Bearer "):
		method = MethodToken
		c.Data = []byte(strings.TrimSpace(h[len("Bearer "):]))
	case len(h) > 6 && strings.EqualFold(h[:6], "Basic "):
		method = MethodBasic
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(h[6:]))
		if err != nil {
			return Identity{}, fmt.Errorf("%w: basic: bad base64", ErrAuthentication)
		}
		c.Data = raw
	case h != "":
		return Identity{}, fmt.Errorf("%w: unsupported Authorization scheme", ErrAuthentication)
	case len(c.PeerCertificates) > 0 && a.providers[MethodTLS] != nil:
		method = MethodTLS
	}
	if m := r.Header.Get("X-Pulsar-Auth-Method-Name"); m != "" && m != method {
		if method != "" || a.providers[m] == nil {
			return Identity{}, fmt.Errorf("%w: X-Pulsar-Auth-Method-Name %q does not match the credentials", ErrAuthentication, abbreviate(m))
		}
		method = m
	}
	return a.Authenticate(method, c)
}
