package georep

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/internal/ratemeter"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/topicstats"
)

// Replicators (docs/geo-replication.md). For each persistent topic
// (each partition of a partitioned one) and each remote cluster in the
// topic's replication clusters, a replicator reads the topic's managed
// ledger through a durable cursor named broker.ReplicatorPrefix+"."+remote and
// re-publishes every entry, unchanged but for replicated_from, with one
// producer on the same topic in the remote cluster. The cursor holds the
// entries not yet acknowledged by the remote, so they survive restarts
// and retention keeps them; the replication backlog is that cursor's
// backlog.

// Replicator settings (Pulsar's defaults where it has one).
const (
	// replQueueSize bounds the entries sent and not yet acknowledged
	// (replicationProducerQueueSize).
	replQueueSize = 1000
	// replMaxPendingBytes bounds the bytes of those entries (they are
	// held in memory until acknowledged).
	replMaxPendingBytes = 64 << 20
	// replReadBatch is the most entries one cursor read fetches.
	replReadBatch = 100
	// replBackoffMin and replBackoffMax bound the reconnect delay.
	replBackoffMin = 100 * time.Millisecond
	replBackoffMax = 30 * time.Second
	// replConnectTimeout bounds one connect + lookup + producer attempt.
	replConnectTimeout = 10 * time.Second
)

// replCursorName is the cursor of the replicator towards remote.
func replCursorName(remote string) string { return broker.ReplicatorPrefix + "." + remote }

// replProducerName is the name of the producer a replicator from local
// creates on remote.
func replProducerName(local, remote string) string {
	return broker.ReplicatorPrefix + "." + local + "-->" + remote
}

// replicator pushes one topic's entries to one remote cluster. Its loop
// goroutine owns the cursor reads and the pending queue.
type replicator struct {
	t      *topicState
	remote string
	cur    storage.Cursor
	log    *slog.Logger

	wakeCh chan struct{} // cap 1: new entries were persisted
	stopCh chan struct{}
	done   chan struct{}
	once   sync.Once

	connected      atomic.Bool
	connectedSince atomic.Pointer[string]
	outbound       atomic.Pointer[string]
	msgOut         atomic.Int64
	msgExpired     atomic.Int64
	bytesOut       atomic.Int64
	oldestPending  atomic.Int64 // publish time (ms) of the oldest entry sent and unacknowledged; 0: none
	rates          ratemeter.Meter
	expiredRate    ratemeter.Meter
	throttled      atomic.Int64 // times the rate limit held reads back

	// lim is the loop's dispatch limiter, asked of limFrom, the topic's
	// Limits it last saw (broker.Limits).
	lim     broker.Limiter
	limFrom *broker.Limits
}

// replItem is one entry read and not yet acknowledged on the cursor.
type replItem struct {
	pos     storage.Position
	entry   []byte // the entry to send (replicated_from set); nil: skip
	hdr     pulsarproto.SendHeader
	msgs    int
	publish int64
	sent    bool
	done    bool
}

func newReplicator(t *topicState, remote string, cur storage.Cursor) *replicator {
	r := &replicator{t: t, remote: remote, cur: cur, log: t.log.With("replicator", remote, "topic", t.t.Name()),
		wakeCh: make(chan struct{}, 1), stopCh: make(chan struct{}), done: make(chan struct{})}
	empty := ""
	r.connectedSince.Store(&empty)
	r.outbound.Store(&empty)
	return r
}

func (r *replicator) wake() {
	select {
	case r.wakeCh <- struct{}{}:
	default:
	}
}

// stop ends the loop and waits for it.
func (r *replicator) stop() {
	r.once.Do(func() { close(r.stopCh) })
	<-r.done
}

func (r *replicator) stopped() bool {
	select {
	case <-r.stopCh:
		return true
	default:
		return false
	}
}

// run connects (with backoff) and replicates until stopped.
func (r *replicator) run() {
	defer close(r.done)
	var pending []*replItem
	backoff := replBackoffMin
	for !r.stopped() {
		p, err := r.connect()
		if err != nil {
			r.log.Debug("replicator connect", "err", err)
			// Read on while disconnected is pointless: the backlog stays
			// on the cursor. Wait and retry.
			select {
			case <-r.stopCh:
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, replBackoffMax)
			continue
		}
		backoff = replBackoffMin
		since := time.Now().UTC().Format(time.RFC3339Nano)
		r.connectedSince.Store(&since)
		r.outbound.Store(&p.addr)
		r.connected.Store(true)
		r.log.Info("replicator connected", "remote", p.addr)
		pending, err = r.replicate(p, pending)
		r.connected.Store(false)
		p.close(err)
		if err != nil && !r.stopped() {
			r.log.Warn("replicator disconnected", "err", err)
		}
	}
}

