package broker

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// Geo-replication (docs/geo-replication.md). For each persistent topic
// (each partition of a partitioned one) and each remote cluster in the
// topic's replication clusters, a replicator reads the topic's managed
// ledger through a durable cursor named ReplicatorPrefix+"."+remote and
// re-publishes every entry, unchanged but for replicated_from, with one
// producer on the same topic in the remote cluster. The cursor holds the
// entries not yet acknowledged by the remote, so they survive restarts
// and retention keeps them; the replication backlog is that cursor's
// backlog.

// ReplicatorPrefix starts the replicators' cursor and producer names
// (Pulsar's replicatorPrefix). Subscriptions may not use it.
const ReplicatorPrefix = "pulsar.repl"

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
func replCursorName(remote string) string { return ReplicatorPrefix + "." + remote }

// replProducerName is the name of the producer a replicator from local
// creates on remote.
func replProducerName(local, remote string) string {
	return ReplicatorPrefix + "." + local + "-->" + remote
}

// remoteOfProducer returns the cluster a replicator producer comes from
// ("" for an ordinary producer).
func remoteOfProducer(name string) string {
	rest, ok := strings.CutPrefix(name, ReplicatorPrefix+".")
	if !ok {
		return ""
	}
	from, _, _ := strings.Cut(rest, "-->")
	return from
}

// replicator pushes one topic's entries to one remote cluster. Its loop
// goroutine owns the cursor reads and the pending queue.
type replicator struct {
	t      *topic
	remote string
	cur    cursor
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
	rates          rateTracker
	expiredRate    rateTracker
	throttled      atomic.Int64 // times the rate limit held reads back

	lim *dispatchLimiter // the loop's: replicatorDispatchRate
}

// replItem is one entry read and not yet acknowledged on the cursor.
type replItem struct {
	pos     position
	entry   []byte // the entry to send (replicated_from set); nil: skip
	hdr     pulsarproto.SendHeader
	msgs    int
	publish int64
	sent    bool
	done    bool
}

