package pulsarclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// Producer defaults (Pulsar's).
const (
	defaultSendTimeout      = 30 * time.Second
	defaultMaxPending       = 1000
	defaultBatchMaxMessages = 1000
	defaultBatchMaxSize     = 128 << 10
	defaultBatchDelay       = 10 * time.Millisecond
)

// ProducerOptions configure a producer. Only Topic is required.
type ProducerOptions struct {
	Topic string
	// Name fixes the producer name (needed for deduplication across
	// restarts); empty lets the broker choose one.
	Name       string
	Properties map[string]string
	Schema     *Schema
	// SendTimeout fails a send without receipt after this long; 0 means
	// 30s, negative means never.
	SendTimeout time.Duration
	// MaxPendingMessages bounds the sends awaiting a receipt; a send
	// beyond it blocks. 0 means 1000.
	MaxPendingMessages      int
	DisableBatching         bool
	BatchingMaxMessages     uint
	BatchingMaxSize         uint
	BatchingMaxPublishDelay time.Duration
	CompressionType         CompressionType
	// EnableChunking splits a message above the broker's limit into
	// chunks (only without batching).
	EnableChunking bool
}

// Producer sends to a topic, spreading over its partitions: by key hash
// when a message has a key, round robin otherwise (switching partition
// every batching delay when batching).
type Producer struct {
	cl    *Client
	opts  ProducerOptions
	topic string
	parts []*partitionProducer

	rr         atomic.Uint64
	lastSwitch atomic.Int64
	closeOnce  sync.Once
}

