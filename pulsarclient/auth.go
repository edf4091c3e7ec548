package pulsarclient

import (
	"crypto/tls"
	"fmt"
	"os"
	"strings"
)

// Authentication is what a client presents in CONNECT (and again when the
// broker sends AUTH_CHALLENGE): a method name and the data for it. A TLS
// client certificate is presented in the TLS handshake.
type Authentication interface {
	// Name is the auth_method_name ("token", "tls", "basic").
	Name() string
	// Data returns the current credentials; called at every connect and
	// challenge, so a supplier can refresh them.
	Data() ([]byte, error)
}

// tlsCertProvider is implemented by authentications that present a client
// certificate in the TLS handshake.
type tlsCertProvider interface {
	certificate() (*tls.Certificate, error)
}

type tokenAuth struct{ supplier func() (string, error) }

func (a *tokenAuth) Name() string { return "token" }
func (a *tokenAuth) Data() ([]byte, error) {
	t, err := a.supplier()
	if err != nil {
		return nil, fmt.Errorf("pulsarclient: token: %w", err)
	}
	return []byte(strings.TrimSpace(t)), nil
}

// NewAuthenticationToken authenticates with a fixed JWT.
func NewAuthenticationToken(token string) Authentication {
	return &tokenAuth{supplier: func() (string, error) { return token, nil }}
}

// NewAuthenticationTokenFromSupplier authenticates with the token f
// returns at each connect or challenge.
func NewAuthenticationTokenFromSupplier(f func() (string, error)) Authentication {
	return &tokenAuth{supplier: f}
}

// NewAuthenticationTokenFromFile authenticates with the token in path,
// read again at each connect or challenge (surrounding space trimmed).
func NewAuthenticationTokenFromFile(path string) Authentication {
	return &tokenAuth{supplier: func() (string, error) {
		b, err := os.ReadFile(path)
		return string(b), err
	}}
}

type tlsAuth struct{ certFile, keyFile string }

// NewAuthenticationTLS authenticates with a client certificate (PEM files)
// presented in the TLS handshake; the service URL must be pulsar+ssl://.
func NewAuthenticationTLS(certFile, keyFile string) Authentication {
	return &tlsAuth{certFile: certFile, keyFile: keyFile}
}

func (a *tlsAuth) Name() string          { return "tls" }
func (a *tlsAuth) Data() ([]byte, error) { return nil, nil }
func (a *tlsAuth) certificate() (*tls.Certificate, error) {
	c, err := tls.LoadX509KeyPair(a.certFile, a.keyFile)
	if err != nil {
		return nil, fmt.Errorf("pulsarclient: tls auth: %w", err)
	}
	return &c, nil
}

type basicAuth struct{ user, pass string }

// NewAuthenticationBasic authenticates with user and password (method
// "basic", data "user:password").
func NewAuthenticationBasic(user, password string) (Authentication, error) {
	if user == "" || strings.Contains(user, ":") {
		return nil, fmt.Errorf("pulsarclient: basic auth: user %q must be non-empty and free of ':'", user)
	}
	return &basicAuth{user: user, pass: password}, nil
}

func (a *basicAuth) Name() string          { return "basic" }
func (a *basicAuth) Data() ([]byte, error) { return []byte(a.user + ":" + a.pass), nil }
