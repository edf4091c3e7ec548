package perf

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// rawDrainTimeout bounds how long a producer waits at the end of a run for
// the receipts of what it sent.
const rawDrainTimeout = 60 * time.Second

// RawProduce is Produce with the raw client: for each topic (each
// partition of a partitioned one) NumProducers producers, each on its own
// connection, build every batch themselves and pipeline up to MaxPending
// messages. Publish latency is from the write of a batch's SEND to its
// receipt, recorded once per batch with the batch's message count as
// weight (so every message of a batch has its batch's latency; time a
// message waited in the open batch is not included). Compression and
// MemoryLimit do not apply; a SEND_ERROR, a receipt out of order or a lost
// connection ends that producer and is reported in the summary (Errors
// counts the messages it had not had acknowledged).
func RawProduce(ctx context.Context, cfg ProduceConfig) (Summary, error) {
	topics, err := prepare(ctx, &cfg, true)
	if err != nil {
		return Summary{}, err
	}
	var producers []*rawProducer
	defer func() {
		for _, p := range producers {
			p.conn.close()
		}
	}()
	for _, topic := range topics {
		for range cfg.NumProducers {
			p, err := newRawProducer(ctx, &cfg, topic, 1)
			if err != nil {
				return Summary{}, err
			}
			producers = append(producers, p)
		}
	}

	payload := randomPayload(cfg.Size)
	runCtx, cancel := runContext(ctx, &cfg.Common)
	defer cancel()
	var issued atomic.Int64
	perProducer := cfg.Rate / float64(len(producers))
	st, end := runWorkers("produce", &cfg.Common, len(producers), nil, func(i int, sh *Shard) {
		producers[i].run(runCtx, ctx, sh, payload, perProducer, &issued)
	})
	sum := st.Summary("produce", end)
	sum.LatencyOf = "publish"
	var firstErr error
	for _, p := range producers {
		if p.err != nil {
			firstErr = p.err
			break
		}
	}
	return finishRun(sum, firstErr, "raw produce")
}

// pendingBatch is a sent batch awaiting its receipt.
type pendingBatch struct {
	first, last uint64
	n           int
	sent        time.Time
}

// rawProducer is one producer on its own connection. run's goroutine
// builds and sends batches; a reader goroutine takes the receipts.
type rawProducer struct {
	cfg  *ProduceConfig
	conn *rawConn
	id   uint64
	name string
	b    *batchBuilder

	mu      sync.Mutex
	ring    []pendingBatch // FIFO of sent batches, ring[head] oldest
	head, n int
	avail   int  // messages that may still be added (MaxPending window)
	waiting bool // the sender waits on wake
	wake    chan struct{}
	closeID uint64        // request id of our CLOSE_PRODUCER
	closed  chan struct{} // closed on its SUCCESS

	dead    chan struct{} // closed when the reader stops
	closing atomic.Bool   // set before the connection is closed at the end
	errOnce sync.Once
	err     error // first failure (read after dead is closed)
}

func newRawProducer(ctx context.Context, cfg *ProduceConfig, topic string, id uint64) (*rawProducer, error) {
	conn, err := dialRaw(ctx, cfg.ServiceURL, rawSmallReadBuffer)
	if err != nil {
		return nil, err
	}
	if err := conn.lookup(ctx, topic); err != nil {
		conn.close()
		return nil, err
	}
	rid := conn.reqID()
	resp, err := conn.request(ctx, &pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
		Topic: proto.String(topic), ProducerId: proto.Uint64(id), RequestId: proto.Uint64(rid),
		UserProvidedProducerName: proto.Bool(false),
		InitialSubscriptionName:  proto.String(""),
	}}, rid)
	if err != nil {
		conn.close()
		return nil, fmt.Errorf("perf: raw: create producer on %s: %w", topic, err)
	}
	ps := resp.GetProducerSuccess()
	if ps == nil {
		conn.close()
		return nil, fmt.Errorf("perf: raw: create producer on %s: unexpected %s", topic, resp.GetType())
	}
	if int(cfg.BatchMaxBytes) > conn.maxMessageSize || cfg.Size > conn.maxMessageSize {
		conn.close()
		return nil, invalid("batch-max-bytes %d or size %d above the broker's max message size %d", cfg.BatchMaxBytes, cfg.Size, conn.maxMessageSize)
	}
	return &rawProducer{
		cfg: cfg, conn: conn, id: id, name: ps.GetProducerName(),
		b:      newBatchBuilder(id, ps.GetProducerName(), !cfg.DisableBatching),
		ring:   make([]pendingBatch, cfg.MaxPending),
		avail:  cfg.MaxPending,
		wake:   make(chan struct{}, 1),
		closed: make(chan struct{}),
		dead:   make(chan struct{}),
	}, nil
}

