package perf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// rawAckBatch is the most message ids one individual ACK carries (the
// client's grouping tracker flushes at 1000 too).
const rawAckBatch = 1000

// RawConsume is Consume with the raw client: for each topic (each
// partition of a partitioned one) NumConsumers consumers, each on its own
// connection and goroutine, subscribe, grant ReceiverQueueSize permits
// and top them up with a FLOW once half the queue was received, verify
// every entry's checksum, decode its metadata and walk every message of a
// batch, counting messages and payload bytes. End-to-end latency is
// receive time minus the entry's publish_time (ms), recorded once per
// entry weighted by its message count.
//
// Acks are per entry (an entry is acknowledged as a whole): cumulative
// sends one ACK for the latest entry, individual one ACK listing every
// entry received (at most rawAckBatch ids a frame), both whenever the
// socket's read buffer runs dry, so at most once per read burst; none
// never acks. Stop conditions and Ready are those of Consume. A checksum
// mismatch or an entry it cannot read (compressed, encrypted, malformed)
// is counted as an error and still acknowledged.
func RawConsume(ctx context.Context, cfg ConsumeConfig, ready chan<- struct{}) (Summary, error) {
	topics, err := prepare(ctx, &cfg, true)
	if err != nil {
		return Summary{}, err
	}
	stype, _ := ParseSubscriptionType(cfg.SubscriptionType)
	subType := pb.CommandSubscribe_SubType(stype) // same numbering as the wire enum
	pos := pb.CommandSubscribe_Latest
	if p, _ := ParsePosition(cfg.Position); p != 0 {
		pos = pb.CommandSubscribe_Earliest
	}
	ackMode, _ := ParseAckMode(cfg.AckMode)
	if ackMode == AckDefault {
		ackMode = AckCumulative
		if subType == pb.CommandSubscribe_Shared || subType == pb.CommandSubscribe_Key_Shared {
			ackMode = AckIndividual
		}
	}
	var consumers []*rawConsumer
	defer func() {
		for _, c := range consumers {
			c.conn.close()
		}
	}()
	for _, topic := range topics {
		for range cfg.NumConsumers {
			c, err := newRawConsumer(ctx, &cfg, topic, subType, pos, ackMode, len(consumers))
			if err != nil {
				return Summary{}, err
			}
			consumers = append(consumers, c)
		}
	}
	if ready != nil {
		close(ready)
	}

	sum := runConsumers(ctx, &cfg, len(consumers), func(runCtx context.Context, i int, sh *Shard, p *consumeProgress) {
		consumers[i].run(runCtx, sh, p)
	})
	var firstErr error
	for _, c := range consumers {
		if c.err != nil {
			firstErr = c.err
			break
		}
	}
	return finishRun(sum, firstErr, "raw consume")
}

// rawConsumer is one consumer on its own connection, run by one
// goroutine that reads, acknowledges and grants permits.
type rawConsumer struct {
	cfg     *ConsumeConfig
	conn    *rawConn
	id      uint64
	topic   string
	ackMode AckMode
	queue   int

	out      []byte // frames to write, flushed before blocking on a read
	scratch  []byte
	permits  int      // received since the last FLOW
	ids      []msgID  // individual acks pending
	cum      [1]msgID // cumulative ack pending when haveCum
	haveCum  bool
	walker   entryWalker
	deadMu   sync.Mutex // orders the stop hook's deadline against closing
	stopping bool
	err      error
}

func newRawConsumer(ctx context.Context, cfg *ConsumeConfig, topic string, subType pb.CommandSubscribe_SubType,
	pos pb.CommandSubscribe_InitialPosition, ackMode AckMode, index int) (*rawConsumer, error) {
	conn, err := dialRaw(ctx, cfg.ServiceURL, rawConsumerReadBuffer)
	if err != nil {
		return nil, err
	}
	if err := conn.lookup(ctx, topic); err != nil {
		conn.close()
		return nil, err
	}
	const id = 1
	rid := conn.reqID()
	_, err = conn.request(ctx, &pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{
		Topic: proto.String(topic), Subscription: proto.String(cfg.Subscription), SubType: subType.Enum(),
		ConsumerId: proto.Uint64(id), RequestId: proto.Uint64(rid),
		ConsumerName:    proto.String("perf-raw-" + strconv.Itoa(index)),
		Durable:         proto.Bool(true),
		InitialPosition: pos.Enum(),
	}}, rid)
	if err != nil {
		conn.close()
		return nil, fmt.Errorf("perf: raw: subscribe to %s: %w", topic, err)
	}
	c := &rawConsumer{cfg: cfg, conn: conn, id: id, topic: topic, ackMode: ackMode, queue: cfg.ReceiverQueueSize}
	if ackMode == AckIndividual {
		c.ids = make([]msgID, 0, rawAckBatch)
	}
	return c, nil
}

