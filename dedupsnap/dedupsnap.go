package dedupsnap

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/topicstats"
)

// CursorName is the cursor holding a topic's snapshots (Pulsar's name).
const CursorName = "pulsar.dedup"

// replayBatch is how many entries a recovery reads at a time.
const replayBatch = 100

// Snapshots is the feature.
type Snapshots struct {
	entriesInterval int
	tailEntries     int
	maxProducers    int
	log             *slog.Logger
	// topics are the deduplicating topics' states by managed ledger (one
	// per load of a topic).
	mu     sync.Mutex
	topics map[*mledger.ManagedLedger]*topicState
	// recovering are the loaded topics whose deduplication was turned on
	// and whose state is being recovered (PolicyApplied).
	recovering map[*mledger.ManagedLedger]bool
	// recovered records the last recovery of each topic by name.
	recovered map[string]Recovery
}

// Recovery is what a topic's last recovery did.
type Recovery struct {
	// FromSnapshot: the map came from the cursor's properties (false:
	// from the log's tail).
	FromSnapshot bool
	// Replayed is the number of entries read after the snapshot (or
	// from the tail).
	Replayed int
	// Producers is the number of producers in the recovered map.
	Producers int
}

// DefaultMaxProducers is Pulsar's default
// brokerDeduplicationMaxNumberOfProducers.
const DefaultMaxProducers = 10000

// Options configure the feature.
type Options struct {
	// MaxProducers is Pulsar's brokerDeduplicationMaxNumberOfProducers:
	// a snapshot keeps at most this many producers (the first in name
	// order; Pulsar keeps the first its hash map yields); 0 or negative,
	// as in Pulsar, keeps none. Producers left out are remembered only
	// if they wrote after the snapshot.
	MaxProducers int
}

// Enable registers the feature on b (before Start) with Pulsar's default
// options: the entries interval is b's
// Config().Delivery.DedupEntriesInterval, the tail read without a
// snapshot its DedupRecoveryEntries.
func Enable(b *broker.Broker) (*Snapshots, error) {
	return EnableWith(b, Options{MaxProducers: DefaultMaxProducers})
}

