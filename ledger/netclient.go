package ledger

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/internal/tlsconn"
	"github.com/magnetar-mq/magnetar/protocol/bkproto"
)

// NetOptions configures NetResolver.
type NetOptions struct {
	// DialTimeout bounds a connection attempt (default 5 s).
	DialTimeout time.Duration
	// RequestTimeout bounds every request without a context deadline
	// (adds; default 10 s). A timed-out add fails with bkproto.ErrIO, which
	// makes the writer replace the bookie.
	RequestTimeout time.Duration
	// ConnsPerBookie is the size of each bookie's connection pool (default
	// 1); requests are spread over the pool round-robin, each connection
	// pipelined.
	ConnsPerBookie int
	// Logger receives connection events (default: discard).
	Logger *slog.Logger
	// TLS, if set, makes every bookie connection TLS; the handshake (chain
	// and host name of the bookie address, unless ServerName is set)
	// completes before any request or credential is sent.
	TLS *tls.Config
	// Auth, if set, returns the payload of an AUTH request sent first on
	// every new connection; a refusal fails the dial with
	// bkproto.ErrUnauthorized.
	Auth func() ([]byte, error)
}

// EnsureDefaults fills unset fields.
func (o *NetOptions) EnsureDefaults() {
	if o.DialTimeout == 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 10 * time.Second
	}
	if o.ConnsPerBookie <= 0 {
		o.ConnsPerBookie = 1
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// NetResolver resolves a bookie id, its "host:port" address, to a network
// client speaking bkproto. Each bookie gets a pool of ConnsPerBookie
// pipelined connections, each re-dialled on its next request after it
// breaks.
//
// Safe for concurrent use. Close closes every connection.
type NetResolver struct {
	opts NetOptions
	mu   sync.Mutex
	m    map[string]*netBookie
	done bool
	wg   sync.WaitGroup // connection goroutines
}

// NewNetResolver returns a resolver dialling bookies over TCP.
func NewNetResolver(opts NetOptions) *NetResolver {
	opts.EnsureDefaults()
	return &NetResolver{opts: opts, m: map[string]*netBookie{}}
}

// Client implements BookieResolver.
func (r *NetResolver) Client(id string) (BookieClient, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return nil, ErrClosed
	}
	b, ok := r.m[id]
	if !ok {
		b = &netBookie{r: r, addr: id, conns: make([]atomic.Pointer[netConn], r.opts.ConnsPerBookie)}
		r.m[id] = b
	}
	return b, nil
}

// Close closes every connection and waits for their goroutines.
func (r *NetResolver) Close() error {
	r.mu.Lock()
	r.done = true
	bs := r.m
	r.m = map[string]*netBookie{}
	r.mu.Unlock()
	for _, b := range bs {
		b.mu.Lock()
		for i := range b.conns {
			if c := b.conns[i].Load(); c != nil {
				c.fail(ErrClosed)
			}
		}
		b.mu.Unlock()
	}
	r.wg.Wait()
	return nil
}

// netBookie is the BookieClient of one bookie address.
type netBookie struct {
	r     *NetResolver
	addr  string
	next  atomic.Uint64
	mu    sync.Mutex                // serializes dialling
	conns []atomic.Pointer[netConn] // the pool; nil slots are dialled on use
}

