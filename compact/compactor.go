package compact

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/topicstats"
)

// position is the core's entry position.
type position = storage.Position

// earliest is Pulsar's (-1,-1) "first retained entry" position.
var earliest = position{LedgerID: -1, EntryID: -1}

// Compaction status values (Pulsar's LongRunningProcessStatus).
const (
	NotRun  = "NOT_RUN"
	Running = "RUNNING"
	Success = "SUCCESS"
	Error   = "ERROR"
)

// ErrRunning is returned when a compaction of the topic already runs.
var ErrRunning = errors.New("compact: compaction already in progress")

// Config configures compaction.
type Config struct {
	// MonitorInterval is how often loaded topics are checked against
	// their namespace's compaction_threshold (Pulsar's
	// brokerServiceCompactionMonitorIntervalInSeconds; 0: 60 s).
	MonitorInterval time.Duration
	// RetainNullKey (Pulsar's topicCompactionRetainNullKey, default false
	// since Pulsar 3.2) keeps messages without a key in the compacted
	// view; by default the compactor leaves them out.
	RetainNullKey bool
}

// Compactor is a broker's topic compaction and read_compacted
// subscriptions: a broker.Feature (Enable builds and registers it).
type Compactor struct {
	b      *broker.Broker
	cfg    Config
	log    *slog.Logger
	topics broker.TopicSlot[topicState]

	life     context.Context
	lifeStop context.CancelFunc
	mu       struct {
		sync.Mutex
		closed bool
	}
	wg sync.WaitGroup
}

var (
	_ broker.CompactedReads      = (*Compactor)(nil)
	_ broker.TopicHook           = (*Compactor)(nil)
	_ broker.TopicPinner         = (*Compactor)(nil)
	_ topicstats.InternalSource  = (*Compactor)(nil)
	_ broker.SystemSubscriptions = (*Compactor)(nil)
	_ broker.Lifecycle           = (*Compactor)(nil)
	_ broker.LastReadableCursor  = (*compactedCursor)(nil)
)

// Enable builds the compactor and registers it on b (before Start).
func Enable(b *broker.Broker, cfg Config) (*Compactor, error) {
	if cfg.MonitorInterval <= 0 {
		cfg.MonitorInterval = time.Minute
	}
	x := &Compactor{b: b, cfg: cfg, log: b.Logger(), topics: broker.NewTopicSlot[topicState](b)}
	x.life, x.lifeStop = context.WithCancel(context.Background())
	if err := b.Use(x); err != nil {
		return nil, err
	}
	return x, nil
}

// Name implements broker.Feature.
func (x *Compactor) Name() string { return "compaction" }

// topicState is a persistent topic's compactor status (its TopicSlot).
type topicState struct {
	sync.Mutex
	status  string
	lastErr string
}

// LoadTopic implements broker.TopicHook: a persistent topic on managed
// ledgers gets its compactor state.
func (x *Compactor) LoadTopic(_ context.Context, t broker.Topic) error {
	if t.Managed() != nil {
		x.topics.Set(t, &topicState{})
	}
	return nil
}

// CloseTopic implements broker.TopicHook (a running compaction ends on
// its own: the ledger it reads is closed under it).
func (x *Compactor) CloseTopic(broker.Topic) {}

// SystemSubscriptions implements broker.SystemSubscriptions: the
// compactor's cursor keeps the data after the horizon, whatever the
// topic's TTL and backlog quotas.
func (x *Compactor) SystemSubscriptions() []string { return []string{compactionSub} }

// Pinned implements broker.TopicPinner: a topic being compacted stays
// loaded.
func (x *Compactor) Pinned(t broker.Topic) bool {
	st := x.topics.Get(t)
	if st == nil {
		return false
	}
	st.Lock()
	defer st.Unlock()
	return st.status == Running
}