// EnableWith is Enable with options.
func EnableWith(b *broker.Broker, o Options) (*Snapshots, error) {
	cfg := b.Config()
	s := &Snapshots{entriesInterval: cfg.Delivery.DedupEntriesInterval, tailEntries: cfg.DedupRecoveryEntries,
		maxProducers: o.MaxProducers,
		log:          b.Logger().With("component", "dedupsnap"), topics: map[*mledger.ManagedLedger]*topicState{},
		recovering: map[*mledger.ManagedLedger]bool{}, recovered: map[string]Recovery{}}
	if err := b.Use(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Name implements broker.Feature.
func (s *Snapshots) Name() string { return "deduplication snapshots" }

// DedupCursor implements broker.DedupRecovery.
func (s *Snapshots) DedupCursor() string { return CursorName }

// LastRecovery returns what the last recovery of topic did.
func (s *Snapshots) LastRecovery(topic string) (Recovery, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recovered[topic]
	return r, ok
}

// RecoverDedup implements broker.DedupRecovery.
func (s *Snapshots) RecoverDedup(ctx context.Context, t broker.Topic) (map[string]uint64, error) {
	ml := t.Managed()
	if ml == nil {
		// Not an mledger (a test's storage): the tail only, no snapshots.
		state, _, err := tailState(t, s.tailEntries)
		return state, err
	}
	rec := Recovery{}
	var state map[string]uint64
	c := ml.Cursor(CursorName)
	if c != nil {
		rec.FromSnapshot = true
		var err error
		if state, err = decode(c.Properties()); err != nil {
			return nil, fmt.Errorf("dedupsnap: %s: %w", t.Name(), err)
		}
		for {
			es, err := c.ReadEntries(ctx, replayBatch)
			if err != nil {
				return nil, fmt.Errorf("dedupsnap: replay %s: %w", t.Name(), err)
			}
			if len(es) == 0 {
				break
			}
			for _, e := range es {
				apply(state, e.Data)
			}
			rec.Replayed += len(es)
		}
	} else {
		var err error
		if state, rec.Replayed, err = tailState(t, s.tailEntries); err != nil {
			return nil, err
		}
		// The cursor starts at the end, with the tail's map as its
		// first snapshot.
		if c, err = ml.OpenCursor(ctx, CursorName, mledger.InitialLatest); err != nil {
			return nil, fmt.Errorf("dedupsnap: open %s cursor of %s: %w", CursorName, t.Name(), err)
		}
		if err := c.SetProperties(ctx, s.encode(state)); err != nil {
			return nil, fmt.Errorf("dedupsnap: first snapshot of %s: %w", t.Name(), err)
		}
	}
	rec.Producers = len(state)
	st := &topicState{s: s, name: t.Name(), cursor: c, persisted: maps.Clone(state), lastSnap: time.Now(),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go st.writer()
	s.mu.Lock()
	if old := s.topics[ml]; old != nil {
		old.close(false)
	}
	s.topics[ml] = st
	s.recovered[t.Name()] = rec
	s.mu.Unlock()
	s.log.Debug("deduplication state recovered", "topic", t.Name(), "fromSnapshot", rec.FromSnapshot, "replayed", rec.Replayed, "producers", rec.Producers)
	return state, nil
}

// tailState reads the last n entries of t.
func tailState(t broker.Topic, n int) (map[string]uint64, int, error) {
	tail, err := t.Ledger().TailEntries(n)
	if err != nil {
		return nil, 0, fmt.Errorf("dedupsnap: read the tail of %s: %w", t.Name(), err)
	}
	state := map[string]uint64{}
	for _, d := range tail {
		apply(state, d)
	}
	return state, len(tail), nil
}

// apply raises state by a stored entry's producer and sequence ids.
func apply(state map[string]uint64, data []byte) {
	e, err := pulsarproto.ParseEntry(data)
	if err != nil {
		return
	}
	var md pulsarproto.Metadata
	if pulsarproto.ParseMetadata(e.Metadata, &md) != nil {
		return
	}
	raise(state, &md)
}

// raise records md's highest sequence id under its producer name.
func raise(state map[string]uint64, md *pulsarproto.Metadata) {
	if len(md.ProducerName) == 0 {
		return
	}
	highest := max(md.HighestSequenceID, md.SequenceID+uint64(max(md.NumMessages(), 1))-1)
	name := string(md.ProducerName)
	if last, ok := state[name]; !ok || highest > last {
		state[name] = highest
	}
}

// encode is the snapshot of a map: its first maxProducers producers by
// name (none if maxProducers <= 0, as Pulsar's snapshot keeps producers
// while it holds fewer than the maximum).
func (s *Snapshots) encode(state map[string]uint64) map[string]string {
	names := slices.Sorted(maps.Keys(state))
	names = names[:min(len(names), max(s.maxProducers, 0))]
	out := make(map[string]string, len(names))
	for _, k := range names {
		out[k] = strconv.FormatUint(state[k], 10)
	}
	return out
}

// decode is the map of a snapshot.

func decode(props map[string]string) (map[string]uint64, error) {
	out := make(map[string]uint64, len(props))
	for k, v := range props {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("snapshot property %q=%q: %w", k, v, err)
		}
		out[k] = n
	}
	return out, nil
}

func (s *Snapshots) state(t broker.Topic) *topicState {
	ml := t.Managed()
	if ml == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.topics[ml]
}

// BeforeAdd implements broker.PublishInterceptor.
func (s *Snapshots) BeforeAdd(broker.Topic, *broker.Entry) {}

// AfterAdd implements broker.PublishInterceptor: a stored entry raises
// the topic's map; every entriesInterval entries a snapshot is due.
func (s *Snapshots) AfterAdd(t broker.Topic, e *broker.Entry, pos storage.Position, err error) {
	if err != nil {
		return
	}
	st := s.state(t)
	if st == nil {
		return
	}
	if pol := t.EffectivePolicy(); pol != nil && !pol.Deduplication {
		return // turned off: the next tick drops the cursor
	}
	st.mu.Lock()
	if md := e.Meta(); md != nil {
		raise(st.persisted, md)
	}
	st.last = pos
	st.since++
	due := st.since >= s.entriesInterval
	if due {
		st.captureLocked()
	}
	st.mu.Unlock()
	if due {
		st.request()
	}
}

// TickTopic implements broker.TopicTicker: the timed snapshot; a topic
// whose deduplication was turned off loses its state and its cursor (as
// in Pulsar), which would otherwise hold its ledgers forever.
func (s *Snapshots) TickTopic(t broker.Topic) {
	st := s.state(t)
	if st == nil {
		return
	}
	pol := t.EffectivePolicy()
	if pol != nil && !pol.Deduplication {
		s.drop(t, st)
		return
	}
	if pol == nil || pol.DedupSnapshotIntervalSeconds <= 0 {
		return
	}
	st.mu.Lock()
	due := st.since > 0 && time.Since(st.lastSnap) >= time.Duration(pol.DedupSnapshotIntervalSeconds)*time.Second
	if due {
		st.captureLocked()
	}
	st.mu.Unlock()
	if due {
		st.request()
	}
}

// drop forgets st and deletes its cursor.
func (s *Snapshots) drop(t broker.Topic, st *topicState) {
	ml := t.Managed()
	s.mu.Lock()
	if s.topics[ml] != st {
		s.mu.Unlock()
		return
	}
	delete(s.topics, ml)
	s.mu.Unlock()
	st.close(false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ml.DeleteCursor(ctx, CursorName); err != nil {
		s.log.Warn("deleting the deduplication cursor failed", "topic", t.Name(), "err", err)
	}
}

// PolicyApplied implements broker.PolicyObserver: a loaded topic whose
// deduplication was just turned on recovers its state as a load would
// (the snapshot cursor and the entries after it, else the log's tail),
// in the background, and raises the core's map with it, as Pulsar's
// MessageDeduplication replays its cursor when it is enabled. Until it
// is done the topic's stats say "Recovering" and, as in Pulsar, sends
// are checked against what the core already knows.
func (s *Snapshots) PolicyApplied(t broker.Topic) {
	ml := t.Managed()
	pol := t.EffectivePolicy()
	if ml == nil || pol == nil || !pol.Deduplication || t.Closed() {
		return
	}
	s.mu.Lock()
	if s.topics[ml] != nil || s.recovering[ml] {
		s.mu.Unlock()
		return
	}
	s.recovering[ml] = true
	s.mu.Unlock()
	go func() {
		defer func() {
			s.mu.Lock()
			delete(s.recovering, ml)
			s.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		state, err := s.RecoverDedup(ctx, t)
		if err != nil {
			s.log.Warn("deduplication turned on: state not recovered", "topic", t.Name(), "err", err)
			return
		}
		t.RaiseDedup(state)
		if t.Closed() { // closed meanwhile: CloseTopic may have run before the state existed
			s.CloseTopic(t)
		}
	}()
}

// AddTopicStats implements topicstats.Source: a deduplicating
// topic whose state is not recovered yet is "Recovering", as in Pulsar.
func (s *Snapshots) AddTopicStats(t broker.Topic, st *topicstats.TopicStats) {
	ml := t.Managed()
	if ml == nil || st.DeduplicationStatus != "Enabled" {
		return
	}
	s.mu.Lock()
	recovering := s.recovering[ml] || s.topics[ml] == nil
	s.mu.Unlock()
	if recovering {
		st.DeduplicationStatus = "Recovering"
	}
}

// LoadTopic implements broker.TopicHook (the state is made at recovery).
func (s *Snapshots) LoadTopic(context.Context, broker.Topic) error { return nil }

// CloseTopic implements broker.TopicHook: a last snapshot, then the
// topic's writer stops.
func (s *Snapshots) CloseTopic(t broker.Topic) {
	ml := t.Managed()
	if ml == nil {
		return
	}
	s.mu.Lock()
	st := s.topics[ml]
	delete(s.topics, ml)
	s.mu.Unlock()
	if st != nil {
		st.close(true)
	}
}

// Snapshot takes topic's snapshot now (for tests and tools); false if
// the topic is not loaded here with deduplication.
func (s *Snapshots) Snapshot(ctx context.Context, topic string) (bool, error) {
	s.mu.Lock()
	var st *topicState
	for _, x := range s.topics {
		if x.name == topic {
			st = x
		}
	}
	s.mu.Unlock()
	if st == nil {
		return false, nil
	}
	st.mu.Lock()
	st.captureLocked()
	st.mu.Unlock()
	return true, st.flush(ctx)
}

// topicState is one loaded deduplicating topic's snapshot state.
type topicState struct {
	s      *Snapshots
	name   string
	cursor *mledger.Cursor

	mu        sync.Mutex
	persisted map[string]uint64 // highest stored sequence id per producer
	last      mledger.Position  // the last stored entry
	since     int               // entries stored since the last snapshot was captured
	lastSnap  time.Time         // when it was captured
	pending   *snapshot         // captured, not yet written

	write sync.Mutex // one snapshot write at a time
	kick  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// snapshot is the map as of the entry at pos.
type snapshot struct {
	props map[string]string
	pos   mledger.Position
}

// captureLocked makes the map as of the last stored entry the pending
// snapshot (a pending one not yet written is superseded: it covers
// less). st.mu is held.
func (st *topicState) captureLocked() {
	if st.since == 0 {
		return
	}
	st.pending = &snapshot{props: st.s.encode(st.persisted), pos: st.last}
	st.since, st.lastSnap = 0, time.Now()
}

// request asks the writer for a snapshot (never blocks).
func (st *topicState) request() {
	select {
	case st.kick <- struct{}{}:
	default:
	}
}

func (st *topicState) writer() {
	defer close(st.done)
	for {
		select {
		case <-st.stop:
			return
		case <-st.kick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := st.flush(ctx); err != nil {
			st.s.log.Warn("deduplication snapshot failed", "topic", st.name, "err", err)
		}
		cancel()
	}
}

// flush writes the pending snapshot: properties first, then the
// mark-delete position (a crash between them replays more, never less).
func (st *topicState) flush(ctx context.Context) error {
	st.write.Lock()
	defer st.write.Unlock()
	st.mu.Lock()
	p := st.pending
	st.pending = nil
	st.mu.Unlock()
	if p == nil {
		return nil
	}
	if err := st.cursor.SetProperties(ctx, p.props); err != nil {
		return err
	}
	if err := st.cursor.MarkDelete(p.pos); err != nil {
		return err
	}
	return st.cursor.Flush(ctx)
}

// close stops the writer, after a last snapshot if final.
func (st *topicState) close(final bool) {
	st.once.Do(func() {
		close(st.stop)
		<-st.done
		if final {
			st.mu.Lock()
			st.captureLocked()
			st.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := st.flush(ctx); err != nil {
				st.s.log.Warn("deduplication snapshot at close failed", "topic", st.name, "err", err)
			}
		}
	})
}

// ProducersOf returns the producer names of topic's current map, sorted
// (for tests).
func (s *Snapshots) ProducersOf(topic string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.topics {
		if st.name == topic {
			st.mu.Lock()
			names := slices.Sorted(maps.Keys(st.persisted))
			st.mu.Unlock()
			return names
		}
	}
	return nil
}