// get returns a healthy connection of the pool, dialling if needed.
func (b *netBookie) get() (*netConn, error) {
	slot := int(b.next.Add(1) % uint64(len(b.conns)))
	// The hot path takes no lock: a live connection is published by an
	// atomic store after its handshake.
	if c := b.conns[slot].Load(); c != nil && !c.broken() {
		return c, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.conns[slot].Load(); c != nil && !c.broken() {
		return c, nil
	}
	nc, err := net.DialTimeout("tcp", b.addr, b.r.opts.DialTimeout)
	if err != nil {
		return nil, fmt.Errorf("%w: dial %s: %w", bkproto.ErrIO, b.addr, err)
	}
	if nc, err = b.secure(nc); err != nil {
		return nil, err
	}
	c := newNetConn(nc, b.r.opts.RequestTimeout)
	b.r.mu.Lock()
	if b.r.done {
		b.r.mu.Unlock()
		nc.Close()
		return nil, ErrClosed
	}
	b.r.wg.Add(3)
	b.r.mu.Unlock()
	go func() { defer b.r.wg.Done(); c.readLoop() }()
	go func() { defer b.r.wg.Done(); c.writeLoop() }()
	go func() { defer b.r.wg.Done(); c.timeoutLoop() }()
	if err := b.authenticate(c); err != nil {
		c.fail(err)
		return nil, err
	}
	b.conns[slot].Store(c)
	return c, nil
}

// secure runs the TLS handshake on a new connection when configured.
func (b *netBookie) secure(nc net.Conn) (net.Conn, error) {
	if b.r.opts.TLS == nil {
		return nc, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.r.opts.DialTimeout)
	defer cancel()
	tc, err := tlsconn.Client(ctx, nc, b.addr, b.r.opts.TLS)
	if err != nil {
		return nil, fmt.Errorf("%w: TLS handshake with %s: %w", bkproto.ErrIO, b.addr, err)
	}
	return tc, nil
}

// authenticate sends the AUTH request on a new connection and waits for
// its answer.
func (b *netBookie) authenticate(c *netConn) error {
	if b.r.opts.Auth == nil {
		return nil
	}
	payload, err := b.r.opts.Auth()
	if err != nil {
		return fmt.Errorf("%w: bookie credentials: %w", bkproto.ErrUnauthorized, err)
	}
	ch := make(chan error, 1)
	c.send(&bkproto.Request{Op: bkproto.OpAuth, Payload: payload}, time.Now().Add(b.r.opts.DialTimeout), func(r *bkproto.Response, err error) {
		if err == nil {
			err = r.Status.Err()
		}
		ch <- err
	})
	if err := <-ch; err != nil {
		return fmt.Errorf("authenticating to bookie %s: %w", b.addr, err)
	}
	return nil
}

func (b *netBookie) send(req *bkproto.Request, deadline time.Time, done func(*bkproto.Response, error)) {
	c, err := b.get()
	if err != nil {
		done(nil, err)
		return
	}
	c.send(req, deadline, done)
}

// AddEntry implements BookieClient.
func (b *netBookie) AddEntry(ledgerID, entryID int64, masterKey, entry []byte, recovery bool, done func(error)) {
	req := bkproto.Request{Op: bkproto.OpAdd, Ledger: ledgerID, Entry: entryID, MasterKey: masterKey, Payload: entry}
	if recovery {
		req.Flags = bkproto.FlagRecovery | bkproto.FlagHighPriority
	}
	c, err := b.get()
	if err != nil {
		done(err)
		return
	}
	c.enqueue(&req, time.Time{}, call{add: done})
}

// roundTrip sends req and waits for its answer or ctx. The response's
// payload is copied.
func (b *netBookie) roundTrip(ctx context.Context, req *bkproto.Request) (bkproto.Response, error) {
	type res struct {
		r   bkproto.Response
		err error
	}
	ch := make(chan res, 1)
	deadline, _ := ctx.Deadline()
	b.send(req, deadline, func(r *bkproto.Response, err error) {
		if err != nil {
			ch <- res{err: err}
			return
		}
		cp := *r
		cp.Payload = append([]byte(nil), r.Payload...)
		ch <- res{r: cp, err: r.Status.Err()}
	})
	select {
	case x := <-ch:
		return x.r, x.err
	case <-ctx.Done():
		return bkproto.Response{}, ctx.Err()
	}
}

// ReadEntry implements BookieClient.
func (b *netBookie) ReadEntry(ctx context.Context, ledgerID, entryID int64, fence bool, masterKey []byte) ([]byte, error) {
	req := bkproto.Request{Op: bkproto.OpRead, Ledger: ledgerID, Entry: entryID}
	if fence {
		req.Flags = bkproto.FlagFence | bkproto.FlagHighPriority
		req.MasterKey = masterKey
	}
	r, err := b.roundTrip(ctx, &req)
	if err != nil {
		return nil, err
	}
	return r.Payload, nil
}

// ReadLAC implements BookieClient.
func (b *netBookie) ReadLAC(ctx context.Context, ledgerID int64) (int64, []byte, error) {
	r, err := b.roundTrip(ctx, &bkproto.Request{Op: bkproto.OpReadLAC, Ledger: ledgerID})
	if err != nil {
		return 0, nil, err
	}
	if len(r.Payload) == 0 {
		r.Payload = nil
	}
	return r.Entry, r.Payload, nil
}

// WriteLAC implements BookieClient.
func (b *netBookie) WriteLAC(ctx context.Context, ledgerID, lac int64, masterKey, body []byte) error {
	_, err := b.roundTrip(ctx, &bkproto.Request{Op: bkproto.OpWriteLAC, Ledger: ledgerID, Entry: lac, MasterKey: masterKey, Payload: body})
	return err
}

// LongPoll waits up to timeout for an entry after prevLAC: it returns the
// bookie's LAC and, if it passed prevLAC, the framed entry prevLAC+1 (nil
// otherwise).
func (b *netBookie) LongPoll(ctx context.Context, ledgerID, prevLAC int64, timeout time.Duration) (int64, []byte, error) {
	r, err := b.roundTrip(ctx, &bkproto.Request{Op: bkproto.OpLongPoll, Ledger: ledgerID, Entry: prevLAC, TimeoutMs: uint32(timeout / time.Millisecond)})
	if err != nil {
		return 0, nil, err
	}
	if len(r.Payload) == 0 {
		r.Payload = nil
	}
	return r.Entry, r.Payload, nil
}

// Auth sends an AUTH request and returns the server's reply.
func (b *netBookie) Auth(ctx context.Context, payload []byte) ([]byte, error) {
	r, err := b.roundTrip(ctx, &bkproto.Request{Op: bkproto.OpAuth, Payload: payload})
	return r.Payload, err
}

// netConn is one pipelined connection: requests are encoded into out by
// the callers and written in batches by writeLoop; readLoop matches
// responses to calls by request id; timeoutLoop fails overdue calls.
type netConn struct {
	nc      net.Conn
	timeout time.Duration
	signal  chan struct{}
	quit    chan struct{}
	dead    atomic.Bool // err is set

	// Deadlines are monotonic nanoseconds since epoch. An add without a
	// context deadline takes its deadline from coarse, the clock as of
	// timeoutLoop's last tick, plus timeout and one tick: reading the
	// clock per request cost ~0.1 µs each on a paravirtual clock source,
	// and the deadline is only checked once per tick anyway. Such a call
	// times out timeout after it was sent, give or take two ticks.
	epoch  time.Time
	tick   time.Duration
	coarse atomic.Int64

	mu      sync.Mutex
	out     []byte
	spare   []byte
	nextID  uint64
	pending map[uint64]call
	err     error // set once broken
}

func newNetConn(nc net.Conn, timeout time.Duration) *netConn {
	return &netConn{
		nc: nc, pending: map[uint64]call{}, signal: make(chan struct{}, 1), quit: make(chan struct{}),
		timeout: timeout, epoch: time.Now(), tick: min(timeout/4, 100*time.Millisecond) + time.Millisecond,
	}
}

// call is a pending request: done gets the response (valid only during
// the call: it aliases the connection's read buffer and one Response the
// reader reuses), or add, for adds, only the status as an error. Stored
// by value, so a request costs no allocation of its own.
type call struct {
	done     func(*bkproto.Response, error)
	add      func(error)
	deadline int64 // netConn clock
}

// finish completes the call with r (nil on err).
func (cl *call) finish(r *bkproto.Response, err error) {
	if cl.add != nil {
		if err == nil {
			err = r.Status.Err()
		}
		cl.add(err)
		return
	}
	cl.done(r, err)
}

func (c *netConn) broken() bool { return c.dead.Load() }

func (c *netConn) send(req *bkproto.Request, deadline time.Time, done func(*bkproto.Response, error)) {
	c.enqueue(req, deadline, call{done: done})
}

// enqueue encodes req into the output batch and registers cl for its
// answer (cl.deadline is set here).
func (c *netConn) enqueue(req *bkproto.Request, deadline time.Time, cl call) {
	if deadline.IsZero() {
		cl.deadline = c.coarse.Load() + int64(c.timeout+c.tick)
	} else {
		cl.deadline = int64(deadline.Sub(c.epoch))
	}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		cl.finish(nil, err)
		return
	}
	c.nextID++
	req.ReqID = c.nextID
	var err error
	c.out, err = bkproto.AppendRequest(c.out, req)
	if err != nil {
		c.mu.Unlock()
		cl.finish(nil, fmt.Errorf("%w: %w", bkproto.ErrBadRequest, err))
		return
	}
	c.pending[req.ReqID] = cl
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// fail breaks the connection: every pending call fails with err.
func (c *netConn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	c.dead.Store(true)
	calls := c.pending
	c.pending = nil
	c.mu.Unlock()
	close(c.quit)
	c.nc.Close()
	for _, cl := range calls {
		cl.finish(nil, err)
	}
}

func (c *netConn) writeLoop() {
	for {
		select {
		case <-c.signal:
		case <-c.quit:
			return
		}
		c.mu.Lock()
		buf := c.out
		if len(buf) == 0 {
			c.mu.Unlock()
			continue
		}
		c.out, c.spare = c.spare[:0], nil
		c.mu.Unlock()
		if _, err := c.nc.Write(buf); err != nil {
			c.fail(fmt.Errorf("%w: write: %w", bkproto.ErrIO, err))
			return
		}
		c.mu.Lock()
		if cap(buf) <= 16<<20 {
			c.spare = buf[:0]
		}
		c.mu.Unlock()
	}
}

func (c *netConn) readLoop() {
	buf := make([]byte, 0, 64<<10)
	// One Response for every answer: a call's done must not keep it.
	var resp bkproto.Response
	for {
		rest := buf
		for {
			var r []byte
			var err error
			r, resp, err = bkproto.DecodeResponse(rest)
			if errors.Is(err, bkproto.ErrShort) {
				break
			}
			if err != nil {
				c.fail(fmt.Errorf("%w: %w", bkproto.ErrIO, err))
				return
			}
			rest = r
			c.mu.Lock()
			cl, ok := c.pending[resp.ReqID]
			delete(c.pending, resp.ReqID)
			c.mu.Unlock()
			if ok {
				cl.finish(&resp, nil)
			}
		}
		n := copy(buf, rest)
		buf = buf[:n]
		if need, err := bkproto.FrameLen(buf); err == nil && need > cap(buf) {
			nb := make([]byte, n, need)
			copy(nb, buf)
			buf = nb
		} else if err != nil && !errors.Is(err, bkproto.ErrShort) {
			c.fail(fmt.Errorf("%w: %w", bkproto.ErrIO, err))
			return
		}
		m, err := c.nc.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			c.fail(fmt.Errorf("%w: connection lost: %w", bkproto.ErrIO, err))
			return
		}
	}
}

func (c *netConn) timeoutLoop() {
	t := time.NewTicker(c.tick)
	defer t.Stop()
	for {
		select {
		case <-c.quit:
			return
		case now := <-t.C:
			ns := int64(now.Sub(c.epoch))
			c.coarse.Store(ns)
			var late []call
			c.mu.Lock()
			for id, cl := range c.pending {
				if ns > cl.deadline {
					late = append(late, cl)
					delete(c.pending, id)
				}
			}
			c.mu.Unlock()
			for _, cl := range late {
				cl.finish(nil, fmt.Errorf("%w: request timed out", bkproto.ErrIO))
			}
		}
	}
}
