package georep

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/internal/ratemeter"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/topicstats"
)

// topicState is geo-replication's state of one loaded persistent topic
// (the feature's broker.TopicSlot): its replicators by remote cluster
// and, while any runs, the replicated-subscription snapshot controller.
//
// mu is taken by check and stop only, never under a topic lock: under it
// they open and delete cursors and wait for replicator loops to stop;
// those loops never take it (they read list and ctl) but may call the
// topic.
type topicState struct {
	f   *Replication
	t   broker.Topic
	log *slog.Logger

	mu struct {
		sync.Mutex
		m      map[string]*replicator // nil until the first one
		ctl    *snapshotController    // while replicators run
		closed bool
	}
	list atomic.Pointer[[]*replicator] // a lock-free copy of mu.m
	ctl  atomic.Pointer[snapshotController]
	in   sync.Map // remote cluster -> *ratemeter.Meter of inbound replication
	// dataIn counts the entries stored but markers (a snapshot is taken
	// only when data came in since the last one).
	dataIn atomic.Int64
}

func newTopicState(f *Replication, t broker.Topic) *topicState {
	return &topicState{f: f, t: t, log: t.Logger()}
}

// wanted returns the remote clusters the topic replicates to: the
// effective replication clusters but the local one, when the local one
// is among them (a namespace not replicated here has no replicators).
func (st *topicState) wanted() []string {
	pol := st.t.EffectivePolicy()
	local := st.f.local
	if pol == nil || !slices.Contains(pol.ReplicationClusters, local) {
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

// check starts the replicators the topic should run and removes (stops,
// then deletes the cursor of) those it should not.
func (st *topicState) check() {
	// Policy writes made in other clusters apply at once (ZooKeeper
	// configuration store), not at the next refresh: watch the namespace,
	// and the topic's override while replication is on.
	ps, name := st.f.b.Policies(), st.t.TopicName()
	ps.WatchNamespace(st.f.ctx, name.NamespaceName())
	if pol := st.t.EffectivePolicy(); pol != nil && len(pol.ReplicationClusters) > 1 {
		parent := name
		if parent.IsPartition() {
			parent = parent.Parent()
		}
		ps.WatchTopic(st.f.ctx, parent.String())
	}
	want := st.wanted()
	ml := st.t.Ledger()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.mu.closed {
		return
	}
	for remote, r := range st.mu.m {
		if !slices.Contains(want, remote) {
			r.stop()
			delete(st.mu.m, remote)
			st.publishLocked()
			if err := ml.DeleteCursor(replCursorName(remote)); err != nil {
				st.log.Warn("delete replicator cursor", "topic", st.t.Name(), "remote", remote, "err", err)
			}
			st.log.Info("replicator removed", "topic", st.t.Name(), "remote", remote)
		}
	}
	for _, c := range want {
		if _, ok := st.mu.m[c]; ok {
			continue
		}
		cur, err := ml.OpenCursor(replCursorName(c), storage.InitialLatest)
		if err != nil {
			st.log.Warn("open replicator cursor", "topic", st.t.Name(), "remote", c, "err", err)
			continue
		}
		r := newReplicator(st, c, cur)
		if st.mu.m == nil {
			st.mu.m = map[string]*replicator{}
		}
		st.mu.m[c] = r
		st.publishLocked()
		go r.run()
		st.log.Info("replicator started", "topic", st.t.Name(), "remote", c)
	}
	switch {
	case len(st.mu.m) > 0 && st.mu.ctl == nil:
		st.mu.ctl = newSnapshotController(st)
		st.ctl.Store(st.mu.ctl)
	case len(st.mu.m) == 0 && st.mu.ctl != nil:
		st.ctl.Store(nil)
		st.mu.ctl.close()
		st.mu.ctl = nil
	}
}

// dropStaleCursors deletes, at load, the replicator cursors of clusters
// the topic no longer replicates to.
func (st *topicState) dropStaleCursors() {
	want := st.wanted()
	ml := st.t.Ledger()
	for _, n := range ml.CursorNames() {
		c, ok := strings.CutPrefix(n, broker.ReplicatorPrefix+".")
		if ok && !slices.Contains(want, c) {
			if err := ml.DeleteCursor(n); err != nil {
				st.log.Warn("delete replicator cursor", "topic", st.t.Name(), "cursor", n, "err", err)
			}
		}
	}
}

func (st *topicState) publishLocked() {
	l := make([]*replicator, 0, len(st.mu.m))
	for _, r := range st.mu.m {
		l = append(l, r)
	}
	st.list.Store(&l)
}

// stop stops every replicator (topic close); the cursors stay.
func (st *topicState) stop() {
	st.mu.Lock()
	st.mu.closed = true
	rs := make([]*replicator, 0, len(st.mu.m))
	for _, r := range st.mu.m {
		rs = append(rs, r)
	}
	clear(st.mu.m)
	st.publishLocked()
	ctl := st.mu.ctl
	st.mu.ctl = nil
	st.ctl.Store(nil)
	st.mu.Unlock()
	if ctl != nil {
		ctl.close()
	}
	for _, r := range rs {
		r.stop()
	}
}

// replicators returns the running replicators (lock-free).
func (st *topicState) replicators() []*replicator {
	if l := st.list.Load(); l != nil {
		return *l
	}
	return nil
}

// wake tells the replicators that entries were stored.
func (st *topicState) wake() {
	for _, r := range st.replicators() {
		r.wake()
	}
}

// busy reports whether replication keeps the topic loaded.
func (st *topicState) busy() bool {
	return len(st.replicators()) > 0 || st.ctl.Load() != nil
}

// addStats fills the replication section of the topic's stats: one entry
// per remote cluster replicated to or from (inbound: the replicator
// producers of other clusters publishing here).
func (st *topicState) addStats(ts *topicstats.TopicStats) {
	out := ts.Replication
	for _, r := range st.replicators() {
		out[r.remote] = r.stats()
	}
	for _, p := range ts.Publishers {
		from := broker.ReplicatorOrigin(p.ProducerName)
		if from == "" {
			continue
		}
		rs := out[from]
		v, _ := st.in.LoadOrStore(from, &ratemeter.Meter{})
		rs.MsgRateIn, rs.MsgThroughputIn = v.(*ratemeter.Meter).Update(p.MsgInCounter, p.BytesInCounter)
		rs.MsgInCount += p.MsgInCounter
		rs.BytesInCount += p.BytesInCounter
		rs.InboundConnection = p.Address
		rs.InboundConnectedSince = p.ConnectedSince
		out[from] = rs
	}
	for _, rs := range out {
		// Pulsar's topic-level output includes the replicators'.
		ts.MsgRateOut += rs.MsgRateOut
		ts.MsgThroughputOut += rs.MsgThroughputOut
	}
}