// CreateProducer creates a producer on every partition of opts.Topic.
func (cl *Client) CreateProducer(opts ProducerOptions) (*Producer, error) {
	tn, err := pulsarproto.ParseTopicName(opts.Topic)
	if err != nil {
		return nil, fmt.Errorf("pulsarclient: topic %q: %w", opts.Topic, err)
	}
	if opts.SendTimeout == 0 {
		opts.SendTimeout = defaultSendTimeout
	}
	if opts.MaxPendingMessages <= 0 {
		opts.MaxPendingMessages = defaultMaxPending
	}
	if opts.BatchingMaxMessages == 0 {
		opts.BatchingMaxMessages = defaultBatchMaxMessages
	}
	if opts.BatchingMaxSize == 0 {
		opts.BatchingMaxSize = defaultBatchMaxSize
	}
	if opts.BatchingMaxPublishDelay <= 0 {
		opts.BatchingMaxPublishDelay = defaultBatchDelay
	}
	if opts.EnableChunking {
		opts.DisableBatching = true
	}
	ctx := context.Background()
	n, err := cl.partitions(ctx, tn.String())
	if err != nil {
		return nil, err
	}
	p := &Producer{cl: cl, opts: opts, topic: tn.String()}
	topics := []string{tn.String()}
	if n > 0 {
		topics = topics[:0]
		for i := range n {
			topics = append(topics, tn.Partition(i).String())
		}
	}
	for i, t := range topics {
		part := int32(-1)
		if n > 0 {
			part = int32(i)
		}
		pp, err := newPartitionProducer(ctx, p, t, part)
		if err != nil {
			p.Close()
			return nil, err
		}
		p.parts = append(p.parts, pp)
	}
	if err := cl.track(p); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Topic returns the producer's topic.
func (p *Producer) Topic() string { return p.topic }

// Name returns the (first partition's) producer name.
func (p *Producer) Name() string {
	pp := p.parts[0]
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return pp.name
}

// LastSequenceID returns the highest sequence id with a receipt (-1: none).
func (p *Producer) LastSequenceID() int64 {
	last := int64(-1)
	for _, pp := range p.parts {
		last = max(last, pp.lastAcked.Load())
	}
	return last
}

func javaStringHash(s string) uint32 {
	var h uint32
	for i := 0; i < len(s); i++ {
		h = 31*h + uint32(s[i])
	}
	return h
}

func (p *Producer) pick(msg *ProducerMessage) *partitionProducer {
	n := len(p.parts)
	if n == 1 {
		return p.parts[0]
	}
	if msg.Key != "" {
		return p.parts[int(javaStringHash(msg.Key)&0x7fffffff)%n]
	}
	if p.opts.DisableBatching {
		return p.parts[int(p.rr.Add(1)%uint64(n))]
	}
	now := time.Now().UnixNano()
	if last := p.lastSwitch.Load(); now-last > int64(p.opts.BatchingMaxPublishDelay) && p.lastSwitch.CompareAndSwap(last, now) {
		p.rr.Add(1)
	}
	return p.parts[int(p.rr.Load()%uint64(n))]
}

// Send sends msg and waits for its receipt.
func (p *Producer) Send(ctx context.Context, msg *ProducerMessage) (MessageID, error) {
	type result struct {
		id  MessageID
		err error
	}
	ch := make(chan result, 1)
	pp := p.pick(msg)
	pp.sendAsync(ctx, msg, func(id MessageID, _ *ProducerMessage, err error) { ch <- result{id, err} })
	pp.flush() // a synchronous send does not wait for the batching delay
	select {
	case r := <-ch:
		return r.id, r.err
	case <-ctx.Done():
		return MessageID{}, ctx.Err()
	}
}

// SendAsync queues msg; cb (if not nil) runs once with the message id or
// the error, on a client goroutine. It blocks while MaxPendingMessages
// sends await receipts, until ctx ends (cb then gets ctx's error).
func (p *Producer) SendAsync(ctx context.Context, msg *ProducerMessage, cb func(MessageID, *ProducerMessage, error)) {
	if cb == nil {
		cb = func(MessageID, *ProducerMessage, error) {}
	}
	p.pick(msg).sendAsync(ctx, msg, cb)
}

// Flush sends the batched messages and waits for every pending receipt.
func (p *Producer) Flush() error { return p.FlushWithCtx(context.Background()) }

// FlushWithCtx is Flush bounded by ctx.
func (p *Producer) FlushWithCtx(ctx context.Context) error {
	for _, pp := range p.parts {
		if err := pp.waitFlushed(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Close flushes (bounded by SendTimeout), closes the producer on the
// broker and fails whatever is still pending with ErrClosed.
func (p *Producer) Close() {
	p.closeOnce.Do(func() {
		p.cl.untrack(p)
		for _, pp := range p.parts {
			pp.close()
		}
	})
}

// pendingMsg is one message accepted by SendAsync.
type pendingMsg struct {
	msg     *ProducerMessage
	payload []byte
	seq     uint64
	cb      func(MessageID, *ProducerMessage, error)
}

// pendingSend is one SEND frame awaiting its receipt.
type pendingSend struct {
	seq, highest uint64
	frame        []byte
	msgs         []*pendingMsg // empty for a chunk before the last
	created      time.Time
	done         chan struct{}
}

type partitionProducer struct {
	p         *Producer
	cl        *Client
	topic     string
	partition int32
	id        uint64
	sem       chan struct{}
	lastAcked atomic.Int64
	stop      chan struct{}
	stopped   chan struct{}

	mu         sync.Mutex // guards the fields below
	cnx        *conn
	name       string
	epoch      uint64
	nextSeq    uint64
	closed     bool
	batch      []*pendingMsg
	batchBytes int
	pending    []*pendingSend
}

func newPartitionProducer(ctx context.Context, p *Producer, topic string, partition int32) (*partitionProducer, error) {
	pp := &partitionProducer{p: p, cl: p.cl, topic: topic, partition: partition, id: p.cl.id(),
		sem: make(chan struct{}, p.opts.MaxPendingMessages), name: p.opts.Name,
		stop: make(chan struct{}), stopped: make(chan struct{})}
	pp.lastAcked.Store(-1)
	var c *conn
	var lastSeq int64
	err := pp.cl.retry(ctx, func() error {
		var err error
		c, lastSeq, err = pp.connect(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pulsarclient: create producer on %s: %w", topic, err)
	}
	if lastSeq >= 0 {
		pp.nextSeq = uint64(lastSeq) + 1
		pp.lastAcked.Store(lastSeq)
	}
	pp.mu.Lock()
	pp.cnx = c
	pp.mu.Unlock()
	select {
	case <-c.done:
		go pp.connectionClosed(c)
	default:
	}
	go pp.run()
	return pp, nil
}

// connect looks the topic up and creates the producer there, registering
// pp on the connection.
func (pp *partitionProducer) connect(ctx context.Context) (*conn, int64, error) {
	c, err := pp.cl.lookup(ctx, pp.topic)
	if err != nil {
		return nil, 0, err
	}
	pp.mu.Lock()
	name, epoch := pp.name, pp.epoch
	pp.epoch++
	pp.mu.Unlock()
	rid := pp.cl.id()
	cp := &pb.CommandProducer{Topic: proto.String(pp.topic), ProducerId: proto.Uint64(pp.id), RequestId: proto.Uint64(rid),
		Epoch: proto.Uint64(epoch), UserProvidedProducerName: proto.Bool(pp.p.opts.Name != "")}
	if name != "" {
		cp.ProducerName = proto.String(name)
	}
	for k, v := range pp.p.opts.Properties {
		cp.Metadata = append(cp.Metadata, &pb.KeyValue{Key: proto.String(k), Value: proto.String(v)})
	}
	if s := pp.p.opts.Schema; s != nil {
		cp.Schema = s.pb()
	}
	if !c.addProducer(pp.id, pp) {
		return nil, 0, ErrConnectionClosed
	}
	resp, err := c.request(ctx, rid, &pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: cp})
	if err != nil {
		c.removeProducer(pp.id)
		var se *ServerError
		if errors.As(err, &se) && se.Code == pb.ServerError_ProducerBusy && name != "" && pp.p.opts.Name == "" {
			err = fmt.Errorf("%w (reconnecting)", ErrConnectionClosed) // the old instance is still being removed
		}
		return nil, 0, err
	}
	ps := resp.GetProducerSuccess()
	pp.mu.Lock()
	pp.name = ps.GetProducerName()
	pp.mu.Unlock()
	last := int64(-1)
	if ps.LastSequenceId != nil {
		last = ps.GetLastSequenceId()
	}
	return c, last, nil
}

func (pp *partitionProducer) maxMessageSize() int {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.cnx != nil {
		return pp.cnx.maxMsg
	}
	return pulsarproto.DefaultMaxMessageSize
}

func (pp *partitionProducer) sendAsync(ctx context.Context, msg *ProducerMessage, cb func(MessageID, *ProducerMessage, error)) {
	payload := msg.Payload
	if pp.p.opts.Schema != nil && pp.p.opts.Schema.typ == pb.Schema_String && msg.Value != nil {
		s, ok := msg.Value.(string)
		if !ok {
			cb(MessageID{}, msg, fmt.Errorf("pulsarclient: string schema: Value is %T, not a string", msg.Value))
			return
		}
		payload = []byte(s)
	}
	if !pp.p.opts.EnableChunking && len(payload) > pp.maxMessageSize() {
		cb(MessageID{}, msg, fmt.Errorf("%w: %d bytes, limit %d", ErrMessageTooLarge, len(payload), pp.maxMessageSize()))
		return
	}
	select {
	case pp.sem <- struct{}{}:
	case <-ctx.Done():
		cb(MessageID{}, msg, ctx.Err())
		return
	case <-pp.stop:
		cb(MessageID{}, msg, ErrClosed)
		return
	}
	if err := pp.cl.mem.acquire(ctx, int64(len(payload)), pp.stop); err != nil {
		<-pp.sem
		cb(MessageID{}, msg, err)
		return
	}
	pm := &pendingMsg{msg: msg, payload: payload, cb: cb}
	pp.mu.Lock()
	if pp.closed {
		pp.mu.Unlock()
		pp.done(pm)
		cb(MessageID{}, msg, ErrClosed)
		return
	}
	if msg.SequenceID != nil {
		pm.seq = uint64(*msg.SequenceID)
		pp.nextSeq = max(pp.nextSeq, pm.seq+1)
	} else {
		pm.seq = pp.nextSeq
		pp.nextSeq++
	}
	if pp.p.opts.DisableBatching {
		pp.sendOneLocked(pm)
		pp.mu.Unlock()
		return
	}
	pp.batch = append(pp.batch, pm)
	pp.batchBytes += len(payload)
	if uint(len(pp.batch)) >= pp.p.opts.BatchingMaxMessages || uint(pp.batchBytes) >= pp.p.opts.BatchingMaxSize {
		pp.flushBatchLocked()
	}
	pp.mu.Unlock()
}

func (pp *partitionProducer) flush() {
	pp.mu.Lock()
	pp.flushBatchLocked()
	pp.mu.Unlock()
}

func (pp *partitionProducer) baseMetadata(seq uint64) *pb.MessageMetadata {
	return &pb.MessageMetadata{ProducerName: proto.String(pp.name), SequenceId: proto.Uint64(seq),
		PublishTime: proto.Uint64(uint64(time.Now().UnixMilli()))}
}

func kvs(m map[string]string) []*pb.KeyValue {
	out := make([]*pb.KeyValue, 0, len(m))
	for k, v := range m {
		out = append(out, &pb.KeyValue{Key: proto.String(k), Value: proto.String(v)})
	}
	return out
}

// sendOneLocked sends pm in its own entry (chunked when it is too large).
func (pp *partitionProducer) sendOneLocked(pm *pendingMsg) {
	md := pp.baseMetadata(pm.seq)
	md.Properties = kvs(pm.msg.Properties)
	if pm.msg.Key != "" {
		md.PartitionKey = proto.String(pm.msg.Key)
	}
	if !pm.msg.EventTime.IsZero() {
		md.EventTime = proto.Uint64(uint64(pm.msg.EventTime.UnixMilli()))
	}
	payload, err := pp.compressLocked(md, pm.payload)
	if err != nil {
		pp.done(pm)
		go pm.cb(MessageID{}, pm.msg, err) // not under pp.mu
		return
	}
	maxMsg := pulsarproto.DefaultMaxMessageSize
	if pp.cnx != nil {
		maxMsg = pp.cnx.maxMsg
	}
	chunkSize := maxMsg - 16<<10
	if maxMsg <= 32<<10 {
		chunkSize = maxMsg / 2
	}
	if !pp.p.opts.EnableChunking || len(payload) <= chunkSize {
		pp.queueLocked(md, payload, pm.seq, pm.seq, 0, []*pendingMsg{pm}, false)
		return
	}
	var u [16]byte
	rand.Read(u[:])
	uuid := pp.name + "-" + hex.EncodeToString(u[:])
	n := (len(payload) + chunkSize - 1) / chunkSize
	for i := range n {
		part := payload[i*chunkSize : min(len(payload), (i+1)*chunkSize)]
		cmd := proto.Clone(md).(*pb.MessageMetadata)
		cmd.Uuid = proto.String(uuid)
		cmd.ChunkId = proto.Int32(int32(i))
		cmd.NumChunksFromMsg = proto.Int32(int32(n))
		cmd.TotalChunkMsgSize = proto.Int32(int32(len(payload)))
		var msgs []*pendingMsg
		if i == n-1 {
			msgs = []*pendingMsg{pm}
		}
		pp.queueLocked(cmd, part, pm.seq, pm.seq, 0, msgs, true)
	}
}

func (pp *partitionProducer) compressLocked(md *pb.MessageMetadata, payload []byte) ([]byte, error) {
	// uncompressed_size is always set, as Pulsar clients do (some read a
	// reassembled chunked message only when it is present).
	md.UncompressedSize = proto.Uint32(uint32(len(payload)))
	c := pp.p.opts.CompressionType.pb()
	if c == pb.CompressionType_NONE {
		return payload, nil
	}
	out, err := compress(c, payload)
	if err != nil {
		return nil, err
	}
	md.Compression = c.Enum()
	return out, nil
}

// flushBatchLocked sends the open batch as one entry.
func (pp *partitionProducer) flushBatchLocked() {
	if len(pp.batch) == 0 {
		return
	}
	msgs := pp.batch
	pp.batch, pp.batchBytes = nil, 0
	size := 0
	for _, pm := range msgs {
		size += 32 + len(pm.payload) + len(pm.msg.Key)
	}
	body := make([]byte, 0, size)
	var smm []byte
	for _, pm := range msgs {
		smm = appendSingleMetadata(smm[:0], pm)
		body = pulsarproto.AppendSingleMessage(body, smm, pm.payload)
	}
	first, last := msgs[0].seq, msgs[len(msgs)-1].seq
	md := pp.baseMetadata(first)
	md.NumMessagesInBatch = proto.Int32(int32(len(msgs)))
	if len(msgs) > 1 {
		md.HighestSequenceId = proto.Uint64(last)
	}
	payload, err := pp.compressLocked(md, body)
	if err != nil {
		for _, pm := range msgs {
			pp.done(pm)
			go pm.cb(MessageID{}, pm.msg, err) // not under pp.mu
		}
		return
	}
	pp.queueLocked(md, payload, first, last, int32(len(msgs)), msgs, false)
}

// queueLocked frames one SEND, adds it to the pending queue and writes it
// when connected (otherwise the reconnect resends it).
func (pp *partitionProducer) queueLocked(md *pb.MessageMetadata, payload []byte, seq, highest uint64, num int32, msgs []*pendingMsg, chunk bool) {
	mdb, _ := proto.Marshal(md)
	entry := pulsarproto.AppendEntry(make([]byte, 0, 16+len(mdb)+len(payload)), mdb, payload)
	h := pulsarproto.SendHeader{ProducerID: pp.id, SequenceID: seq, NumMessages: num, IsChunk: chunk}
	if highest != seq {
		h.HighestSequenceID = highest
	}
	frame := pulsarproto.AppendSend(make([]byte, 0, 64+len(entry)), &h, entry)
	ps := &pendingSend{seq: seq, highest: highest, frame: frame, msgs: msgs, created: time.Now(), done: make(chan struct{})}
	pp.pending = append(pp.pending, ps)
	if pp.cnx != nil {
		pp.cnx.send(frame)
	}
}

// done returns pm's pending slot and memory.
func (pp *partitionProducer) done(pm *pendingMsg) {
	<-pp.sem
	pp.cl.mem.release(int64(len(pm.payload)))
}

// complete answers the messages of ps (under no lock).
func (pp *partitionProducer) complete(ps *pendingSend, id MessageID, err error) {
	var bytes int64
	for _, pm := range ps.msgs {
		bytes += int64(len(pm.payload))
	}
	pp.cl.mem.release(bytes)
	for i, pm := range ps.msgs {
		<-pp.sem
		mid := id
		mid.Partition = pp.partition
		if len(ps.msgs) > 1 || ps.highest != ps.seq || !pp.p.opts.DisableBatching {
			mid.BatchIndex, mid.BatchSize = int32(i), int32(len(ps.msgs))
		}
		pm.cb(mid, pm.msg, err)
	}
	close(ps.done)
}

func (pp *partitionProducer) receipt(seq, highest uint64, id MessageID) {
	pp.mu.Lock()
	var done []*pendingSend
	for len(pp.pending) > 0 && pp.pending[0].seq < seq {
		done = append(done, pp.pending[0])
		pp.pending = pp.pending[1:]
	}
	if len(pp.pending) > 0 && pp.pending[0].seq == seq {
		done = append(done, pp.pending[0])
		pp.pending = pp.pending[1:]
	}
	pp.mu.Unlock()
	for _, ps := range done {
		pp.lastAcked.Store(int64(ps.highest))
		pp.complete(ps, id, nil)
	}
}

func (pp *partitionProducer) sendError(seq uint64, err error) {
	pp.mu.Lock()
	var failed *pendingSend
	for i, ps := range pp.pending {
		if ps.seq == seq {
			failed = ps
			pp.pending = append(pp.pending[:i:i], pp.pending[i+1:]...)
			break
		}
	}
	pp.mu.Unlock()
	if failed != nil {
		pp.complete(failed, MessageID{}, err)
	}
}

func (pp *partitionProducer) connectionClosed(c *conn) {
	pp.mu.Lock()
	if pp.closed || pp.cnx != c {
		pp.mu.Unlock()
		return
	}
	pp.cnx = nil
	pp.mu.Unlock()
	c.removeProducer(pp.id)
	backoff := 100 * time.Millisecond
	for {
		select {
		case <-pp.stop:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), pp.cl.opts.OperationTimeout)
		nc, _, err := pp.connect(ctx)
		cancel()
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return
			}
			continue
		}
		pp.mu.Lock()
		if pp.closed {
			pp.mu.Unlock()
			nc.removeProducer(pp.id)
			return
		}
		pp.cnx = nc
		for _, ps := range pp.pending {
			nc.send(ps.frame)
		}
		pp.mu.Unlock()
		select {
		case <-nc.done:
			go pp.connectionClosed(nc)
		default:
		}
		return
	}
}

// run flushes batches every batching delay and fails sends past their
// timeout.
func (pp *partitionProducer) run() {
	defer close(pp.stopped)
	every := pp.p.opts.BatchingMaxPublishDelay
	if pp.p.opts.DisableBatching {
		every = 100 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-pp.stop:
			return
		case <-t.C:
		}
		pp.mu.Lock()
		pp.flushBatchLocked()
		var expired []*pendingSend
		if to := pp.p.opts.SendTimeout; to > 0 {
			cut := time.Now().Add(-to)
			for len(pp.pending) > 0 && pp.pending[0].created.Before(cut) {
				expired = append(expired, pp.pending[0])
				pp.pending = pp.pending[1:]
			}
		}
		pp.mu.Unlock()
		for _, ps := range expired {
			pp.complete(ps, MessageID{}, ErrSendTimeout)
		}
	}
}

// waitFlushed sends the batch and waits until everything pending now is
// answered.
func (pp *partitionProducer) waitFlushed(ctx context.Context) error {
	pp.mu.Lock()
	pp.flushBatchLocked()
	var last *pendingSend
	if n := len(pp.pending); n > 0 {
		last = pp.pending[n-1]
	}
	pp.mu.Unlock()
	if last == nil {
		return nil
	}
	select {
	case <-last.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (pp *partitionProducer) close() {
	flushTO := pp.p.opts.SendTimeout
	if flushTO <= 0 {
		flushTO = pp.cl.opts.OperationTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), flushTO)
	pp.waitFlushed(ctx)
	cancel()
	pp.mu.Lock()
	if pp.closed {
		pp.mu.Unlock()
		return
	}
	pp.closed = true
	c := pp.cnx
	pending := pp.pending
	pp.pending = nil
	pp.mu.Unlock()
	close(pp.stop)
	<-pp.stopped
	if c != nil {
		rid := pp.cl.id()
		c.request(context.Background(), rid, &pb.BaseCommand{Type: pb.BaseCommand_CLOSE_PRODUCER.Enum(),
			CloseProducer: &pb.CommandCloseProducer{ProducerId: proto.Uint64(pp.id), RequestId: proto.Uint64(rid)}})
		c.removeProducer(pp.id)
	}
	for _, ps := range pending {
		pp.complete(ps, MessageID{}, ErrClosed)
	}
}

// appendSingleMetadata encodes pm's SingleMessageMetadata by hand (the hot
// path of batching): properties (1), partition_key (2), payload_size (3),
// event_time (5), sequence_id (8).
func appendSingleMetadata(dst []byte, pm *pendingMsg) []byte {
	for k, v := range pm.msg.Properties {
		kvLen := protowire.SizeTag(1) + protowire.SizeBytes(len(k)) + protowire.SizeTag(2) + protowire.SizeBytes(len(v))
		dst = protowire.AppendTag(dst, 1, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(kvLen))
		dst = protowire.AppendTag(dst, 1, protowire.BytesType)
		dst = protowire.AppendString(dst, k)
		dst = protowire.AppendTag(dst, 2, protowire.BytesType)
		dst = protowire.AppendString(dst, v)
	}
	if pm.msg.Key != "" {
		dst = protowire.AppendTag(dst, 2, protowire.BytesType)
		dst = protowire.AppendString(dst, pm.msg.Key)
	}
	dst = protowire.AppendTag(dst, 3, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(int64(int32(len(pm.payload)))))
	if !pm.msg.EventTime.IsZero() {
		dst = protowire.AppendTag(dst, 5, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(pm.msg.EventTime.UnixMilli()))
	}
	dst = protowire.AppendTag(dst, 8, protowire.VarintType)
	return protowire.AppendVarint(dst, pm.seq)
}
