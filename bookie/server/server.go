package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/magnetar-mq/magnetar/internal/acceptloop"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/protocol/bkproto"
)

// Authenticator is the auth hook. Authenticate sees the payload of each
// AUTH request of a connection and returns the reply bytes, or an error
// (the client gets EUA). While Required reports true, requests other than
// AUTH on a connection not yet authenticated get EUA.
type Authenticator interface {
	Authenticate(remote net.Addr, payload []byte) (reply []byte, err error)
	Required() bool
}

// AllowAll is the default Authenticator: no authentication needed, every
// AUTH request accepted.
type AllowAll struct{}

// Authenticate implements Authenticator.
func (AllowAll) Authenticate(net.Addr, []byte) ([]byte, error) { return nil, nil }

// Required implements Authenticator.
func (AllowAll) Required() bool { return false }

// Options configures a Server.
type Options struct {
	// Addr is the TCP listen address (default "127.0.0.1:0").
	Addr string
	// Logger receives the server's logs (default: discard).
	Logger *slog.Logger
	// Auth is the auth hook (default AllowAll).
	Auth Authenticator
	// TLS, if set, makes the listener TLS from the first byte (with
	// tls.RequireAndVerifyClientCert for mutual TLS).
	TLS *tls.Config
	// ReadWorkers and HighPriorityWorkers size the two worker pools (default
	// 8 each). Fence reads, recovery reads and WRITE_LAC run on the
	// high-priority pool, so they never wait behind normal reads.
	ReadWorkers, HighPriorityWorkers int
	// QueueSize bounds each pool's queue (default 10000); a read arriving
	// at a full queue gets ETOOMANYREQUESTS.
	QueueSize int
}

// EnsureDefaults fills unset fields.
func (o *Options) EnsureDefaults() {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Auth == nil {
		o.Auth = AllowAll{}
	}
	if o.ReadWorkers == 0 {
		o.ReadWorkers = 8
	}
	if o.HighPriorityWorkers == 0 {
		o.HighPriorityWorkers = 8
	}
	if o.QueueSize == 0 {
		o.QueueSize = 10000
	}
}

// Validate reports nonsensical settings.
func (o *Options) Validate() error {
	if o.ReadWorkers < 1 || o.HighPriorityWorkers < 1 || o.QueueSize < 1 {
		return fmt.Errorf("server: bad pool sizes %d/%d/%d", o.ReadWorkers, o.HighPriorityWorkers, o.QueueSize)
	}
	return nil
}

// Server serves the bkproto protocol for one bookie over TCP.
//
// Each connection has a reader goroutine (decodes frames, starts adds
// directly since they complete asynchronously through the bookie's
// durability callback, queues everything else to a pool) and a writer
// goroutine that writes every response queued since its last write in one
// call. Responses carry request ids and go out in completion order.
type Server struct {
	b    *bookie.Bookie
	opts Options
	ln   net.Listener
	lp   *longPoller

	readQ, hpQ chan task
	wg         sync.WaitGroup // accept loop, workers, connections
	closed     atomic.Bool
	stop       chan struct{}

	mu    sync.Mutex
	conns map[*conn]struct{}
}

type task struct {
	c   *conn
	req bkproto.Request // slices owned by the task
}

