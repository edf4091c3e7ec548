package connlimit

import (
	"crypto/tls"
	"log/slog"
	"net"
	"sync"
)

// Listener applies the caps to the connections of an inner listener.
type Listener struct {
	net.Listener
	perAddr int
	log     *slog.Logger

	slots chan struct{} // nil: no connection cap
	mu    sync.Mutex
	held  map[string]int // client address → untrusted connections open
}

// New returns ln with at most max open connections (≤ 0: no cap) and at
// most perAddr untrusted connections per client address (≤ 0: no cap).
// log (nil: none) hears of refused connections at debug level.
func New(ln net.Listener, max, perAddr int, log *slog.Logger) *Listener {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Listener{Listener: ln, perAddr: perAddr, log: log, held: map[string]int{}}
	if max > 0 {
		l.slots = make(chan struct{}, max)
	}
	return l
}

// Accept returns the next connection within the caps, as a *Conn.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		if l.slots != nil {
			l.slots <- struct{}{}
		}
		c, err := l.Listener.Accept()
		if err != nil {
			l.freeSlot()
			return nil, err
		}
		addr := c.RemoteAddr().String()
		if host, _, err := net.SplitHostPort(addr); err == nil {
			addr = host
		}
		l.mu.Lock()
		n := l.held[addr]
		over := l.perAddr > 0 && n >= l.perAddr
		if !over {
			l.held[addr] = n + 1
		}
		l.mu.Unlock()
		if !over {
			return &Conn{Conn: c, l: l, addr: addr}, nil
		}
		l.log.Debug("connection refused: too many untrusted connections from one address", "remote", addr, "cap", l.perAddr)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset: the kernel frees the socket at once
		}
		c.Close()
		l.freeSlot()
	}
}

func (l *Listener) freeSlot() {
	if l.slots != nil {
		<-l.slots
	}
}

// Untrusted returns the number of untrusted connections addr holds.
func (l *Listener) Untrusted(addr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[addr]
}

// Conn is an accepted connection.
type Conn struct {
	net.Conn
	l       *Listener
	addr    string
	trusted sync.Once // gives back the address's count
	closed  sync.Once // gives back the slot
}

// Trust takes c out of its address's untrusted count (once; later calls
// do nothing).
func (c *Conn) Trust() {
	c.trusted.Do(func() {
		c.l.mu.Lock()
		if c.l.held[c.addr]--; c.l.held[c.addr] <= 0 {
			delete(c.l.held, c.addr)
		}
		c.l.mu.Unlock()
	})
}

// Close closes the connection and gives back what it holds.
func (c *Conn) Close() error {
	err := c.Conn.Close()
	c.closed.Do(func() {
		c.Trust()
		c.l.freeSlot()
	})
	return err
}

// Of returns the *Conn under c (a TLS connection's too), or nil.
func Of(c net.Conn) *Conn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, _ := c.(*Conn)
	return lc
}
