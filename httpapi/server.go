package httpapi

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/magnetar-mq/magnetar/internal/connlimit"
)

// Server is an http.Server with Limits applied: header, idle, write and
// body timeouts, a cap on open connections and one on the connections
// each client address holds before authenticating (internal/connlimit,
// at accept, below TLS). Serve it on plain and TLS listeners; Shutdown
// stops them all.
type Server struct {
	srv *http.Server
	lim Limits
	log *slog.Logger
}

type connKey struct{}

// markAuthenticated records that a request on the connection of ctx has
// passed authentication (or needed none): the connection no longer
// counts against its address's unauthenticated cap.
func markAuthenticated(ctx context.Context) {
	if c, ok := ctx.Value(connKey{}).(*connlimit.Conn); ok {
		c.Trust()
	}
}

// NewServer returns a server of h (usually Table.Handler's) under lim.
func NewServer(h http.Handler, lim Limits, log *slog.Logger) *Server {
	lim.EnsureDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{lim: lim, log: log}
	s.srv = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: on(lim.ReadHeaderTimeout),
		IdleTimeout:       on(lim.IdleTimeout),
		WriteTimeout:      on(lim.WriteTimeout),
		MaxHeaderBytes:    lim.MaxRequestHeaderSize,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if lc := connlimit.Of(c); lc != nil {
				return context.WithValue(ctx, connKey{}, lc)
			}
			return ctx
		},
	}
	return s
}

// Serve accepts connections on ln (TLS when cfg is not nil) until
// Shutdown, and then returns nil.
func (s *Server) Serve(ln net.Listener, cfg *tls.Config) error {
	var l net.Listener = connlimit.New(ln, s.lim.MaxConnections, s.lim.MaxUnauthenticatedPerIP, s.log)
	if cfg != nil {
		l = tls.NewListener(l, cfg)
	}
	if err := s.srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops accepting, waits for the requests in flight (bounded by
// ctx) and closes every connection.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	return err
}

// shutdownTimeout bounds a server's graceful stop.
const shutdownTimeout = 5 * time.Second

// Close shuts the server down within a few seconds.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return s.Shutdown(ctx)
}
