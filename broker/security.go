package broker

// Security hooks (package auth decides): TLS listeners for the binary
// protocol and HTTP, authentication at CONNECT, credential refresh with
// AUTH_CHALLENGE / AUTH_RESPONSE (auth.ConnSession: the broker sends
// and reads the frames). Per-command authorization is package
// brokerauthz's, behind the CommandAuthorizer (access.go).

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
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

// authenticate checks CONNECT's credentials (package auth decides:
// auth.Security.Connect). On failure the client gets
// ERROR(request_id=-1, AuthenticationError, "Failed to authenticate"),
// or AuthorizationError "Invalid roles." for a refused original
// principal (the reason is only logged), and the returned error closes
// the connection after that frame is written.
func (c *conn) authenticate(m *pb.CommandConnect) error {
	sess, err := c.b.sec.Connect(auth.ConnectRequest{
		Method: pulsarproto.ConnectAuthMethod(m), Data: m.GetAuthData(),
		OriginalPrincipal: m.GetOriginalPrincipal(), OriginalMethod: m.GetOriginalAuthMethod(),
		OriginalData:    []byte(m.GetOriginalAuthData()),
		SupportsRefresh: m.GetFeatureFlags().GetSupportsAuthRefresh(),
		TLS:             auth.ConnTLS(c.nc), Remote: c.remote,
	})
	switch {
	case errors.Is(err, auth.ErrInvalidRoles):
		c.log.Warn("CONNECT refused", "original_principal", m.GetOriginalPrincipal(), "err", err)
		c.sendError(math.MaxUint64, codeAuthorizationError, "Invalid roles.")
	case err != nil:
		c.sendError(math.MaxUint64, int32(pb.ServerError_AuthenticationError), "Failed to authenticate")
	}
	if err != nil {
		return fmt.Errorf("broker: CONNECT: %w", err)
	}
	c.sec.Store(sess)
	return nil
}

// roles returns the roles c's commands are authorized for.
func (c *conn) roles() []string { return c.sec.Load().Roles() }

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

// checkExpiry runs one refresh step for c (auth.ConnSession.Check): an
// expired credential gets an AUTH_CHALLENGE; one still unanswered at the
// next step, or a client that cannot refresh, closes the connection.
func (c *conn) checkExpiry(now time.Time) {
	switch step, id := c.sec.Load().Check(now); step {
	case auth.RefreshClose:
		c.log.Info("closing connection: credentials expired", "role", id.Role)
		c.shutdown()
	case auth.RefreshChallenge:
		c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_AUTH_CHALLENGE.Enum(), AuthChallenge: &pb.CommandAuthChallenge{
			ServerVersion:   ptr(serverVersion),
			Challenge:       &pb.AuthData{AuthMethodName: ptr(id.Method), AuthData: []byte("PulsarAuthRefresh")},
			ProtocolVersion: ptr(int32(ourProtocolVersion)),
		}})
	}
}

// handleAuthResponse re-authenticates with the client's new credentials
// (auth.ConnSession.Refresh); a failure closes the connection.
func (c *conn) handleAuthResponse(m *pb.CommandAuthResponse) error {
	id, err := c.sec.Load().Refresh(m.GetResponse().GetAuthMethodName(), m.GetResponse().GetAuthData(), time.Now())
	if err != nil {
		c.sendError(math.MaxUint64, int32(pb.ServerError_AuthenticationError), "Failed to authenticate")
		return fmt.Errorf("broker: %w", err)
	}
	c.log.Debug("credentials refreshed", "role", id.Role, "expires", id.Expires)
	return nil
}
