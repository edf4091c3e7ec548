package auth

import (
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"time"
)

// A binary-protocol connection's authentication, from CONNECT to close:
// the broker hands this package what the client sent (the frames are
// the broker's) and answers by what it decides.
//
//   - Connect authenticates CONNECT's credentials and validates its
//     original principal (proxyroles.go): only a proxy role may name
//     one, and must; with authenticateOriginalAuthData the forwarded
//     credentials are authenticated too and must yield that principal.
//   - A credential that expires (Identity.Expires) is challenged once
//     (AUTH_CHALLENGE) when the client advertised supports_auth_refresh;
//     a client that cannot refresh, or a challenge still unanswered at
//     the next check, closes the connection (ConnSession.Check).
//   - A refresh (AUTH_RESPONSE) must use the connection's method, keep
//     its role and not be expired already (ConnSession.Refresh).

// ConnectRequest is what CONNECT carries for authentication.
type ConnectRequest struct {
	Method string
	Data   []byte
	// OriginalPrincipal, OriginalMethod and OriginalData are what a
	// proxy forwards of its client ("" when not proxied).
	OriginalPrincipal, OriginalMethod string
	OriginalData                      []byte
	// SupportsRefresh is the client's supports_auth_refresh flag.
	SupportsRefresh bool
	// TLS is the connection's TLS session (nil: plaintext; ConnTLS),
	// Remote the client's address.
	TLS    *tls.ConnectionState
	Remote string
}

// ConnSession is one connection's authentication state. Safe for
// concurrent use; a nil *ConnSession is a connection with
// authentication off.
type ConnSession struct {
	s      *Security
	tls    *tls.ConnectionState
	remote string

	mu       sync.Mutex
	id       Identity
	original string // the client a proxy role acts for ("" if none)
	refresh  bool   // the client advertised supports_auth_refresh
	pending  bool   // an AUTH_CHALLENGE is unanswered
}

// Connect authenticates r. An error wrapping ErrInvalidRoles is a
// refused original principal (Pulsar answers AuthorizationError "Invalid
// roles."); any other error failed authentication. With authentication
// off it returns nil, nil.
func (s *Security) Connect(r ConnectRequest) (*ConnSession, error) {
	if !s.Enabled() {
		return nil, nil
	}
	id, err := s.AuthenticateConnect(r.Method, r.Data, r.TLS, r.Remote)
	if err != nil {
		return nil, err
	}
	if err := s.CheckOriginalPrincipal(id.Role, r.OriginalPrincipal, false); err != nil {
		return nil, err
	}
	if r.OriginalPrincipal != "" && s.Config.AuthenticateOriginalAuthData {
		oid, err := s.AuthenticateConnect(r.OriginalMethod, r.OriginalData, nil, r.Remote)
		if err != nil {
			return nil, fmt.Errorf("%w: original auth data: %w", ErrInvalidRoles, err)
		}
		if oid.Role != r.OriginalPrincipal {
			return nil, fmt.Errorf("%w: original auth data is for %q, original principal %q", ErrInvalidRoles, oid.Role, r.OriginalPrincipal)
		}
	}
	return &ConnSession{s: s, tls: r.TLS, remote: r.Remote, id: id, original: r.OriginalPrincipal, refresh: r.SupportsRefresh}, nil
}

// Roles returns the roles a command is authorized for: the original
// principal (when proxied) and the connection's role.
func (cs *ConnSession) Roles() []string {
	if cs == nil {
		return AuthorizedRoles("", "")
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return AuthorizedRoles(cs.id.Role, cs.original)
}

// Identity returns the connection's current identity.
func (cs *ConnSession) Identity() Identity {
	if cs == nil {
		return Identity{}
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.id
}

// RefreshStep is what a connection's credential check asks of the
// broker.
type RefreshStep int

const (
	// RefreshNone: the credentials are valid (or never expire).
	RefreshNone RefreshStep = iota
	// RefreshChallenge: send AUTH_CHALLENGE for the identity's method.
	RefreshChallenge
	// RefreshClose: close the connection (expired and not refreshable,
	// or a challenge unanswered since the last check).
	RefreshClose
)

// Check runs one refresh step at now and returns what the broker must
// do, with the identity it concerns.
func (cs *ConnSession) Check(now time.Time) (RefreshStep, Identity) {
	if cs == nil {
		return RefreshNone, Identity{}
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	switch {
	case cs.id.Role == "" || !cs.id.Expired(now):
		return RefreshNone, cs.id
	case cs.pending || !cs.refresh:
		return RefreshClose, cs.id
	}
	cs.pending = true
	return RefreshChallenge, cs.id
}

// Refresh re-authenticates with AUTH_RESPONSE's credentials at now: the
// method and the role may not change, and the new credentials may not
// be expired already. An error closes the connection.
func (cs *ConnSession) Refresh(method string, data []byte, now time.Time) (Identity, error) {
	if cs == nil {
		return Identity{}, nil
	}
	old := cs.Identity()
	if method != old.Method {
		return Identity{}, fmt.Errorf("AUTH_RESPONSE with method %q, connection uses %q", method, old.Method)
	}
	id, err := cs.s.AuthenticateConnect(method, data, cs.tls, cs.remote)
	if err == nil && id.Role != old.Role {
		err = errors.New("principal cannot change during an authentication refresh")
	}
	if err == nil && id.Expired(now) {
		err = errors.New("refreshed credentials already expired")
	}
	if err != nil {
		return Identity{}, fmt.Errorf("AUTH_RESPONSE: %w", err)
	}
	cs.mu.Lock()
	cs.id, cs.pending = id, false
	cs.mu.Unlock()
	return id, nil
}
