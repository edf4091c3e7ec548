package zookeeper

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// hostProvider hands the client the servers round-robin. Unlike
// go-zookeeper's DNSHostProvider, which with a single server asks for a
// one-second pause (and fails queued requests) on every reconnect, it asks
// for a pause only after two full passes over the servers without a
// successful session, so a reconnect after a dropped connection or an
// expired session is immediate and a down ensemble is retried once a second.
type hostProvider struct {
	mu      sync.Mutex
	servers []string // protected by mu
	curr    int      // protected by mu
	tries   int      // protected by mu: Next calls since Connected
}

func (h *hostProvider) Init(servers []string) error {
	if len(servers) == 0 {
		return errors.New("zookeeper: no servers")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.servers, h.curr = servers, -1
	return nil
}

func (h *hostProvider) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

func (h *hostProvider) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	h.tries++
	return h.servers[h.curr], h.tries > 2*len(h.servers)
}

func (h *hostProvider) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tries = 0
}

// zkLogger sends the client library's log lines to slog at debug level.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug("zk: " + fmt.Sprintf(format, args...))
}

// clampDialer wraps dial so that no socket deadline the client library
// sets lies more than limit ahead, and the connect handshake (up to the
// first bytes read) no more than handshake. go-zookeeper waits for the
// server's connect response for 10 × (2/3 × session timeout): 133 s with a
// 20 s session. A server restarting was seen to accept a connection during
// its startup and never answer it; waiting that long (or even a whole
// session timeout, as the Java client would) loses a session that a quick
// retry keeps.
func clampDialer(dial zk.Dialer, limit, handshake time.Duration) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := dial(network, address, timeout)
		if err != nil {
			return nil, err
		}
		cc := &clampConn{Conn: c, limit: limit}
		cc.handshake.Store(int64(handshake))
		return cc, nil
	}
}

type clampConn struct {
	net.Conn
	limit     time.Duration
	handshake atomic.Int64 // a tighter limit until the first Read returns data; 0 after
}

func (c *clampConn) clamp(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	limit := c.limit
	if h := time.Duration(c.handshake.Load()); h > 0 {
		limit = min(limit, h)
	}
	if latest := time.Now().Add(limit); t.After(latest) {
		return latest
	}
	return t
}

func (c *clampConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.handshake.Store(0)
	}
	return n, err
}

func (c *clampConn) SetDeadline(t time.Time) error      { return c.Conn.SetDeadline(c.clamp(t)) }
func (c *clampConn) SetReadDeadline(t time.Time) error  { return c.Conn.SetReadDeadline(c.clamp(t)) }
func (c *clampConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.clamp(t)) }
