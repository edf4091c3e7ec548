package pulsarclient

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// batchTracker counts the unacknowledged messages of one batch entry.
type batchTracker struct {
	mu    sync.Mutex
	acked []bool
	left  int
}

// ack marks index i; it reports true when the whole entry is acked (once).
func (b *batchTracker) ack(i int32) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i < 0 || int(i) >= len(b.acked) || b.acked[i] {
		return false
	}
	b.acked[i] = true
	b.left--
	return b.left == 0
}

// chunkBuf collects the chunks of one chunked message.
type chunkBuf struct {
	data []byte
	ids  []MessageID
	next int32
}

// queued is a received message with the permits it used.
type queued struct {
	m      *Message
	weight int
}

// partitionConsumer is the consumer of one topic or partition.
type partitionConsumer struct {
	c         *Consumer
	cl        *Client
	topic     string
	partition int32
	id        uint64
	signal    chan struct{}
	closeOnce sync.Once
	stop      chan struct{}
	done      chan struct{}

	mu      sync.Mutex // guards the fields below
	cnx     *conn
	closed  bool
	queue   []queued
	free    int // permits used by messages already handed out or dropped
	started bool
	last    *MessageID // last message handed out (readers restart after it)
	acks    []*pb.MessageIdData
	nacks   map[MessageID]time.Time // entry -> redeliver at
	chunks  map[string]*chunkBuf
}

