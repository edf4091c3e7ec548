package broker

// Security hooks (package auth does the work): TLS listeners for the
// binary protocol and HTTP, authentication at CONNECT, credential
// refresh with AUTH_CHALLENGE / AUTH_RESPONSE. Per-command
// authorization is package brokerauthz's, behind the CommandAuthorizer
// (access.go).

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

const codeAuthorizationError = int32(pb.ServerError_AuthorizationError)

// newSecurity builds the security layer of cfg.Security (nil when off).
func newSecurity(cfg *brokerconf.Config, md metadata.Store, log *slog.Logger) (*auth.Security, error) {
	if cfg.Security == nil {
		return nil, nil
	}
	s, err := auth.New(*cfg.Security, md, cfg.ClusterName, log.With("component", "auth"))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if (cfg.TLSServiceAddr != "" || cfg.TLSHTTPAddr != "") && s.TLS == nil {
		return nil, fmt.Errorf("%w: TLS listeners need tlsCertificateFilePath and tlsKeyFilePath", ErrBadConfig)
	}
	return s, nil
}

// Security returns the broker's security layer (nil when off).
func (b *Broker) Security() *auth.Security { return b.sec }

// newHTTPServer builds the server of the HTTP and HTTPS listeners: the
// route table behind the guard (authentication, the routes' own
// authorization rules, cross-origin protection, limits). A table with
// conflicting routes fails here, before anything listens.
func newHTTPServer(rt *httpapi.Table, sec *auth.Security, lim httpapi.Limits, log *slog.Logger) (*httpapi.Server, error) {
	log = log.With("component", "http")
	h, err := rt.Handler(httpapi.Guard{Security: sec, Limits: lim, Log: log})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	return httpapi.NewServer(h, lim, log), nil
}

// connSec is a connection's authentication state.
type connSec struct {
	mu sync.Mutex
	id auth.Identity
	// original is the client a proxy role acts for ("" when the
	// connection is not proxied).
	original string
	refresh  bool // the client advertised supports_auth_refresh
	pending  bool // an AUTH_CHALLENGE is unanswered
}

// roles returns the roles a command is authorized for: the original
// principal (when proxied) and the connection's role.
func (cs *connSec) roles() []string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return auth.AuthorizedRoles(cs.id.Role, cs.original)
}

// authenticate checks CONNECT's credentials. On failure the client gets
// ERROR(request_id=-1, AuthenticationError, "Failed to authenticate")
// (the reason is only logged) and the returned error closes the
// connection after that frame is written.
func (c *conn) authenticate(m *pb.CommandConnect) error {
	s := c.b.sec
	if !s.Enabled() {
		return nil
	}
	id, err := s.AuthenticateConnect(pulsarproto.ConnectAuthMethod(m), m.GetAuthData(), auth.ConnTLS(c.nc), c.remote)
	if err != nil {
		c.sendError(math.MaxUint64, int32(pb.ServerError_AuthenticationError), "Failed to authenticate")
		return fmt.Errorf("broker: CONNECT: %w", err)
	}
	original, err := c.originalPrincipal(s, id, m)
	if err != nil {
		c.sendError(math.MaxUint64, codeAuthorizationError, "Invalid roles.")
		return fmt.Errorf("broker: CONNECT: %w", err)
	}
	c.sec.mu.Lock()
	c.sec.id = id
	c.sec.original = original
	c.sec.refresh = m.GetFeatureFlags().GetSupportsAuthRefresh()
	c.sec.mu.Unlock()
	return nil
}

// originalPrincipal validates CONNECT.original_principal against the
// authenticated role (auth/proxyroles.go): only a proxy role may name
// one, and must. With authenticateOriginalAuthData the forwarded
// credentials are authenticated too and must yield that principal.
func (c *conn) originalPrincipal(s *auth.Security, id auth.Identity, m *pb.CommandConnect) (string, error) {
	original := m.GetOriginalPrincipal()
	if err := s.CheckOriginalPrincipal(id.Role, original, false); err != nil {
		c.log.Warn("CONNECT refused", "role", id.Role, "original_principal", original, "err", err)
		return "", err
	}
	if original == "" || !s.Config.AuthenticateOriginalAuthData {
		return original, nil
	}
	oid, err := s.AuthenticateConnect(m.GetOriginalAuthMethod(), []byte(m.GetOriginalAuthData()), nil, c.remote)
	if err != nil {
		return "", fmt.Errorf("original auth data: %w", err)
	}
	if oid.Role != original {
		return "", fmt.Errorf("%w: original auth data is for %q, original principal %q", auth.ErrInvalidRoles, oid.Role, original)
	}
	return original, nil
}

// refreshLoop challenges connections whose credentials expired.
func (b *Broker) refreshLoop(every time.Duration) {
	defer b.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-b.done:
			return
		case now := <-t.C:
			b.mu.Lock()
			conns := make([]*conn, 0, len(b.mu.conns))
			for c := range b.mu.conns {
				conns = append(conns, c)
			}
			b.mu.Unlock()
			for _, c := range conns {
				c.checkExpiry(now)
			}
		}
	}
}

// checkExpiry runs one refresh step for c: an expired credential gets an
// AUTH_CHALLENGE; one still unanswered at the next step, or a client
// that cannot refresh, closes the connection.
func (c *conn) checkExpiry(now time.Time) {
	c.sec.mu.Lock()
	id, pending, refresh := c.sec.id, c.sec.pending, c.sec.refresh
	if id.Role == "" || !id.Expired(now) {
		c.sec.mu.Unlock()
		return
	}
	if pending || !refresh {
		c.sec.mu.Unlock()
		c.log.Info("closing connection: credentials expired", "role", id.Role, "challenged", pending)
		c.shutdown()
		return
	}
	c.sec.pending = true
	c.sec.mu.Unlock()
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_AUTH_CHALLENGE.Enum(), AuthChallenge: &pb.CommandAuthChallenge{
		ServerVersion:   ptr(serverVersion),
		Challenge:       &pb.AuthData{AuthMethodName: ptr(id.Method), AuthData: []byte("PulsarAuthRefresh")},
		ProtocolVersion: ptr(int32(ourProtocolVersion)),
	}})
}

// handleAuthResponse re-authenticates with the client's new credentials;
// the role may not change. A failure closes the connection.
func (c *conn) handleAuthResponse(m *pb.CommandAuthResponse) error {
	s := c.b.sec
	if !s.Enabled() {
		return nil
	}
	c.sec.mu.Lock()
	old := c.sec.id
	c.sec.mu.Unlock()
	method := m.GetResponse().GetAuthMethodName()
	if method != old.Method {
		c.sendError(math.MaxUint64, int32(pb.ServerError_AuthenticationError), "Failed to authenticate")
		return fmt.Errorf("broker: AUTH_RESPONSE with method %q, connection uses %q", method, old.Method)
	}
	id, err := s.AuthenticateConnect(method, m.GetResponse().GetAuthData(), auth.ConnTLS(c.nc), c.remote)
	if err == nil && id.Role != old.Role {
		err = errors.New("principal cannot change during an authentication refresh")
	}
	if err == nil && id.Expired(time.Now()) {
		err = errors.New("refreshed credentials already expired")
	}
	if err != nil {
		c.sendError(math.MaxUint64, int32(pb.ServerError_AuthenticationError), "Failed to authenticate")
		return fmt.Errorf("broker: AUTH_RESPONSE: %w", err)
	}
	c.sec.mu.Lock()
	c.sec.id, c.sec.pending = id, false
	c.sec.mu.Unlock()
	c.log.Debug("credentials refreshed", "role", id.Role, "expires", id.Expires)
	return nil
}
