package auth

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
)

// Bookie-protocol authentication. The client's first request on a
// connection is AUTH with payload
//
//	<method> 0x00 <credential bytes>
//
// (method token or basic; the credential as in CONNECT.auth_data). Mutual
// TLS needs no AUTH: the bookie's listener verifies the client
// certificate against its trust file during the handshake.

// BookieAuthPayload returns the AUTH payload source for c (nil for tls
// or no credentials).
func BookieAuthPayload(c *ClientAuth) func() ([]byte, error) {
	if c == nil || c.Method == MethodTLS {
		return nil
	}
	return func() ([]byte, error) {
		d, err := c.Data()
		if err != nil {
			return nil, err
		}
		return append(append([]byte(c.Method), 0), d...), nil
	}
}

// BookieAuthenticator checks AUTH requests on a bookie: the credentials
// must authenticate and the role must be one of Roles (the brokers' and
// autorecovery's identities; superUserRoles by default).
type BookieAuthenticator struct {
	Authn *Authenticator
	Roles []string
	Log   *slog.Logger
}

// Required reports that requests wait for a successful AUTH.
func (b *BookieAuthenticator) Required() bool { return true }

// Authenticate implements the bookie server's hook.
func (b *BookieAuthenticator) Authenticate(remote net.Addr, payload []byte) ([]byte, error) {
	method, data, ok := bytes.Cut(payload, []byte{0})
	if !ok || len(method) == 0 {
		return nil, errors.New("auth: bookie AUTH payload must be <method>\\x00<credentials>")
	}
	id, err := b.Authn.Authenticate(string(method), Credentials{Data: data, Remote: remote.String()})
	if err == nil && id.Role == "" {
		err = fmt.Errorf("%w: anonymous access to bookies", ErrAuthentication)
	}
	if err == nil {
		for _, r := range b.Roles {
			if strings.TrimSpace(r) == id.Role {
				if b.Log != nil {
					b.Log.Debug("bookie client authenticated", "role", id.Role, "remote", remote.String())
				}
				return nil, nil
			}
		}
		err = fmt.Errorf("%w: role %q may not use bookies", ErrAuthorization, id.Role)
	}
	if b.Log != nil {
		b.Log.Warn("bookie client refused", "remote", remote.String(), "err", err)
	}
	return nil, err
}