func newReplicator(t *topic, remote string, cur cursor) *replicator {
	r := &replicator{t: t, remote: remote, cur: cur, log: t.log.With("replicator", remote, "topic", t.full),
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
	cd, err := r.t.b.policies.Cluster(ctx, r.remote)
	if err != nil {
		return nil, err
	}
	to, err := replTargetOf(r.remote, cd)
	if err != nil {
		return nil, err
	}
	return dialReplProducer(ctx, to, r.t.full, replProducerName(r.t.b.cfg.ClusterName, r.remote))
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
			if d := lim.wait(now); d > 0 {
				r.throttled.Add(1)
				throttle = time.After(d)
				break
			}
			es, err := r.cur.ReadEntries(min(replReadBatch, replQueueSize-len(pending), max(lim.budget(now), 1)))
			if err != nil {
				if errors.Is(err, ErrClosed) {
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
			lim.take(now, msgs, bytes)
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

// limiter returns the loop's limiter for the topic's current
// replicatorDispatchRate (nil: unlimited). Each replicator, one per
// remote cluster, has a limiter of its own, as in Pulsar.
func (r *replicator) limiter() *rateLimiter {
	var set policy.DispatchRate
	if pol := r.t.pol.Load(); pol != nil {
		set = pol.ReplicatorDispatchRate
	}
	if !sameDispatch(r.lim, set) {
		r.lim = newDispatchLimiter(set)
	}
	return r.lim.limiter()
}

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
func (r *replicator) prepare(e ledgerEntry) *replItem {
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
	if ttl := r.t.pol.Load().MessageTTLSeconds; ttl > 0 && md.MarkerType == nil &&
		int64(md.GetPublishTime()) < time.Now().UnixMilli()-ttl*1000 {
		// Expired under the topic's message TTL: not sent (as Pulsar).
		n := max(int64(md.GetNumMessagesInBatch()), 1)
		r.msgExpired.Add(n)
		return it
	}
	md.ReplicatedFrom = proto.String(r.t.b.cfg.ClusterName)
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

// ReplicatorStats is one remote cluster's entry in TopicStats.Replication,
// with Pulsar's field names.
type ReplicatorStats struct {
	MsgRateIn                 float64 `json:"msgRateIn"`
	MsgThroughputIn           float64 `json:"msgThroughputIn"`
	MsgRateOut                float64 `json:"msgRateOut"`
	MsgThroughputOut          float64 `json:"msgThroughputOut"`
	MsgRateExpired            float64 `json:"msgRateExpired"`
	ReplicationBacklog        int64   `json:"replicationBacklog"`
	Connected                 bool    `json:"connected"`
	ReplicationDelayInSeconds int64   `json:"replicationDelayInSeconds"`
	InboundConnection         string  `json:"inboundConnection"`
	InboundConnectedSince     string  `json:"inboundConnectedSince"`
	OutboundConnection        string  `json:"outboundConnection"`
	OutboundConnectedSince    string  `json:"outboundConnectedSince"`
	MsgInCount                int64   `json:"msgInCount"`
	BytesInCount              int64   `json:"bytesInCount"`
	MsgOutCount               int64   `json:"msgOutCount"`
	BytesOutCount             int64   `json:"bytesOutCount"`
	MsgExpiredCount           int64   `json:"msgExpiredCount"`
}

func (r *replicator) stats() ReplicatorStats {
	entries, _ := r.cur.Backlog()
	rate, thr := r.rates.update(r.msgOut.Load(), r.bytesOut.Load())
	st := ReplicatorStats{
		MsgRateOut: rate, MsgThroughputOut: thr,
		ReplicationBacklog: entries,
		Connected:          r.connected.Load(),
		MsgOutCount:        r.msgOut.Load(),
		MsgExpiredCount:    r.msgExpired.Load(),
		BytesOutCount:      r.bytesOut.Load(),
	}
	st.MsgRateExpired, _ = r.expiredRate.update(st.MsgExpiredCount, 0)
	if st.Connected {
		st.OutboundConnection = *r.outbound.Load()
		st.OutboundConnectedSince = *r.connectedSince.Load()
	}
	if ts := r.oldestPending.Load(); ts > 0 {
		st.ReplicationDelayInSeconds = max(0, (time.Now().UnixMilli()-ts)/1000)
	}
	return st
}

// Topic side: which replicators a topic runs.

// wantedReplication returns the remote clusters t replicates to: the
// effective replication clusters but the local one, when the local one is
// among them (a namespace not replicated here has no replicators).
func (t *topic) wantedReplication() []string {
	if !t.persistent() {
		return nil
	}
	pol := t.pol.Load()
	local := t.b.cfg.ClusterName
	if !slices.Contains(pol.ReplicationClusters, local) {
		return nil
	}
	var out []string
	for _, c := range pol.ReplicationClusters {
		if c != local && c != policy.GlobalCluster {
			out = append(out, c)
		}
	}
	return out
}

// checkReplication starts the replicators t should run and removes
// (stops, then deletes the cursor of) those it should not.
func (t *topic) checkReplication() {
	if !t.persistent() {
		return
	}
	// Policy writes made in other clusters apply at once (ZooKeeper
	// configuration store), not at the next refresh: watch the namespace,
	// and the topic's override while replication is on.
	ctx := t.b.lifeCtx()
	t.b.policies.WatchNamespace(ctx, t.name.NamespaceName())
	if len(t.pol.Load().ReplicationClusters) > 1 {
		parent := t.name
		if parent.IsPartition() {
			parent = parent.Parent()
		}
		t.b.policies.WatchTopic(ctx, parent.String())
	}
	want := t.wantedReplication()
	t.repl.Lock()
	defer t.repl.Unlock()
	if t.repl.closed {
		return
	}
	for name, r := range t.repl.m {
		if !slices.Contains(want, name) {
			r.stop()
			delete(t.repl.m, name)
			t.publishReplLocked()
			if err := t.ml.DeleteCursor(replCursorName(name)); err != nil {
				t.log.Warn("delete replicator cursor", "topic", t.full, "remote", name, "err", err)
			}
			t.log.Info("replicator removed", "topic", t.full, "remote", name)
		}
	}
	for _, c := range want {
		if _, ok := t.repl.m[c]; ok {
			continue
		}
		cur, err := t.ml.OpenCursor(replCursorName(c), initialLatest)
		if err != nil {
			t.log.Warn("open replicator cursor", "topic", t.full, "remote", c, "err", err)
			continue
		}
		r := newReplicator(t, c, cur)
		t.repl.m[c] = r
		t.publishReplLocked()
		go r.run()
		t.log.Info("replicator started", "topic", t.full, "remote", c)
	}
	switch {
	case len(t.repl.m) > 0 && t.repl.ctl == nil:
		t.repl.ctl = newReplSubController(t)
		t.replCtl.Store(t.repl.ctl)
	case len(t.repl.m) == 0 && t.repl.ctl != nil:
		t.replCtl.Store(nil)
		t.repl.ctl.close()
		t.repl.ctl = nil
	}
}

// dropStaleReplicatorCursors deletes, at load, the replicator cursors of
// clusters t no longer replicates to.
func (t *topic) dropStaleReplicatorCursors(names []string) {
	want := t.wantedReplication()
	for _, n := range names {
		c, ok := strings.CutPrefix(n, ReplicatorPrefix+".")
		if ok && !slices.Contains(want, c) {
			if err := t.ml.DeleteCursor(n); err != nil {
				t.log.Warn("delete replicator cursor", "topic", t.full, "cursor", n, "err", err)
			}
		}
	}
}

func (t *topic) publishReplLocked() {
	l := make([]*replicator, 0, len(t.repl.m))
	for _, r := range t.repl.m {
		l = append(l, r)
	}
	t.replList.Store(&l)
}

// stopReplicators stops every replicator (topic close); cursors stay.
func (t *topic) stopReplicators() {
	t.repl.Lock()
	t.repl.closed = true
	rs := make([]*replicator, 0, len(t.repl.m))
	for _, r := range t.repl.m {
		rs = append(rs, r)
	}
	clear(t.repl.m)
	t.publishReplLocked()
	ctl := t.repl.ctl
	t.repl.ctl = nil
	t.replCtl.Store(nil)
	t.repl.Unlock()
	if ctl != nil {
		ctl.close()
	}
	for _, r := range rs {
		r.stop()
	}
}

func (t *topic) wakeReplicators() {
	if l := t.replList.Load(); l != nil {
		for _, r := range *l {
			r.wake()
		}
	}
}

// replicationStats returns the replication section of t's stats: one
// entry per remote cluster replicated to or from.
func (t *topic) replicationStats(pubs []PublisherStats) map[string]ReplicatorStats {
	out := map[string]ReplicatorStats{}
	if l := t.replList.Load(); l != nil {
		for _, r := range *l {
			out[r.remote] = r.stats()
		}
	}
	for _, p := range pubs {
		from := remoteOfProducer(p.ProducerName)
		if from == "" {
			continue
		}
		st := out[from]
		v, _ := t.replIn.LoadOrStore(from, &rateTracker{})
		st.MsgRateIn, st.MsgThroughputIn = v.(*rateTracker).update(p.MsgInCounter, p.BytesInCounter)
		st.MsgInCount += p.MsgInCounter
		st.BytesInCount += p.BytesInCounter
		st.InboundConnection = p.Address
		st.InboundConnectedSince = p.ConnectedSince
		out[from] = st
	}
	return out
}

// loadReplicatedTopics loads the persistent topics of the namespaces
// replicated from this cluster, so that their replicators run (and
// drain a backlog left by a restart) without waiting for a client to
// touch them, as a Pulsar broker loads a replicated namespace's topics
// when it takes the bundle. Only a single-node broker does it: in a
// cluster the bundle owners load their topics on lookup.
func (b *Broker) loadReplicatedTopics(ctx context.Context) {
	if b.cluster != nil {
		return
	}
	tenants, err := b.policies.Tenants(ctx)
	if err != nil {
		return
	}
	for _, tenant := range tenants {
		nss, err := b.policies.Namespaces(ctx, tenant)
		if err != nil {
			continue
		}
		for _, ns := range nss {
			p, err := b.policies.Get(ctx, ns)
			if err != nil || len(p.ReplicationClusters) < 2 || !slices.Contains(p.ReplicationClusters, b.cfg.ClusterName) {
				continue
			}
			topics, err := b.topicsOfNamespace(ctx, ns, true, false)
			if err != nil {
				continue
			}
			for _, name := range topics {
				tn, err := parseTopicName(name)
				if err != nil || b.lookupTopic(tn.String()) != nil {
					continue
				}
				if _, err := b.getTopic(ctx, tn, false); err != nil && !errors.Is(err, ErrTopicNotFound) {
					b.log.Debug("load replicated topic", "topic", name, "err", err)
				}
			}
		}
	}
}

// lifeCtx is a context that ends when the broker closes.
func (b *Broker) lifeCtx() context.Context { return b.life }