// fail records the producer's first failure and stops it.
func (p *rawProducer) fail(err error) {
	p.errOnce.Do(func() {
		p.err = err
		p.conn.close()
	})
}

// run sends until the run ends (runCtx done, or issued reaches
// NumMessages), then sends the open batch, waits for every receipt and
// closes the producer. parent bounds that drain.
func (p *rawProducer) run(runCtx, parent context.Context, sh *Shard, payload []byte, rate float64, issued *atomic.Int64) {
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		p.readLoop(sh)
	}()
	var stop atomic.Bool
	unhook := context.AfterFunc(runCtx, func() {
		stop.Store(true)
		p.signal()
	})
	defer unhook()

	maxMsgs := int(p.cfg.BatchMaxMessages)
	maxBytes := int(p.cfg.BatchMaxBytes)
	if p.cfg.DisableBatching {
		maxMsgs = 1
	}
	lim := NewLimiter(rate, max(1, int(rate/10)))
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var deadline time.Time // when the open batch must go (rate mode)
	var seq uint64
	credit := 0
	recSize := p.b.recordSize(len(payload))
	alive := true
loop:
	for alive && !stop.Load() {
		if n := p.cfg.NumMessages; n > 0 && issued.Add(1) > n {
			break
		}
		var now time.Time
		if rate > 0 {
			now = time.Now()
			due := lim.Reserve(now)
			// Sleep until the message is due, sending the open batch on the
			// way when its delay expires first.
			for due.Sub(now) >= minSleep {
				if p.b.n > 0 && deadline.Before(due) {
					if d := deadline.Sub(now); d > 0 && !p.sleep(runCtx, timer, d) {
						break loop
					}
					if alive = p.flush(); !alive {
						break loop
					}
					now = time.Now()
					continue
				}
				if !p.sleep(runCtx, timer, due.Sub(now)) {
					break loop
				}
				now = time.Now()
				break
			}
			if p.b.n > 0 && !now.Before(deadline) {
				if alive = p.flush(); !alive {
					break
				}
			}
		}
		for credit == 0 && alive && !stop.Load() {
			credit, alive = p.acquire()
		}
		if !alive || stop.Load() {
			break
		}
		if p.b.n > 0 && p.b.bodyLen()+recSize > maxBytes {
			if alive = p.flush(); !alive {
				break
			}
		}
		if p.b.n == 0 {
			if now.IsZero() {
				now = time.Now()
			}
			deadline = now.Add(p.cfg.BatchDelay)
		}
		p.b.add(seq, payload, uint64(now.UnixMilli()))
		seq++
		credit--
		if p.b.n >= maxMsgs {
			alive = p.flush()
		}
	}
	if alive && p.b.n > 0 {
		alive = p.flush()
	}
	// The credit this loop held goes back, so that the window is whole
	// again once every receipt arrived.
	p.mu.Lock()
	p.avail += credit
	p.mu.Unlock()
	if alive {
		p.drain(parent)
	}
	p.closing.Store(true)
	p.conn.close()
	<-readerDone
}

// sleep waits d on timer; false if ctx ended or the producer failed first.
func (p *rawProducer) sleep(ctx context.Context, timer *time.Timer, d time.Duration) bool {
	timer.Reset(d)
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
	case <-p.dead:
	}
	timer.Stop()
	return false
}

// acquire takes the whole free part of the MaxPending window. When none is
// free it sends the open batch (its messages hold the window) and waits
// for receipts (or the end of the run), returning 0 credit: call again.
// alive is false when the producer failed.
func (p *rawProducer) acquire() (credit int, alive bool) {
	p.mu.Lock()
	credit, p.avail = p.avail, 0
	if credit == 0 {
		p.waiting = true
	}
	p.mu.Unlock()
	if credit > 0 {
		return credit, true
	}
	if p.b.n > 0 && !p.flush() {
		return 0, false
	}
	select {
	case <-p.wake:
		return 0, true
	case <-p.dead:
		return 0, false
	}
}

// signal wakes the sender if it waits.
func (p *rawProducer) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// flush sends the open batch; false when the producer failed.
func (p *rawProducer) flush() bool {
	frame := p.b.seal()
	p.mu.Lock()
	i := (p.head + p.n) % len(p.ring)
	p.ring[i] = pendingBatch{first: p.b.firstSeq, last: p.b.lastSeq, n: p.b.n, sent: time.Now()}
	p.n++
	p.mu.Unlock()
	err := p.conn.write(frame)
	p.b.reset()
	if err != nil {
		p.fail(fmt.Errorf("perf: raw: producer %s: write: %w", p.name, err))
		return false
	}
	return true
}