// start starts compacting t in the background.
func (x *Compactor) start(t broker.Topic) error {
	st := x.topics.Get(t)
	if st == nil {
		return broker.Reason(broker.ErrNotAllowed, "compaction needs a persistent topic")
	}
	st.Lock()
	if st.status == Running {
		st.Unlock()
		return ErrRunning
	}
	st.status, st.lastErr = Running, ""
	st.Unlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.mu.closed {
		st.Lock()
		st.status, st.lastErr = Error, "the broker is closing"
		st.Unlock()
		return broker.ErrClosed
	}
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		ctx, cancel := context.WithTimeout(x.life, time.Hour)
		defer cancel()
		err := x.run(ctx, t)
		st.Lock()
		if err != nil {
			st.status, st.lastErr = Error, err.Error()
			x.log.Warn("compaction failed", "topic", t.Name(), "err", err)
		} else {
			st.status = Success
		}
		st.Unlock()
	}()
	return nil
}

// Start implements broker.Lifecycle: the threshold monitor.
func (x *Compactor) Start(context.Context) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.mu.closed {
		return broker.ErrClosed
	}
	x.wg.Add(1)
	go x.monitor()
	return nil
}

// Close implements broker.Lifecycle: it stops the monitor and waits for
// the compactions running (their context is cancelled).
func (x *Compactor) Close() {
	x.mu.Lock()
	x.mu.closed = true
	x.mu.Unlock()
	x.lifeStop()
	x.wg.Wait()
}

// monitor starts the compaction of loaded topics whose backlog after the
// horizon is above their namespace's compaction_threshold.
func (x *Compactor) monitor() {
	defer x.wg.Done()
	tk := time.NewTicker(x.cfg.MonitorInterval)
	defer tk.Stop()
	for {
		select {
		case <-x.life.Done():
			return
		case <-tk.C:
		}
		var due []broker.Topic
		x.b.EachTopic(func(t broker.Topic) bool {
			ml := t.Managed()
			if ml == nil {
				return true
			}
			// The topic's compactionThreshold, else its namespace's,
			// else the broker's (0: never).
			th := t.EffectivePolicy().CompactionThreshold
			if th <= 0 {
				return true
			}
			if backlogBytes(ml) > th {
				due = append(due, t)
			}
			return true
		})
		for _, t := range due {
			if err := x.start(t); err != nil && !errors.Is(err, ErrRunning) {
				x.log.Warn("threshold compaction", "topic", t.Name(), "err", err)
			}
		}
	}
}

// backlogBytes estimates the bytes stored after the horizon.
func backlogBytes(ml *mledger.ManagedLedger) int64 {
	st, has := ml.CompactionState()
	var n int64
	for _, l := range ml.Stats().Ledgers {
		switch {
		case !has || l.LedgerID > st.Horizon.LedgerID:
			n += l.Size
		case l.LedgerID == st.Horizon.LedgerID && l.Entries > 0:
			n += l.Size * max(l.Entries-1-st.Horizon.EntryID, 0) / l.Entries
		}
	}
	return n
}

// partitions returns the partitions of a partitioned topic name, or nil
// for any other name.
func (x *Compactor) partitions(ctx context.Context, topic string) ([]string, error) {
	tn, err := broker.ParseTopicName(topic)
	if err != nil || tn.IsPartition() {
		return nil, err
	}
	n, err := x.b.Registry().Partitions(ctx, topic)
	if err != nil || n <= 0 {
		return nil, err
	}
	out := make([]string, n)
	for i := range out {
		out[i] = tn.Partition(i).String()
	}
	return out, nil
}

