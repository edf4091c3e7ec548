package tlsconn

import (
	"context"
	"crypto/tls"
	"net"
)

// Client runs the TLS client handshake over nc, a connection to addr
// (host:port), with a copy of cfg whose ServerName, when empty, is
// addr's host. On error nc is closed.
func Client(ctx context.Context, nc net.Conn, addr string, cfg *tls.Config) (*tls.Conn, error) {
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return tc, nil
}