func (r *replicator) connect() (*replProducer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), replConnectTimeout)
	defer cancel()
	go func() {
		select {
		case <-r.stopCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	cd, err := r.t.f.b.Policies().Cluster(ctx, r.remote)
	if err != nil {
		return nil, err
	}
	own, err := r.t.f.brokerCredentials()
	if err != nil {
		return nil, err
	}
	to, err := replTargetOf(r.remote, cd, own)
	if err != nil {
		return nil, err
	}
	return dialReplProducer(ctx, to, r.t.t.Name(), replProducerName(r.t.f.local, r.remote))
}

// replicate runs one connection: it re-sends what was pending, then
// reads, filters and sends entries, acknowledging them on the cursor as
// receipts arrive, in order. It returns the items still unacknowledged
// (to be re-sent on the next connection) and why it ended.
func (r *replicator) replicate(p *replProducer, pending []*replItem) ([]*replItem, error) {
	for _, it := range pending {
		it.sent = false
	}
	sendable := func() error {
		n := 0
		for _, it := range pending {
			if it.entry == nil || it.sent || it.done {
				continue
			}
			if err := p.send(&it.hdr, it.entry, false); err != nil {
				return err
			}
			it.sent = true
			n++
		}
		if n > 0 {
			return p.flush()
		}
		return nil
	}
	if err := sendable(); err != nil {
		return pending, err
	}
	for {
		// Read while the queue has room and the rate limit allows.
		var throttle <-chan time.Time
		for len(pending) < replQueueSize && pendingBytes(pending) < replMaxPendingBytes {
			lim, now := r.limiter(), time.Now()
			if d := lim.Wait(now); d > 0 {
				r.throttled.Add(1)
				throttle = time.After(d)
				break
			}
			es, err := r.cur.ReadEntries(min(replReadBatch, replQueueSize-len(pending), max(lim.Budget(now), 1)))
			if err != nil {
				if errors.Is(err, broker.ErrClosed) {
					return pending, err
				}
				r.log.Warn("replicator read", "err", err)
				break
			}
			if len(es) == 0 {
				break
			}
			msgs, bytes := 0, 0
			for _, e := range es {
				it := r.prepare(e)
				pending = append(pending, it)
				if it.entry != nil {
					msgs, bytes = msgs+it.msgs, bytes+len(it.entry)
				}
			}
			lim.Take(now, msgs, bytes)
			if err := sendable(); err != nil {
				return pending, err
			}
		}
		pending = r.ackDone(pending)
		r.updateOldest(pending)
		select {
		case <-r.stopCh:
			return pending, nil
		case <-p.done:
			return pending, p.err
		case <-r.wakeCh:
		case <-throttle:
		case rc := <-p.receipts:
			if err := r.receipt(pending, rc); err != nil {
				return pending, err
			}
			// Take every receipt already there before acking.
			for more := true; more; {
				select {
				case rc := <-p.receipts:
					if err := r.receipt(pending, rc); err != nil {
						return pending, err
					}
				default:
					more = false
				}
			}
		}
	}
}

// limiter returns the loop's dispatch limiter (unlimited when there is
// none), asked of the topic's Limits when they change. Each replicator,
// one per remote cluster, has a limiter of its own, as in Pulsar.
func (r *replicator) limiter() broker.Limiter {
	if l := r.t.t.Limits(); l != r.limFrom || r.lim == nil {
		r.limFrom, r.lim = l, unlimited{}
		if l != nil && l.Replicator != nil {
			if lim := l.Replicator(r.remote); lim != nil {
				r.lim = lim
			}
		}
	}
	return r.lim
}

// unlimited is the limiter of a replicator without a dispatch rate.
type unlimited struct{}

func (unlimited) Take(time.Time, int, int) time.Duration { return 0 }
func (unlimited) Wait(time.Time) time.Duration           { return 0 }
func (unlimited) Budget(time.Time) int                   { return math.MaxInt }

// pendingBytes is the size of the entries held for sending.
func pendingBytes(pending []*replItem) int {
	n := 0
	for _, it := range pending {
		n += len(it.entry)
	}
	return n
}

// receipt marks the oldest sent item done; receipts come in send order.
func (r *replicator) receipt(pending []*replItem, rc replReceipt) error {
	for _, it := range pending {
		if it.done || it.entry == nil {
			continue
		}
		if !it.sent || it.hdr.SequenceID != rc.seq {
			return errors.New("replication: receipt out of order")
		}
		it.done = true
		r.msgOut.Add(int64(it.msgs))
		r.bytesOut.Add(int64(len(it.entry)))
		return nil
	}
	return errors.New("replication: receipt for nothing sent")
}

// ackDone acknowledges the leading done items on the cursor and drops
// them from the queue.
func (r *replicator) ackDone(pending []*replItem) []*replItem {
	n := 0
	for n < len(pending) && pending[n].done {
		n++
	}
	if n == 0 {
		return pending
	}
	if err := r.cur.AckCumulative(pending[n-1].pos); err != nil {
		r.log.Warn("replicator ack", "err", err)
		return pending
	}
	clear(pending[:n])
	return slices.Delete(pending, 0, n)
}

func (r *replicator) updateOldest(pending []*replItem) {
	for _, it := range pending {
		if !it.done {
			r.oldestPending.Store(it.publish)
			return
		}
	}
	r.oldestPending.Store(0)
}

// prepare decides what to do with one entry (Pulsar's order of checks):
// an unparsable entry, one that came in by replication (loop avoidance)
// or whose replicate_to leaves this remote out is skipped (acknowledged
// without sending); any other is sent with replicated_from = the local
// cluster and its original producer name and sequence ids, so the
// remote's deduplication recognises a resend.
func (r *replicator) prepare(e storage.LedgerEntry) *replItem {
	it := &replItem{pos: e.Pos, done: true}
	pe, err := pulsarproto.ParseEntry(e.Data)
	if err != nil {
		r.log.Warn("replicator: unparsable entry skipped", "pos", e.Pos, "err", err)
		return it
	}
	var md pb.MessageMetadata
	if err := proto.Unmarshal(pe.Metadata, &md); err != nil {
		r.log.Warn("replicator: bad metadata skipped", "pos", e.Pos, "err", err)
		return it
	}
	if md.MarkerType != nil {
		switch mt := md.GetMarkerType(); {
		case mt < markerSnapshotRequest || mt > markerUpdate:
			return it // transaction markers never leave their cluster
		case md.GetReplicatedFrom() == r.remote:
			r.handleReplMarker(mt, pe.Payload, e.Pos)
		}
	}
	if md.ReplicatedFrom != nil {
		return it
	}
	if len(md.ReplicateTo) > 0 && !slices.Contains(md.ReplicateTo, r.remote) {
		return it
	}
	if ttl := r.t.t.EffectivePolicy().MessageTTLSeconds; ttl > 0 && md.MarkerType == nil &&
		int64(md.GetPublishTime()) < time.Now().UnixMilli()-ttl*1000 {
		// Expired under the topic's message TTL: not sent (as Pulsar).
		n := max(int64(md.GetNumMessagesInBatch()), 1)
		r.msgExpired.Add(n)
		return it
	}
	md.ReplicatedFrom = proto.String(r.t.f.local)
	meta, err := proto.Marshal(&md)
	if err != nil {
		return it
	}
	n := 1
	if md.NumMessagesInBatch != nil && md.GetNumMessagesInBatch() > 1 {
		n = int(md.GetNumMessagesInBatch())
	}
	seq := md.GetSequenceId()
	highest := max(md.GetHighestSequenceId(), seq+uint64(n)-1)
	it.entry = pulsarproto.AppendEntry(make([]byte, 0, 10+len(meta)+len(pe.Payload)), meta, pe.Payload)
	it.hdr = pulsarproto.SendHeader{SequenceID: seq, NumMessages: int32(n), HighestSequenceID: highest}
	if md.NumChunksFromMsg != nil && md.GetNumChunksFromMsg() > 1 {
		it.hdr.IsChunk = true
	}
	it.hdr.Marker = md.MarkerType != nil
	it.msgs = n
	it.publish = int64(md.GetPublishTime())
	it.done = false
	return it
}

func (r *replicator) stats() topicstats.ReplicatorStats {
	entries, _ := r.cur.Backlog()
	rate, thr := r.rates.Update(r.msgOut.Load(), r.bytesOut.Load())
	st := topicstats.ReplicatorStats{
		MsgRateOut: rate, MsgThroughputOut: thr,
		ReplicationBacklog: entries,
		Connected:          r.connected.Load(),
		MsgOutCount:        r.msgOut.Load(),
		MsgExpiredCount:    r.msgExpired.Load(),
		BytesOutCount:      r.bytesOut.Load(),
	}
	st.MsgRateExpired, _ = r.expiredRate.Update(st.MsgExpiredCount, 0)
	if st.Connected {
		st.OutboundConnection = *r.outbound.Load()
		st.OutboundConnectedSince = *r.connectedSince.Load()
	}
	if ts := r.oldestPending.Load(); ts > 0 {
		st.ReplicationDelayInSeconds = max(0, (time.Now().UnixMilli()-ts)/1000)
	}
	return st
}
