package broker

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker/outqueue"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// conn is one client connection. Its reader goroutine (serve) decodes
// frames and runs the handlers in order, except the slow ones, which run
// on goroutines of their own (connops.go); a writer goroutine drains the
// outbound queue. Broker-side events (dispatch, receipts, closes) append
// frames to the queue from any goroutine.
type conn struct {
	b      *Broker
	nc     net.Conn
	q      *outqueue.Queue
	log    *slog.Logger
	remote string // "/ip:port" as Pulsar prints it

	// Set by CONNECT on the reader goroutine, read by others after.
	clientVersion atomic.Pointer[string]
	connected     bool // reader goroutine only
	// bemSupported: the client announced supports_broker_entry_metadata.
	bemSupported atomic.Bool
	sec          atomic.Pointer[auth.ConnSession] // authenticated at CONNECT (security.go); nil: none

	lastRead atomic.Int64 // unix nanos of the last byte read
	// blocked is set when a dispatcher found the outbound queue full; the
	// writer then wakes this connection's subscriptions once it drains.
	blocked atomic.Bool

	mu struct {
		sync.Mutex
		producers map[uint64]*producer
		consumers map[uint64]*connConsumer
		// brokerClosed: consumer ids the broker closed (CLOSE_CONSUMER)
		// and the client has not re-subscribed yet.
		brokerClosed map[uint64]bool
		closed       bool
		// The PRODUCERs, SUBSCRIBEs and UNSUBSCRIBEs in flight by id
		// (connops.go); nil until the first.
		pendingProducers map[uint64]*pendingOp
		pendingConsumers map[uint64]*pendingOp
	}

	// ops holds a slot per slow command in flight (connops.go); opsWG
	// counts their goroutines.
	ops   chan struct{}
	opsWG sync.WaitGroup

	// inflightSends counts SENDs not yet answered (receipt or error), so a
	// closing connection flushes their answers first; sendsIdle is
	// signalled when it drops to zero.
	inflightSends atomic.Int64
	sendsIdle     chan struct{}
	closeOnce     sync.Once
	wg            sync.WaitGroup
}

// connConsumer ties a consumer id on this connection to its subscription.
type connConsumer struct {
	c     *consumer
	sub   *subscription
	topic *topic
}

func newConn(b *Broker, nc net.Conn) *conn {
	c := &conn{
		b:      b,
		nc:     nc,
		remote: "/" + nc.RemoteAddr().String(),

		sendsIdle: make(chan struct{}, 1),
		ops:       make(chan struct{}, maxConnOps),
	}
	c.log = b.log.With("remote", nc.RemoteAddr().String())
	c.mu.producers = make(map[uint64]*producer)
	c.mu.consumers = make(map[uint64]*connConsumer)
	c.mu.brokerClosed = make(map[uint64]bool)
	empty := ""
	c.clientVersion.Store(&empty)
	c.lastRead.Store(time.Now().UnixNano())
	c.q = outqueue.New(b.cfg.MaxOutboundBytes, c.drained)
	return c
}

// The connection is its consumers' dispatch.Sink: Writable,
// SendMessage, SendActiveChange and CloseConsumer.

// Writable reports whether the outbound queue takes more messages now;
// if not, the writer wakes the consumers' subscriptions once it drained.
func (c *conn) Writable() bool {
	if c.q.Writable() {
		return true
	}
	c.blocked.Store(true)
	return c.q.Writable() // re-check: the writer may have drained meanwhile
}

// drained runs on the writer goroutine when the queue got short again.
func (c *conn) drained() {
	if !c.blocked.CompareAndSwap(true, false) {
		return
	}
	c.mu.Lock()
	subs := make([]*subscription, 0, len(c.mu.consumers))
	for _, cc := range c.mu.consumers {
		if cc.sub != nil {
			subs = append(subs, cc.sub)
		}
	}
	c.mu.Unlock()
	for _, s := range subs {
		s.Wake()
	}
}

// deadlineWriter writes to the socket with a write deadline: a client that
// stops reading is disconnected after WriteTimeout.
type deadlineWriter struct{ c *conn }