// Compact starts compacting topic (every partition of a partitioned
// topic); broker.ErrAlreadyExists while one runs.
func (x *Compactor) Compact(ctx context.Context, topic string) error {
	parts, err := x.partitions(ctx, topic)
	if err != nil {
		return err
	}
	if parts != nil {
		var errs []error
		for _, p := range parts {
			if err := x.Compact(ctx, p); err != nil && !errors.Is(err, broker.ErrAlreadyExists) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	t, err := x.b.Topic(ctx, topic)
	if err != nil {
		return err
	}
	if err := x.start(t); err != nil {
		if errors.Is(err, ErrRunning) {
			return broker.Reason(broker.ErrAlreadyExists, "Compaction already in progress")
		}
		return err
	}
	return nil
}

// CompactionStatus reports the last compaction of topic. For a
// partitioned topic: RUNNING while any partition runs, else ERROR if any
// failed, SUCCESS if all succeeded, NOT_RUN otherwise.
func (x *Compactor) CompactionStatus(ctx context.Context, topic string) (status, lastError string, err error) {
	parts, err := x.partitions(ctx, topic)
	if err != nil {
		return "", "", err
	}
	if parts != nil {
		rank := map[string]int{NotRun: 0, Success: 1, Error: 2, Running: 3}
		status, success := NotRun, 0
		for _, p := range parts {
			s, e, err := x.CompactionStatus(ctx, p)
			if err != nil {
				return "", "", err
			}
			if s == Success {
				success++
			}
			if rank[s] > rank[status] {
				status = s
			}
			if s == Error && lastError == "" {
				lastError = p + ": " + e
			}
		}
		if status == Success && success != len(parts) {
			status = NotRun // some partitions never compacted
		}
		return status, lastError, nil
	}
	t, err := x.b.Topic(ctx, topic)
	if err != nil {
		return "", "", err
	}
	st := x.topics.Get(t)
	if st == nil {
		return NotRun, "", nil
	}
	st.Lock()
	defer st.Unlock()
	if st.status == "" {
		return NotRun, "", nil
	}
	return st.status, st.lastErr, nil
}

// AddInternalStats implements topicstats.InternalSource: the compaction
// fields of a topic's internal stats.
func (x *Compactor) AddInternalStats(ctx context.Context, t broker.Topic, out *topicstats.InternalStats) {
	ml := t.Managed()
	if ml == nil {
		return
	}
	st, has := ml.CompactionState()
	if st.Pending >= 0 {
		out.PendingCompactionLedger = &st.Pending
	}
	if !has {
		return
	}
	out.CompactionHorizon = st.Horizon.String()
	li := &topicstats.InternalLedgerInfo{LedgerID: st.Ledger}
	if r, _, err := ml.OpenCompactedLedger(ctx); err == nil {
		li.Entries, li.Size = r.LastAddConfirmed()+1, r.Length()
		r.Close()
	}
	out.CompactedLedger = li
}

// CompactedCursor implements broker.CompactedReads.
func (x *Compactor) CompactedCursor(t broker.Topic, c storage.Cursor) storage.Cursor {
	ml, mc := t.Managed(), storage.ManagedCursor(c)
	if ml == nil || mc == nil {
		return nil
	}
	return newCompactedCursor(c, mc, ledger{ml})
}

// run compacts t up to its last entry now.
func (x *Compactor) run(ctx context.Context, t broker.Topic) error {
	ml := t.Managed()
	cl := ledger{ml}
	lacM, ok := ml.LastConfirmed()
	if !ok {
		return nil
	}
	lac := lacM
	if st, has := ml.CompactionState(); has && st.Horizon.Compare(lac) >= 0 {
		return nil
	}
	keys, err := compactTo(ctx, cl, lac, x.cfg.RetainNullKey, t.Name())
	if err != nil {
		return err
	}
	prev, err := cl.commitCompaction(ctx, keys.w, lac)
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	// The __compaction cursor keeps the data after the horizon.
	if sub, err := t.OpenSubscription(compactionSub); err == nil {
		var aerr error
		sub.Call(func(l broker.SubLoop) { aerr = l.Cursor().AckCumulative(lac) })
		if aerr != nil {
			x.log.Warn("move the compaction cursor", "topic", t.Name(), "err", aerr)
		}
	} else {
		x.log.Warn("open the compaction cursor", "topic", t.Name(), "err", err)
	}
	// Readers switch to the new compacted ledger before the old one goes.
	for _, sub := range t.Subscriptions() {
		sub.Call(func(l broker.SubLoop) {
			if cc, ok := l.Cursor().(*compactedCursor); ok {
				cc.reload()
			}
		})
	}
	if prev >= 0 {
		if err := cl.deleteCompacted(ctx, prev); err != nil {
			x.log.Warn("delete the previous compacted ledger", "topic", t.Name(), "ledger", prev, "err", err)
		}
	}
	x.log.Info("topic compacted", "topic", t.Name(), "horizon", lac, "keys", keys.n)
	return nil
}