func newPartitionConsumer(ctx context.Context, c *Consumer, topic string) (*partitionConsumer, error) {
	part := int32(-1)
	if tn, err := pulsarproto.ParseTopicName(topic); err == nil {
		part = int32(tn.PartitionIndex)
		topic = tn.String()
	} else {
		return nil, fmt.Errorf("pulsarclient: topic %q: %w", topic, err)
	}
	pc := &partitionConsumer{c: c, cl: c.cl, topic: topic, partition: part, id: c.cl.id(),
		signal: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		nacks: map[MessageID]time.Time{}, chunks: map[string]*chunkBuf{}}
	var cnx *conn
	err := pc.cl.retry(ctx, func() error {
		var err error
		cnx, err = pc.subscribe(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pulsarclient: subscribe %s to %s: %w", c.opts.SubscriptionName, topic, err)
	}
	pc.mu.Lock()
	pc.cnx = cnx
	pc.mu.Unlock()
	pc.flow(cnx, c.opts.ReceiverQueueSize)
	select {
	case <-cnx.done:
		go pc.connectionClosed(cnx)
	default:
	}
	go pc.run()
	return pc, nil
}

// subscribe looks the topic up and sends SUBSCRIBE.
func (pc *partitionConsumer) subscribe(ctx context.Context) (*conn, error) {
	cnx, err := pc.cl.lookup(ctx, pc.topic)
	if err != nil {
		return nil, err
	}
	o := &pc.c.opts
	rid := pc.cl.id()
	cs := &pb.CommandSubscribe{Topic: proto.String(pc.topic), Subscription: proto.String(o.SubscriptionName),
		SubType: o.Type.pb().Enum(), ConsumerId: proto.Uint64(pc.id), RequestId: proto.Uint64(rid),
		Durable: proto.Bool(!o.nonDurable), ReadCompacted: proto.Bool(o.ReadCompacted)}
	if o.Name != "" {
		cs.ConsumerName = proto.String(o.Name)
	}
	if o.SubscriptionInitialPosition == SubscriptionPositionEarliest {
		cs.InitialPosition = pb.CommandSubscribe_Earliest.Enum()
	} else {
		cs.InitialPosition = pb.CommandSubscribe_Latest.Enum()
	}
	cs.Metadata = kvs(o.Properties)
	if o.Type == KeyShared {
		cs.KeySharedMeta = &pb.KeySharedMeta{KeySharedMode: pb.KeySharedMode_AUTO_SPLIT.Enum()}
	}
	if o.nonDurable {
		start := *o.startID
		pc.mu.Lock()
		if pc.last != nil {
			start = *pc.last
		}
		pc.mu.Unlock()
		cs.StartMessageId = &pb.MessageIdData{LedgerId: proto.Uint64(uint64(start.Ledger)), EntryId: proto.Uint64(uint64(start.Entry))}
	}
	if !cnx.addConsumer(pc.id, pc) {
		return nil, ErrConnectionClosed
	}
	if _, err := cnx.request(ctx, rid, &pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: cs}); err != nil {
		cnx.removeConsumer(pc.id)
		var se *ServerError
		if errors.As(err, &se) && se.Code == pb.ServerError_ConsumerBusy && pc.started {
			err = fmt.Errorf("%w (%v)", ErrConnectionClosed, err) // our old instance is still attached
		}
		return nil, err
	}
	pc.started = true
	return cnx, nil
}

func (pc *partitionConsumer) flow(cnx *conn, n int) {
	if n <= 0 {
		return
	}
	cnx.sendCmd(&pb.BaseCommand{Type: pb.BaseCommand_FLOW.Enum(), Flow: &pb.CommandFlow{
		ConsumerId: proto.Uint64(pc.id), MessagePermits: proto.Uint32(uint32(n))}})
}

// message decodes one MESSAGE (on the connection's reader goroutine).
func (pc *partitionConsumer) message(cmd *pb.CommandMessage, payload []byte) {
	msgs, weight, err := pc.decode(cmd, payload)
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.closed {
		return
	}
	if err != nil {
		// A corrupt entry is acknowledged away as Pulsar clients do
		// (ValidationError); it can never be delivered.
		pc.free += weight
		pc.ackLocked(cmd.GetMessageId(), false)
		return
	}
	if len(msgs) == 0 {
		pc.free += weight
		return
	}
	for i, m := range msgs {
		w := 0
		if i == 0 {
			w = weight
		}
		pc.queue = append(pc.queue, queued{m: m, weight: w})
	}
	select {
	case pc.signal <- struct{}{}:
	default:
	}
}

func (pc *partitionConsumer) decode(cmd *pb.CommandMessage, payload []byte) (_ []*Message, weight int, _ error) {
	weight = 1
	e, err := pulsarproto.VerifyEntry(payload)
	if err != nil {
		return nil, weight, err
	}
	var md pb.MessageMetadata
	if err := proto.Unmarshal(e.Metadata, &md); err != nil {
		return nil, weight, err
	}
	mid := cmd.GetMessageId()
	base := MessageID{Ledger: int64(mid.GetLedgerId()), Entry: int64(mid.GetEntryId()), BatchIndex: -1, Partition: pc.partition}
	if md.NumMessagesInBatch != nil {
		weight = max(1, int(md.GetNumMessagesInBatch()))
	}
	body := e.Payload
	if md.GetNumChunksFromMsg() > 1 {
		pc.mu.Lock()
		body, base.BatchIndex = pc.chunkLocked(&md, base, body), -1
		var ids []MessageID
		if body != nil {
			ids = pc.chunks[md.GetUuid()].ids
			delete(pc.chunks, md.GetUuid())
		}
		pc.mu.Unlock()
		if body == nil {
			return nil, weight, nil // more chunks to come (permits free at once)
		}
		body, err = decompress(md.GetCompression(), body, int(md.GetUncompressedSize()))
		if err != nil {
			return nil, weight, err
		}
		m := pc.newMessage(&md, nil, base, body, cmd.GetRedeliveryCount())
		m.chunkIDs = ids
		return []*Message{m}, weight, nil
	}
	if md.GetCompression() != pb.CompressionType_NONE {
		if body, err = decompress(md.GetCompression(), body, int(md.GetUncompressedSize())); err != nil {
			return nil, weight, err
		}
	} else {
		body = append([]byte(nil), body...)
	}
	if md.NumMessagesInBatch == nil {
		out := []*Message{pc.newMessage(&md, nil, base, body, cmd.GetRedeliveryCount())}
		if pc.c.opts.nonDurable {
			out = pc.skipBeforeStart(out)
		}
		return out, weight, nil
	}
	n := int(md.GetNumMessagesInBatch())
	tr := &batchTracker{acked: make([]bool, n), left: n}
	ackSet := cmd.GetAckSet()
	var out []*Message
	for i := 0; i < n; i++ {
		if len(body) < 4 {
			return nil, weight, fmt.Errorf("batch message %d: %w", i, pulsarproto.ErrTruncated)
		}
		sz := int(binary.BigEndian.Uint32(body))
		if sz > len(body)-4 {
			return nil, weight, fmt.Errorf("batch message %d: %w", i, pulsarproto.ErrTruncated)
		}
		var smm pb.SingleMessageMetadata
		if err := proto.Unmarshal(body[4:4+sz], &smm); err != nil {
			return nil, weight, err
		}
		body = body[4+sz:]
		ps := int(smm.GetPayloadSize())
		if ps < 0 || ps > len(body) {
			return nil, weight, fmt.Errorf("batch message %d: %w", i, pulsarproto.ErrTruncated)
		}
		pl := body[:ps:ps]
		body = body[ps:]
		if len(ackSet) > 0 && (i/64 >= len(ackSet) || ackSet[i/64]&(1<<(i%64)) == 0) {
			tr.ack(int32(i)) // already acknowledged: not delivered again
			continue
		}
		id := base
		id.BatchIndex, id.BatchSize = int32(i), int32(n)
		m := pc.newMessage(&md, &smm, id, pl, cmd.GetRedeliveryCount())
		m.tracker = tr
		out = append(out, m)
	}
	if pc.c.opts.nonDurable {
		out = pc.skipBeforeStart(out)
	}
	return out, weight, nil
}

// skipBeforeStart drops what a reader must not see: the broker starts a
// non-durable subscription at the start entry itself, so messages before
// the start id, and the start itself unless inclusive, are discarded here
// (after a reconnect the start is the last message handed out).
func (pc *partitionConsumer) skipBeforeStart(msgs []*Message) []*Message {
	s, inclusive := *pc.c.opts.startID, pc.c.opts.inclusive
	pc.mu.Lock()
	if pc.last != nil {
		s, inclusive = *pc.last, false
	}
	pc.mu.Unlock()
	if s == EarliestMessageID() || s == LatestMessageID() {
		return msgs
	}
	out := msgs[:0]
	for _, m := range msgs {
		c := compareIDs(m.id, s)
		if c < 0 || (c == 0 && !inclusive) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// compareIDs orders ids by ledger, entry and batch index (a non-batched
// id, index -1, sorts before the messages of its entry).
func compareIDs(a, b MessageID) int {
	switch {
	case a.Ledger != b.Ledger:
		return cmpInt(a.Ledger, b.Ledger)
	case a.Entry != b.Entry:
		return cmpInt(a.Entry, b.Entry)
	}
	return cmpInt(int64(a.BatchIndex), int64(b.BatchIndex))
}

func cmpInt(a, b int64) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

// chunkLocked adds a chunk; it returns the whole payload after the last.
func (pc *partitionConsumer) chunkLocked(md *pb.MessageMetadata, id MessageID, part []byte) []byte {
	u := md.GetUuid()
	cb := pc.chunks[u]
	if md.GetChunkId() == 0 {
		cb = &chunkBuf{data: make([]byte, 0, md.GetTotalChunkMsgSize())}
		pc.chunks[u] = cb
	}
	if cb == nil || md.GetChunkId() != cb.next {
		// A chunk out of order (its first chunk was lost to a
		// reconnect): drop the message; the acks below release it.
		delete(pc.chunks, u)
		pc.ackLocked(id.data(), false)
		return nil
	}
	cb.data = append(cb.data, part...)
	cb.ids = append(cb.ids, id)
	cb.next++
	if cb.next == md.GetNumChunksFromMsg() {
		return cb.data
	}
	return nil
}

func (pc *partitionConsumer) newMessage(md *pb.MessageMetadata, smm *pb.SingleMessageMetadata, id MessageID, payload []byte, redelivery uint32) *Message {
	m := &Message{topic: pc.topic, id: id, payload: payload, producerName: md.GetProducerName(),
		publishTime: time.UnixMilli(int64(md.GetPublishTime())), redelivery: redelivery,
		sequenceID: int64(md.GetSequenceId()), owner: pc}
	props, key, hasKey, et := md.Properties, md.GetPartitionKey(), md.PartitionKey != nil, md.GetEventTime()
	if smm != nil {
		props, key, hasKey, et = smm.Properties, smm.GetPartitionKey(), smm.PartitionKey != nil, smm.GetEventTime()
		m.sequenceID = int64(smm.GetSequenceId())
		if smm.SequenceId == nil {
			m.sequenceID = int64(md.GetSequenceId()) + int64(id.BatchIndex)
		}
	}
	m.key, m.hasKey = key, hasKey
	if et > 0 {
		m.eventTime = time.UnixMilli(int64(et))
	}
	if len(props) > 0 {
		m.props = make(map[string]string, len(props))
		for _, kv := range props {
			m.props[kv.GetKey()] = kv.GetValue()
		}
	}
	return m
}

// run hands queued messages to the consumer's channel, returns permits,
// sends grouped acks and due redeliveries.
func (pc *partitionConsumer) run() {
	defer close(pc.done)
	tick := time.NewTicker(ackFlushInterval)
	defer tick.Stop()
	half := max(1, pc.c.opts.ReceiverQueueSize/2)
	for {
		pc.mu.Lock()
		var next *queued
		if len(pc.queue) > 0 {
			q := pc.queue[0]
			pc.queue = pc.queue[1:]
			next = &q
		}
		var permits int
		var cnx *conn
		if pc.free >= half && pc.cnx != nil {
			permits, cnx = pc.free, pc.cnx
			pc.free = 0
		}
		pc.mu.Unlock()
		if cnx != nil {
			pc.flow(cnx, permits)
		}
		if next == nil {
			select {
			case <-pc.signal:
			case <-tick.C:
				pc.periodic()
			case <-pc.stop:
				return
			}
			continue
		}
		m := next.m
		if dlq := pc.c.opts.DLQ; dlq != nil && m.redelivery >= dlq.MaxDeliveries {
			pc.c.dlqSend(m)
			pc.release(next.weight)
			continue
		}
	deliver:
		for {
			select {
			case pc.c.ch <- ConsumerMessage{Consumer: pc.c, Message: m}:
				pc.mu.Lock()
				id := m.id
				pc.last = &id
				pc.mu.Unlock()
				pc.release(next.weight)
				break deliver
			case <-tick.C:
				pc.periodic()
			case <-pc.stop:
				return
			}
		}
	}
}

func (pc *partitionConsumer) release(w int) {
	pc.mu.Lock()
	pc.free += w
	pc.mu.Unlock()
}

// periodic sends grouped acks and due redeliveries.
func (pc *partitionConsumer) periodic() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.flushAcksLocked()
	if len(pc.nacks) == 0 || pc.cnx == nil {
		return
	}
	now := time.Now()
	var due []*pb.MessageIdData
	for id, at := range pc.nacks {
		if !at.After(now) {
			due = append(due, id.data())
			delete(pc.nacks, id)
		}
	}
	if len(due) == 0 {
		return
	}
	r := &pb.CommandRedeliverUnacknowledgedMessages{ConsumerId: proto.Uint64(pc.id)}
	if t := pc.c.opts.Type; t == Shared || t == KeyShared {
		r.MessageIds = due
	} else {
		// Exclusive and Failover redeliver everything unacknowledged, in
		// order: drop what is queued here (it comes again).
		for _, q := range pc.queue {
			pc.free += q.weight
		}
		pc.queue = nil
	}
	pc.cnx.sendCmd(&pb.BaseCommand{Type: pb.BaseCommand_REDELIVER_UNACKNOWLEDGED_MESSAGES.Enum(), RedeliverUnacknowledgedMessages: r})
}

func (pc *partitionConsumer) flushAcksLocked() {
	if len(pc.acks) == 0 || pc.cnx == nil {
		return
	}
	pc.cnx.sendCmd(&pb.BaseCommand{Type: pb.BaseCommand_ACK.Enum(), Ack: &pb.CommandAck{ConsumerId: proto.Uint64(pc.id),
		AckType: pb.CommandAck_Individual.Enum(), MessageId: pc.acks}})
	pc.acks = nil
}

// ackLocked queues (or, cumulative, sends) an ack of one entry.
func (pc *partitionConsumer) ackLocked(id *pb.MessageIdData, cumulative bool) {
	id = &pb.MessageIdData{LedgerId: id.LedgerId, EntryId: id.EntryId}
	if cumulative {
		pc.flushAcksLocked()
		if pc.cnx != nil {
			pc.cnx.sendCmd(&pb.BaseCommand{Type: pb.BaseCommand_ACK.Enum(), Ack: &pb.CommandAck{ConsumerId: proto.Uint64(pc.id),
				AckType: pb.CommandAck_Cumulative.Enum(), MessageId: []*pb.MessageIdData{id}}})
		}
		return
	}
	pc.acks = append(pc.acks, id)
	if len(pc.acks) >= maxAckGroup {
		pc.flushAcksLocked()
	}
}

func entryOf(id MessageID) MessageID {
	return MessageID{Ledger: id.Ledger, Entry: id.Entry, BatchIndex: -1, Partition: id.Partition}
}

func (pc *partitionConsumer) ack(m *Message) error {
	if m.tracker != nil && !m.tracker.ack(m.id.BatchIndex) {
		return nil // more of the batch unacknowledged
	}
	ids := m.chunkIDs
	if ids == nil {
		ids = []MessageID{m.id}
	}
	pc.mu.Lock()
	if pc.closed {
		pc.mu.Unlock()
		return ErrClosed
	}
	for _, id := range ids {
		delete(pc.nacks, entryOf(id))
		pc.ackLocked(id.data(), false)
	}
	if !pc.c.opts.AckWithResponse {
		pc.mu.Unlock()
		return nil
	}
	cnx, acks := pc.cnx, pc.acks
	pc.acks = nil
	pc.mu.Unlock()
	if cnx == nil {
		return ErrConnectionClosed
	}
	rid := pc.cl.id()
	_, err := cnx.request(context.Background(), rid, &pb.BaseCommand{Type: pb.BaseCommand_ACK.Enum(), Ack: &pb.CommandAck{
		ConsumerId: proto.Uint64(pc.id), AckType: pb.CommandAck_Individual.Enum(), MessageId: acks, RequestId: proto.Uint64(rid)}})
	return err
}

// ackCumulative acknowledges up to m; inside a batch not fully
// acknowledged that is up to the entry before (as Pulsar clients do
// without batch-index acks).
func (pc *partitionConsumer) ackCumulative(m *Message) error {
	id := m.id
	if m.tracker != nil && id.BatchIndex < id.BatchSize-1 {
		if id.Entry == 0 {
			return nil
		}
		id.Entry--
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.closed {
		return ErrClosed
	}
	pc.ackLocked(id.data(), true)
	return nil
}

func (pc *partitionConsumer) nack(m *Message) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	ids := m.chunkIDs
	if ids == nil {
		ids = []MessageID{m.id}
	}
	for _, id := range ids {
		pc.nacks[entryOf(id)] = time.Now().Add(pc.c.opts.NackRedeliveryDelay)
	}
}

func (pc *partitionConsumer) connectionClosed(c *conn) {
	pc.mu.Lock()
	if pc.closed || pc.cnx != c {
		pc.mu.Unlock()
		return
	}
	pc.cnx = nil
	pc.queue, pc.free, pc.acks = nil, 0, nil
	clear(pc.chunks)
	pc.mu.Unlock()
	c.removeConsumer(pc.id)
	backoff := 100 * time.Millisecond
	for {
		select {
		case <-pc.stop:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), pc.cl.opts.OperationTimeout)
		nc, err := pc.subscribe(ctx)
		cancel()
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return
			}
			continue
		}
		pc.mu.Lock()
		if pc.closed {
			pc.mu.Unlock()
			nc.removeConsumer(pc.id)
			return
		}
		pc.cnx = nc
		pc.mu.Unlock()
		pc.flow(nc, pc.c.opts.ReceiverQueueSize)
		select {
		case <-nc.done:
			go pc.connectionClosed(nc)
		default:
		}
		return
	}
}

func (pc *partitionConsumer) close() {
	pc.closeOnce.Do(func() { close(pc.stop) })
	<-pc.done // the pump may still ack (dead letters)
	pc.mu.Lock()
	pc.flushAcksLocked()
	pc.closed = true
	c := pc.cnx
	pc.mu.Unlock()
	if c != nil {
		rid := pc.cl.id()
		c.request(context.Background(), rid, &pb.BaseCommand{Type: pb.BaseCommand_CLOSE_CONSUMER.Enum(),
			CloseConsumer: &pb.CommandCloseConsumer{ConsumerId: proto.Uint64(pc.id), RequestId: proto.Uint64(rid)}})
		c.removeConsumer(pc.id)
	}
}