func (w deadlineWriter) Write(b []byte) (int, error) {
	_ = w.c.nc.SetWriteDeadline(time.Now().Add(w.c.b.cfg.WriteTimeout))
	return w.c.nc.Write(b)
}

// WriteBuffers writes every segment with one deadline, using writev on
// TCP connections.
func (w deadlineWriter) WriteBuffers(nb *net.Buffers) error {
	_ = w.c.nc.SetWriteDeadline(time.Now().Add(w.c.b.cfg.WriteTimeout))
	_, err := nb.WriteTo(w.c.nc)
	return err
}

// serve runs the connection until it fails or the broker closes it, then
// cleans up every producer and consumer of the connection.
func (c *conn) serve() {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := c.q.Run(deadlineWriter{c}); err != nil {
			var ne net.Error
			switch {
			case errors.Is(err, ErrSlowConsumer):
				c.log.Warn("closing connection: outbound queue overflow")
			case errors.As(err, &ne) && ne.Timeout():
				c.log.Warn("closing connection: client stopped reading", "timeout", c.b.cfg.WriteTimeout)
			}
			c.nc.Close() // unblocks the reader
		}
	}()
	err := c.readLoop()
	if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) { // readLoop always returns an error
		c.logClosed(err)
	}
	c.opsWG.Wait() // nothing attaches after cleanup
	c.cleanup()
	// Sends held by a backlog quota will not be answered: drop them so
	// awaitSends waits only for sends in storage.
	c.b.dropHeld(func(h *heldSend) bool { return h.p.sink == producerSink(c) })
	c.awaitSends(sendDrainTimeout)
	c.q.Close()
	c.wg.Wait()
	if peerMaySend(err) {
		c.lingerClose(lingerTimeout)
	}
	c.nc.Close()
}

// lingerTimeout bounds how long a connection the broker refused keeps
// discarding its peer's input (lingerClose).
const lingerTimeout = time.Second

// peerMaySend reports whether the read loop ended with the peer's side
// still open: the broker refused what it read (a protocol error, a
// malformed or oversized frame), rather than the peer closing, the
// socket failing or timing out, or the broker closing it.
func peerMaySend(err error) bool {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, errIdle), errors.As(err, &ne):
		return false
	}
	return true
}

// lingerClose half-closes a connection the broker refused, so that what
// the writer flushed last (a CLOSE_PRODUCER, an error) reaches the client
// ahead of the FIN, and discards the client's input until it closes or d
// passes. Closing with unread input instead makes the kernel answer with
// a reset, and a reset throws away, on the client's side, what the broker
// wrote but the client had not read yet. A broker that closes the socket
// meanwhile (shutdown) ends the wait at once.
func (c *conn) lingerClose(d time.Duration) {
	hc, ok := c.nc.(interface{ CloseWrite() error })
	if !ok || hc.CloseWrite() != nil {
		return
	}
	if c.nc.SetReadDeadline(time.Now().Add(d)) != nil {
		return
	}
	buf := make([]byte, 4<<10)
	for {
		if _, err := c.nc.Read(buf); err != nil {
			return
		}
	}
}

// sendDrainTimeout bounds how long a closing connection waits for the
// answers of its in-flight SENDs (sends held by a backlog quota are
// dropped first; this bounds a storage that does not answer).
const sendDrainTimeout = 5 * time.Second

// sendStarted counts a SEND that will be answered by exactly one
// sendReceipt or sendSendError.
func (c *conn) sendStarted() { c.inflightSends.Add(1) }

// sendAnswered is the counterpart of sendStarted.
func (c *conn) sendAnswered() {
	if c.inflightSends.Add(-1) == 0 {
		select {
		case c.sendsIdle <- struct{}{}:
		default:
		}
	}
}

// awaitSends waits until every in-flight SEND was answered, or d passed.
func (c *conn) awaitSends(d time.Duration) {
	if c.inflightSends.Load() <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	for c.inflightSends.Load() > 0 {
		select {
		case <-c.sendsIdle:
		case <-t.C:
			c.log.Warn("closing connection with unanswered sends", "count", c.inflightSends.Load())
			return
		}
	}
}

