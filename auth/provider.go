package auth

import (
	"crypto/x509"
	"errors"
	"time"
)

// Method names, as clients send them in CONNECT.auth_method_name.
const (
	MethodToken = "token"
	MethodTLS   = "tls"
	MethodBasic = "basic"
)

// ErrAuthentication is wrapped by every authentication failure. The
// detail is for the server log only; clients get a fixed message.
var ErrAuthentication = errors.New("authentication failed")

// Credentials is what a connection or request presents.
type Credentials struct {
	// Data is CONNECT.auth_data / AUTH_RESPONSE data, or the credential
	// part of an HTTP Authorization header (the token, or "user:pass").
	Data []byte
	// PeerCertificates are the client's verified certificate chain (leaf
	// first); empty on plaintext connections or when the client sent
	// none or it was not verified.
	PeerCertificates []*x509.Certificate
	// Remote is the peer address, for logs.
	Remote string
}

// Identity is an authenticated principal.
type Identity struct {
	Role   string
	Method string
	// Expires is when the credential stops being valid (zero: never).
	// Binary connections are challenged to refresh at that point.
	Expires time.Time
}

// Expired reports whether the identity's credential has expired at now.
func (id Identity) Expired(now time.Time) bool {
	return !id.Expires.IsZero() && !now.Before(id.Expires)
}

// Provider authenticates one method. Implementations are safe for
// concurrent use.
type Provider interface {
	// Name is the method name clients send.
	Name() string
	// Authenticate checks the credentials and returns the identity, or
	// an error wrapping ErrAuthentication.
	Authenticate(c Credentials) (Identity, error)
}