// run consumes until runCtx ends, then acknowledges what it received,
// closes the consumer on the broker and the connection.
func (c *rawConsumer) run(runCtx context.Context, sh *Shard, p *consumeProgress) {
	unhook := context.AfterFunc(runCtx, func() {
		c.deadMu.Lock()
		if !c.stopping {
			c.conn.nc.SetReadDeadline(time.Now())
		}
		c.deadMu.Unlock()
	})
	defer unhook()
	err := c.loop(runCtx, sh, p)
	var ne net.Error
	if err != nil && !(runCtx.Err() != nil && errors.As(err, &ne) && ne.Timeout()) {
		c.err = fmt.Errorf("perf: raw: consumer on %s: %w", c.topic, err)
		return
	}
	c.deadMu.Lock()
	c.stopping = true
	c.deadMu.Unlock()
	// Acks before the close: the broker handles a connection's commands in
	// order, so they are applied before the consumer goes.
	c.conn.nc.SetDeadline(time.Now().Add(rawSetupTimeout))
	c.appendAcks()
	if len(c.out) > 0 {
		if _, err := c.conn.nc.Write(c.out); err != nil {
			c.err = fmt.Errorf("perf: raw: consumer on %s: write acks: %w", c.topic, err)
			return
		}
	}
	rid := c.conn.reqID()
	closeCmd := &pb.BaseCommand{Type: pb.BaseCommand_CLOSE_CONSUMER.Enum(), CloseConsumer: &pb.CommandCloseConsumer{
		ConsumerId: proto.Uint64(c.id), RequestId: proto.Uint64(rid),
	}}
	if c.conn.rd.broken {
		// A frame bigger than the read buffer was cut by the stop deadline:
		// the answer can no longer be found in the stream.
		c.conn.writeCmd(closeCmd)
		return
	}
	if err := c.conn.closeHandle(runCtx, closeCmd, rid); err != nil {
		c.err = fmt.Errorf("perf: raw: close consumer on %s: %w", c.topic, err)
	}
}

func (c *rawConsumer) loop(runCtx context.Context, sh *Shard, p *consumeProgress) error {
	c.out, c.scratch = appendFlow(c.out[:0], c.scratch, c.id, uint32(c.queue))
	br := c.conn.rd.br
	for {
		if br.Buffered() == 0 {
			// About to block: everything owed goes out first.
			c.appendAcks()
			if err := c.flush(); err != nil {
				return err
			}
		}
		if runCtx.Err() != nil {
			return nil
		}
		f, err := c.conn.rd.next()
		if err != nil {
			return err
		}
		switch f.Type {
		case pb.BaseCommand_MESSAGE:
			if err := c.message(f, sh, p); err != nil {
				return err
			}
		case pb.BaseCommand_PING:
			c.out = append(c.out, pongFrame...)
		case pb.BaseCommand_CLOSE_CONSUMER:
			return errors.New("closed by the broker (raw mode does not reconnect)")
		case pb.BaseCommand_ERROR:
			e := f.Cmd.GetError()
			return fmt.Errorf("%s: %s", e.GetError(), e.GetMessage())
		}
	}
}

// message handles one MESSAGE frame.
func (c *rawConsumer) message(f *rawFrame, sh *Shard, p *consumeProgress) error {
	w, err := c.walker.walk(f.Payload, f.AckSet)
	now := time.Now()
	if err != nil {
		sh.Error()
		if c.err == nil {
			c.err = fmt.Errorf("perf: raw: consumer on %s: entry %d:%d: %w", c.topic, f.ID.ledger, f.ID.entry, err)
		}
		w.InEntry = max(w.InEntry, 1)
	} else {
		lat := time.Duration(-1)
		if w.PublishTime > 0 {
			lat = max(time.Duration(now.UnixNano()-int64(w.PublishTime)*1e6), 0)
		}
		sh.RecordN(w.Messages, w.Bytes, lat)
	}
	switch c.ackMode {
	case AckCumulative:
		c.cum[0], c.haveCum = f.ID, true
	case AckIndividual:
		c.ids = append(c.ids, f.ID)
		if len(c.ids) >= rawAckBatch {
			c.appendAcks()
		}
	}
	// Permits are earned back per message the entry used, delivered or
	// skipped, and granted again once half the queue is due.
	p.got(int64(w.Messages), now)
	c.permits += w.InEntry
	if c.permits >= max(c.queue/2, 1) {
		c.out, c.scratch = appendFlow(c.out, c.scratch, c.id, uint32(c.permits))
		c.permits = 0
		return c.flush()
	}
	return nil
}

// appendAcks appends the pending acks to out.
func (c *rawConsumer) appendAcks() {
	if c.haveCum {
		c.out, c.scratch = appendAck(c.out, c.scratch, c.id, true, c.cum[:])
		c.haveCum = false
	}
	if len(c.ids) > 0 {
		c.out, c.scratch = appendAck(c.out, c.scratch, c.id, false, c.ids)
		c.ids = c.ids[:0]
	}
}

func (c *rawConsumer) flush() error {
	if len(c.out) == 0 {
		return nil
	}
	_, err := c.conn.nc.Write(c.out)
	c.out = c.out[:0]
	return err
}