// stopReading ends the reader (graceful close): serve then answers the
// SENDs in flight, flushes the outbound queue and closes the socket.
func (c *conn) stopReading() {
	if tc, ok := c.nc.(*net.TCPConn); ok {
		if tc.CloseRead() == nil {
			return
		}
	}
	c.shutdown()
}

// shutdown closes the socket; serve then cleans up.
func (c *conn) shutdown() {
	c.closeOnce.Do(func() {
		c.q.Close()
		c.nc.Close()
	})
}

// keepAliveReader reads from the socket; on read-deadline expiry it pings
// the peer, and gives up after IdleTimeout without input. With a negative
// KeepAliveInterval it only reads.
type keepAliveReader struct{ c *conn }

func (r keepAliveReader) Read(p []byte) (int, error) {
	c := r.c
	if c.b.cfg.KeepAliveInterval < 0 {
		n, err := c.nc.Read(p)
		c.b.connBytesIn.Add(int64(n))
		return n, err
	}
	for {
		_ = c.nc.SetReadDeadline(time.Now().Add(c.b.cfg.KeepAliveInterval))
		n, err := c.nc.Read(p)
		if n > 0 {
			c.b.connBytesIn.Add(int64(n))
			c.lastRead.Store(time.Now().UnixNano())
			return n, nil
		}
		var ne net.Error
		if err != nil && errors.As(err, &ne) && ne.Timeout() {
			idle := time.Since(time.Unix(0, c.lastRead.Load()))
			if idle >= c.b.cfg.IdleTimeout {
				return 0, errIdle
			}
			c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}})
			continue
		}
		return n, err
	}
}

var errIdle = errors.New("broker: connection idle timeout")

func (c *conn) readLoop() error {
	br := bufio.NewReaderSize(keepAliveReader{c}, 64<<10)
	fr := pulsarproto.NewFrameReader(br, min(preConnectMaxFrame, c.b.cfg.MaxMessageSize+pulsarproto.FramePadding))
	stopTimer := c.startConnectTimer()
	defer stopTimer()
	for {
		f, err := fr.Next()
		if err != nil {
			return err
		}
		wasConnected := c.connected
		if err := c.handle(f); err != nil {
			return err
		}
		if !wasConnected && c.connected { // see handshake.go
			stopTimer()
			fr.SetMaxFrameSize(c.b.cfg.MaxMessageSize + pulsarproto.FramePadding)
		}
	}
}

// sendSimple queues a payload-less command. A command missing a required
// field is a broker bug: it is logged and not sent.
func (c *conn) sendSimple(cmd *pb.BaseCommand) {
	if withheld, code, ok := pulsarproto.ScrubError(cmd); ok {
		c.log.Warn("error answer carried internal detail; the client gets a generic message", "type", cmd.GetType().String(), "code", code, "detail", withheld)
	}
	ok := c.q.Push(func(dst []byte) []byte {
		out, err := pulsarproto.AppendCommand(dst, cmd)
		if err != nil {
			c.log.Error("BUG: unencodable command", "type", cmd.GetType().String(), "err", err)
			return dst
		}
		return out
	})
	if !ok {
		c.shutdown()
	}
}

// cleanup detaches every producer and consumer of a closed connection:
// producer names and exclusive slots are freed, unacked entries go back
// for redelivery.
func (c *conn) cleanup() {
	c.mu.Lock()
	c.mu.closed = true
	prods := c.mu.producers
	cons := c.mu.consumers
	c.mu.producers = map[uint64]*producer{}
	c.mu.consumers = map[uint64]*connConsumer{}
	c.mu.Unlock()
	for _, p := range prods {
		p.topic.removeProducer(p)
	}
	for _, cc := range cons {
		cc.topic.removeConsumer(cc.sub, cc.c)
	}
}

// --- producerSink and dispatch.Sink ---