// New starts serving b on opts.Addr. Close stops it (not the bookie).
func New(b *bookie.Bookie, opts Options) (*Server, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if opts.TLS != nil {
		ln = tls.NewListener(ln, opts.TLS)
	}
	s := &Server{
		b: b, opts: opts, ln: ln,
		readQ: make(chan task, opts.QueueSize), hpQ: make(chan task, opts.QueueSize),
		stop: make(chan struct{}), conns: map[*conn]struct{}{},
	}
	s.lp = newLongPoller(s)
	for range opts.ReadWorkers {
		s.wg.Add(1)
		go s.worker(s.readQ)
	}
	for range opts.HighPriorityWorkers {
		s.wg.Add(1)
		go s.worker(s.hpQ)
	}
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

// Addr returns the listening address (host:port), the bookie's default id.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops accepting, closes every connection and waits for the
// server's goroutines. Adds in flight in the bookie complete there; their
// answers are dropped.
func (s *Server) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	err := s.ln.Close()
	close(s.stop)
	s.mu.Lock()
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.lp.close()
	s.wg.Wait()
	return err
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	acceptloop.Run(s.ln, s.stop, s.opts.Logger, func(nc net.Conn) bool {
		c := &conn{s: s, nc: nc, signal: make(chan struct{}, 1), authed: !s.opts.Auth.Required()}
		s.mu.Lock()
		if s.closed.Load() {
			s.mu.Unlock()
			nc.Close()
			return false
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(2)
		go c.readLoop()
		go c.writeLoop()
		return true
	})
}

func (s *Server) worker(q chan task) {
	defer s.wg.Done()
	for {
		select {
		case t := <-q:
			s.handle(t.c, &t.req)
		case <-s.stop:
			return
		}
	}
}

// conn is one client connection.
type conn struct {
	s      *Server
	nc     net.Conn
	authed bool // reader goroutine only

	mu     sync.Mutex
	out    []byte // responses not yet written
	spare  []byte
	closed bool
	signal chan struct{}
}

// respond queues r for the writer.
func (c *conn) respond(r *bkproto.Response) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	var err error
	c.out, err = bkproto.AppendResponse(c.out, r)
	c.mu.Unlock()
	if err != nil {
		c.s.opts.Logger.Error("server: encoding response", "op", r.Op, "err", err)
		c.nc.Close()
		return
	}
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

func (c *conn) writeLoop() {
	defer c.s.wg.Done()
	for {
		select {
		case <-c.signal:
		case <-c.s.stop:
			return
		}
		c.mu.Lock()
		closed := c.closed
		buf := c.out
		if len(buf) == 0 {
			c.mu.Unlock()
			if closed {
				return
			}
			continue
		}
		c.out, c.spare = c.spare[:0], nil
		c.mu.Unlock()
		if closed {
			return
		}
		_, err := c.nc.Write(buf)
		c.mu.Lock()
		if cap(buf) <= 16<<20 {
			c.spare = buf[:0]
		} else {
			c.spare = nil
		}
		c.mu.Unlock()
		if err != nil {
			c.nc.Close()
			return
		}
	}
}

func (c *conn) readLoop() {
	defer c.s.wg.Done()
	defer func() {
		c.nc.Close()
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		select {
		case c.signal <- struct{}{}:
		default:
		}
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
	}()
	buf := make([]byte, 0, 64<<10)
	var adds []bookie.Add
	for {
		// Decode every whole frame buffered. Consecutive adds go to the
		// bookie together (AddEntries), before the next other request
		// and before the buffer their payloads alias is reused.
		rest := buf
		for {
			r, req, err := bkproto.DecodeRequest(rest)
			if errors.Is(err, bkproto.ErrShort) {
				break
			}
			if err != nil {
				c.addAll(adds) // the adds before the bad frame stand
				c.s.opts.Logger.Warn("server: bad frame, closing connection", "remote", c.nc.RemoteAddr(), "err", err)
				return
			}
			rest = r
			if req.Op == bkproto.OpAdd && c.authed {
				adds = append(adds, c.addOf(&req))
				if len(adds) == maxAddBatch {
					adds = c.addAll(adds)
				}
				continue
			}
			adds = c.addAll(adds)
			c.dispatch(&req)
		}
		adds = c.addAll(adds)
		n := copy(buf, rest)
		buf = buf[:n]
		if need, err := bkproto.FrameLen(buf); err == nil && need > cap(buf) {
			nb := make([]byte, n, need)
			copy(nb, buf)
			buf = nb
		} else if err != nil && !errors.Is(err, bkproto.ErrShort) {
			c.s.opts.Logger.Warn("server: bad frame, closing connection", "remote", c.nc.RemoteAddr(), "err", err)
			return
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := c.nc.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil {
			if err != io.EOF && !c.s.closed.Load() {
				c.s.opts.Logger.Debug("server: connection closed", "remote", c.nc.RemoteAddr(), "err", err)
			}
			return
		}
	}
}

// dispatch runs on the reader goroutine; req aliases the read buffer.
func (c *conn) dispatch(req *bkproto.Request) {
	if req.Op == bkproto.OpAuth {
		reply, err := c.s.opts.Auth.Authenticate(c.nc.RemoteAddr(), req.Payload)
		st := bkproto.EOK
		if err != nil {
			st = bkproto.EUA
		} else {
			c.authed = true
		}
		c.respond(&bkproto.Response{Op: bkproto.OpAuth, Status: st, ReqID: req.ReqID, Payload: reply})
		return
	}
	if !c.authed {
		c.respond(&bkproto.Response{Op: req.Op, Status: bkproto.EUA, ReqID: req.ReqID, Ledger: req.Ledger, Entry: req.Entry})
		return
	}
	switch req.Op {
	case bkproto.OpAdd:
		c.add(req)
		return
	case bkproto.OpLongPoll:
		c.s.lp.poll(c, *req)
		return
	}
	t := task{c: c, req: *req}
	t.req.MasterKey = append([]byte(nil), req.MasterKey...)
	t.req.Payload = append([]byte(nil), req.Payload...)
	q := c.s.readQ
	if req.Flags.HighPriority() || req.Op == bkproto.OpWriteLAC {
		q = c.s.hpQ
	}
	select {
	case q <- t:
	default:
		c.respond(&bkproto.Response{Op: req.Op, Status: bkproto.ETOOMANYREQUESTS, ReqID: req.ReqID, Ledger: req.Ledger, Entry: req.Entry})
	}
}

// add hands an add to the bookie, which copies the payload before
// returning; the answer goes out from its durability callback.
func (c *conn) add(req *bkproto.Request) {
	a := c.addOf(req)
	c.addOne(&a)
}

// addOne hands one add to the bookie.
func (c *conn) addOne(a *bookie.Add) {
	c.s.b.AddEntry(a.Ledger, a.Entry, a.MasterKey, a.Payload, a.Recovery, a.Done)
}

// maxAddBatch bounds the adds the reader hands the bookie in one
// AddEntries call.
const maxAddBatch = 256

// addOf is the bookie add for req, answered from its callback; its
// payload and key alias the read buffer.
func (c *conn) addOf(req *bkproto.Request) bookie.Add {
	lac := int64(-1)
	if h, err := bkproto.DecodeEntryHeader(req.Payload); err == nil {
		lac = h.LAC
	}
	a := newAddCall()
	a.c, a.id, a.ledger, a.entry, a.lac = c, req.ReqID, req.Ledger, req.Entry, lac
	return bookie.Add{Ledger: req.Ledger, Entry: req.Entry, MasterKey: req.MasterKey, Payload: req.Payload,
		Recovery: req.Flags&bkproto.FlagRecovery != 0, Done: a.fn}
}

// addAll hands adds to the bookie (which copies the payloads before
// returning) and returns adds emptied for reuse.
func (c *conn) addAll(adds []bookie.Add) []bookie.Add {
	switch len(adds) {
	case 0:
		return adds
	case 1:
		c.addOne(&adds[0])
	default:
		c.s.b.AddEntries(adds)
	}
	clear(adds)
	return adds[:0]
}

// addCall is an add waiting for the bookie's answer. They are pooled, and
// fn (the method value of done) is made once per addCall: an add costs the
// server no allocation. The bookie calls done exactly once.
type addCall struct {
	c                  *conn
	id                 uint64
	ledger, entry, lac int64
	fn                 func(error)
}

var addCalls sync.Pool

// newAddCall returns a pooled addCall.
func newAddCall() *addCall {
	if a, ok := addCalls.Get().(*addCall); ok {
		return a
	}
	a := &addCall{}
	a.fn = a.done
	return a
}

func (a *addCall) done(err error) {
	c, id, ledger, entry, lac := a.c, a.id, a.ledger, a.entry, a.lac
	a.c = nil
	addCalls.Put(a)
	if err == nil {
		c.s.lp.added(ledger, entry, lac)
	}
	c.respond(&bkproto.Response{Op: bkproto.OpAdd, Status: bkproto.StatusOf(ProtoError(err)), ReqID: id, Ledger: ledger, Entry: entry})
}

// handle runs a queued request on a worker.
func (s *Server) handle(c *conn, req *bkproto.Request) {
	resp := bkproto.Response{Op: req.Op, ReqID: req.ReqID, Ledger: req.Ledger, Entry: req.Entry}
	var err error
	switch req.Op {
	case bkproto.OpRead:
		if req.Flags&bkproto.FlagFence != 0 {
			err = s.b.Fence(req.Ledger, req.MasterKey)
		}
		if err == nil {
			resp.Payload, err = s.b.ReadEntry(req.Ledger, req.Entry)
		}
		if h, herr := bkproto.DecodeEntryHeader(resp.Payload); err == nil && herr == nil {
			resp.Entry = h.EntryID
		}
	case bkproto.OpReadLAC:
		resp.Entry, resp.Payload, err = readLAC(s.b, req.Ledger)
	case bkproto.OpLongPoll:
		s.lp.answer(c, req)
		return
	case bkproto.OpWriteLAC:
		err = s.b.WriteLAC(req.Ledger, req.Entry, req.MasterKey, req.Payload)
		if err == nil {
			s.lp.added(req.Ledger, -1, req.Entry)
		}
	default:
		err = bkproto.ErrBadRequest
	}
	if err != nil {
		resp.Status = bkproto.StatusOf(ProtoError(err))
		resp.Payload = nil
	}
	c.respond(&resp)
}