// drain waits until every sent batch was acknowledged, then closes the
// producer on the broker.
func (p *rawProducer) drain(parent context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), rawDrainTimeout)
	defer cancel()
	for {
		p.mu.Lock()
		empty := p.n == 0
		p.waiting = !empty
		p.mu.Unlock()
		if empty {
			break
		}
		select {
		case <-p.wake:
		case <-p.dead:
			return
		case <-ctx.Done():
			p.fail(fmt.Errorf("perf: raw: producer %s: receipts missing %v after the run", p.name, rawDrainTimeout))
			return
		}
	}
	p.mu.Lock()
	p.closeID = p.conn.reqID()
	rid := p.closeID
	p.mu.Unlock()
	err := p.conn.writeCmd(&pb.BaseCommand{Type: pb.BaseCommand_CLOSE_PRODUCER.Enum(), CloseProducer: &pb.CommandCloseProducer{
		ProducerId: proto.Uint64(p.id), RequestId: proto.Uint64(rid),
	}})
	if err != nil {
		return
	}
	select {
	case <-p.closed:
	case <-p.dead:
	case <-ctx.Done():
	}
}

// readLoop handles everything the broker sends until the connection fails
// or is closed.
func (p *rawProducer) readLoop(sh *Shard) {
	defer func() {
		// Whatever is still pending will never be acknowledged.
		p.mu.Lock()
		lost := 0
		for i := range p.n {
			lost += p.ring[(p.head+i)%len(p.ring)].n
		}
		p.mu.Unlock()
		if lost > 0 {
			sh.Errors(lost)
		}
		close(p.dead)
	}()
	size := p.cfg.Size
	for {
		f, err := p.conn.rd.next()
		if err != nil {
			if !p.closing.Load() {
				p.fail(fmt.Errorf("perf: raw: producer %s: read: %w", p.name, err))
			}
			return
		}
		switch f.Type {
		case pb.BaseCommand_SEND_RECEIPT:
			if err := p.receipt(f, sh, size); err != nil {
				p.fail(err)
				return
			}
		case pb.BaseCommand_SEND_ERROR:
			e := f.Cmd.GetSendError()
			p.fail(fmt.Errorf("perf: raw: producer %s: send error for sequence id %d: %s: %s", p.name, e.GetSequenceId(), e.GetError(), e.GetMessage()))
			return
		case pb.BaseCommand_PING:
			if err := p.conn.write(pongFrame); err != nil {
				p.fail(fmt.Errorf("perf: raw: producer %s: write: %w", p.name, err))
				return
			}
		case pb.BaseCommand_CLOSE_PRODUCER:
			p.fail(fmt.Errorf("perf: raw: producer %s closed by the broker (raw mode does not reconnect)", p.name))
			return
		case pb.BaseCommand_SUCCESS:
			p.mu.Lock()
			ours := p.closeID != 0 && f.Cmd.GetSuccess().GetRequestId() == p.closeID
			p.mu.Unlock()
			if ours {
				p.closing.Store(true)
				close(p.closed)
				return
			}
		case pb.BaseCommand_ERROR:
			e := f.Cmd.GetError()
			p.fail(fmt.Errorf("perf: raw: producer %s: %s: %s", p.name, e.GetError(), e.GetMessage()))
			return
		}
	}
}

// receipt matches a SEND_RECEIPT with the oldest pending batch: receipts
// must come in send order, for this producer, with the batch's first
// sequence id (and its last as highest_sequence_id, when set).
func (p *rawProducer) receipt(f *rawFrame, sh *Shard, size int) error {
	now := time.Now()
	p.mu.Lock()
	if p.n == 0 {
		p.mu.Unlock()
		return fmt.Errorf("perf: raw: producer %s: receipt for sequence id %d with nothing pending", p.name, f.SequenceID)
	}
	b := p.ring[p.head]
	if f.ProducerID != p.id || f.SequenceID != b.first || (f.HighestSequenceID != 0 && f.HighestSequenceID != b.last) {
		p.mu.Unlock()
		return fmt.Errorf("perf: raw: producer %s: receipt out of order: producer %d sequence id %d (highest %d), expected producer %d sequence id %d (highest %d)",
			p.name, f.ProducerID, f.SequenceID, f.HighestSequenceID, p.id, b.first, b.last)
	}
	p.head = (p.head + 1) % len(p.ring)
	p.n--
	p.avail += b.n
	wake := p.waiting
	p.waiting = false
	p.mu.Unlock()
	if wake {
		p.signal()
	}
	sh.RecordN(b.n, b.n*size, now.Sub(b.sent))
	return nil
}
