package auth

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/magnetar-mq/magnetar/auth/htpasswd"
)

// BasicProvider authenticates "user:password" against an htpasswd file
// (package htpasswd: bcrypt, and Pulsar's APR1-MD5 and DES crypt).
// Role = user name.
type BasicProvider struct {
	users map[string]htpasswd.Entry
	dummy htpasswd.Entry // compared for unknown users, so timing does not tell
	weak  []string       // users whose hash is APR1-MD5 or crypt, file order
}

// ParseHtpasswd reads an htpasswd file (htpasswd.Parse): a file with no
// user, a line that is not user:hash, or a hash in no known form is an
// error.
func ParseHtpasswd(data []byte) (*BasicProvider, error) {
	es, err := htpasswd.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("auth: htpasswd %w", err)
	}
	if len(es) == 0 {
		return nil, errors.New("auth: htpasswd file has no users")
	}
	p := &BasicProvider{users: map[string]htpasswd.Entry{}, dummy: es[0]}
	for _, e := range es {
		p.users[e.User] = e
		if e.Scheme.Weak() {
			p.weak = append(p.weak, e.User+" ("+e.Scheme.String()+")")
		}
	}
	return p, nil
}

// Weak lists the users whose hash is a weak form (APR1-MD5 or crypt),
// as "user (scheme)", for the start-up warning.
func (p *BasicProvider) Weak() []string { return p.weak }

// Name implements Provider.
func (p *BasicProvider) Name() string { return MethodBasic }

// Authenticate implements Provider; c.Data is "user:password".
func (p *BasicProvider) Authenticate(c Credentials) (Identity, error) {
	user, pass, ok := bytes.Cut(c.Data, []byte(":"))
	if !ok || len(user) == 0 {
		return Identity{}, fmt.Errorf("%w: basic: want user:password", ErrAuthentication)
	}
	e, known := p.users[string(user)]
	if !known {
		_ = p.dummy.Verify(pass)
		return Identity{}, fmt.Errorf("%w: basic: unknown user or invalid password", ErrAuthentication)
	}
	if !e.Verify(pass) {
		return Identity{}, fmt.Errorf("%w: basic: unknown user or invalid password", ErrAuthentication)
	}
	return Identity{Role: string(user), Method: MethodBasic}, nil
}

// TLSProvider takes the role from the verified client certificate's
// subject common name (method "tls").
type TLSProvider struct{}

// Name implements Provider.
func (TLSProvider) Name() string { return MethodTLS }

// Authenticate implements Provider.
func (TLSProvider) Authenticate(c Credentials) (Identity, error) {
	if len(c.PeerCertificates) == 0 {
		return Identity{}, fmt.Errorf("%w: tls: no verified client certificate", ErrAuthentication)
	}
	cn := c.PeerCertificates[0].Subject.CommonName
	if cn == "" {
		return Identity{}, fmt.Errorf("%w: tls: client certificate has no CN", ErrAuthentication)
	}
	return Identity{Role: cn, Method: MethodTLS, Expires: c.PeerCertificates[0].NotAfter}, nil
}