func (c *conn) sendReceipt(producerID, seq, highest uint64, pos position) {
	r := pulsarproto.SendReceipt{
		ProducerID: producerID, SequenceID: seq, HighestSequenceID: highest,
		LedgerID: uint64(pos.LedgerID), EntryID: uint64(pos.EntryID),
	}
	defer c.sendAnswered()
	buf, ok := c.q.Begin()
	if !ok {
		return
	}
	if !c.q.End(pulsarproto.AppendSendReceipt(buf, &r)) {
		c.shutdown()
	}
}

func (c *conn) sendSendError(producerID, seq uint64, code int32, msg string) {
	defer c.sendAnswered()
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_SEND_ERROR.Enum(), SendError: &pb.CommandSendError{
		ProducerId: &producerID, SequenceId: &seq, Error: pb.ServerError(code).Enum(), Message: &msg,
	}})
}

func (c *conn) sendDropped(uint64, uint64) { c.sendAnswered() }

func (c *conn) producerReady(p *producer) {
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER_SUCCESS.Enum(), ProducerSuccess: &pb.CommandProducerSuccess{
		RequestId:      &p.requestID,
		ProducerName:   &p.name,
		LastSequenceId: ptr(p.topic.lastSequence(p.name)),
		ProducerReady:  ptr(true),
	}})
}

// closeProducer tells the client the broker closed p. CLOSE_PRODUCER is
// queued before c.mu is released: once the reader can see p gone (a SEND
// for it then closes the connection, as in Pulsar), the close is already
// ahead of that in the outbound queue, which a closing connection
// flushes. Queuing never blocks (outqueue), so holding c.mu is safe.
func (c *conn) closeProducer(p *producer) {
	id := p.id
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.producers[id] == p {
		delete(c.mu.producers, id)
	}
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_CLOSE_PRODUCER.Enum(), CloseProducer: &pb.CommandCloseProducer{
		ProducerId: &id, RequestId: ptr(uint64(0)),
	}})
}

func (c *conn) SendMessage(consumerID uint64, pos position, redeliveries uint32, ackSet []int64, data []byte) {
	h := pulsarproto.MessageHeader{
		ConsumerID: consumerID, LedgerID: uint64(pos.LedgerID), EntryID: uint64(pos.EntryID),
		Partition: -1, RedeliveryCount: redeliveries, AckSet: ackSet,
	}
	data = c.clientEntry(data)
	buf, ok := c.q.Begin()
	if !ok {
		return
	}
	if len(data) >= outqueue.RefThreshold {
		// Frame header and command for an entry of len(data) bytes, then
		// the entry itself by reference: AppendMessage sized the frame
		// for an empty entry, so add the entry to totalSize.
		start := len(buf)
		buf = pulsarproto.AppendMessage(buf, &h, nil)
		binary.BigEndian.PutUint32(buf[start:], binary.BigEndian.Uint32(buf[start:])+uint32(len(data)))
		buf = c.q.AppendRef(buf, data)
	} else {
		buf = pulsarproto.AppendMessage(buf, &h, data)
	}
	if !c.q.End(buf) {
		c.shutdown()
	}
}

func (c *conn) SendActiveChange(consumerID uint64, active bool) {
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_ACTIVE_CONSUMER_CHANGE.Enum(), ActiveConsumerChange: &pb.CommandActiveConsumerChange{
		ConsumerId: &consumerID, IsActive: &active,
	}})
}

func (c *conn) CloseConsumer(co *consumer) {
	id := co.ID()
	c.mu.Lock()
	if cc := c.mu.consumers[id]; cc != nil && cc.c == co {
		delete(c.mu.consumers, id)
		// Bounded: ids are the client's; a client that never
		// re-subscribes leaves at most one flag per closed consumer.
		if len(c.mu.brokerClosed) < 10000 {
			c.mu.brokerClosed[id] = true
		}
	}
	c.mu.Unlock()
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_CLOSE_CONSUMER.Enum(), CloseConsumer: &pb.CommandCloseConsumer{
		ConsumerId: &id, RequestId: ptr(uint64(0)),
	}})
}

func ptr[T any](v T) *T { return &v }
