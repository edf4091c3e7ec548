package auth

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// BasicProvider authenticates "user:password" against an htpasswd file
// of bcrypt hashes (`htpasswd -B`: $2y$, $2a$ or $2b$). Role = user name.
type BasicProvider struct {
	users map[string][]byte
	dummy []byte // compared for unknown users, so timing does not tell
}

// ParseHtpasswd reads an htpasswd file: one "user:hash" per line; blank
// lines and lines starting with # are skipped. A line that is not
// exactly user:hash, or a hash that is not bcrypt, is an error (the weak
// APR1-MD5, SHA1 and crypt hashes are refused).
func ParseHtpasswd(data []byte) (*BasicProvider, error) {
	p := &BasicProvider{users: map[string][]byte{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		if !ok || user == "" || hash == "" || strings.Contains(hash, ":") {
			return nil, fmt.Errorf("auth: htpasswd line %d: want user:hash", n)
		}
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			return nil, fmt.Errorf("auth: htpasswd line %d (user %q): not a bcrypt hash (make it with htpasswd -B)", n, user)
		}
		p.users[user] = []byte(hash)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(p.users) == 0 {
		return nil, errors.New("auth: htpasswd file has no users")
	}
	for _, h := range p.users {
		p.dummy = h
		break
	}
	return p, nil
}

// Name implements Provider.
func (p *BasicProvider) Name() string { return MethodBasic }

// Authenticate implements Provider; c.Data is "user:password".
func (p *BasicProvider) Authenticate(c Credentials) (Identity, error) {
	user, pass, ok := bytes.Cut(c.Data, []byte(":"))
	if !ok || len(user) == 0 {
		return Identity{}, fmt.Errorf("%w: basic: want user:password", ErrAuthentication)
	}
	h, known := p.users[string(user)]
	if !known {
		_ = bcrypt.CompareHashAndPassword(p.dummy, pass)
		return Identity{}, fmt.Errorf("%w: basic: unknown user or invalid password", ErrAuthentication)
	}
	if bcrypt.CompareHashAndPassword(h, pass) != nil {
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
