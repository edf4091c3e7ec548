package dispatch

import (
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/broker/entryset"
	"github.com/magnetar-mq/magnetar/broker/selector"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/internal/ratelog"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// Short names for package broker/storage's types.
type (
	cursor      = storage.Cursor
	position    = storage.Position
	ledgerEntry = storage.LedgerEntry
)

// Meta is what dispatch needs from an entry's MessageMetadata (the
// core's parse function, Config.Parse, fills it in).
type Meta struct {
	Marker      int32 // marker_type; 0: a data entry
	Messages    int   // messages in the entry (a batch's count)
	Key         []byte
	DeliverAt   int64 // unix ms; 0: none
	PublishTime int64
	Chunk       Chunk
}

// Hooks are the features a subscription's loop calls (the core's
// extension points: dispatch filters, ack hooks, replicated
// subscriptions); they run on the loop and must not block or call the
// subscription's Call.
type Hooks interface {
	// Filtering reports whether Skip wants each entry's whole
	// MessageMetadata (some dispatch filter is registered).
	Filtering() bool
	// Skip reports whether an entry is acknowledged and never delivered
	// (md nil: its metadata did not parse).
	Skip(md *pulsarproto.Metadata) bool
	// Hold reports whether a freshly read (or replayed) entry is
	// withheld from delivery (the feature keeps it; Redeliver gives it
	// back).
	Hold(e *Entry) bool
	// Skipped sees an entry dispatch acknowledged without delivering it
	// (a marker: marker > 0, with its bytes).
	Skipped(marker int32, data []byte)
	// MarkDeleteMoved: the mark-delete position may have moved.
	MarkDeleteMoved()
}

// Limiter is a rate limit that work is counted against after it is done
// (package ratelimit: token buckets that go into debt; the core's
// broker.Limiter is this type). It must be safe for concurrent use and
// quick: the core and the subscriptions call it on their hot paths.
type Limiter interface {
	// Take counts msgs messages of size bytes done at now and returns
	// how long until the limit allows more (0: now).
	Take(now time.Time, msgs, bytes int) time.Duration
	// Wait returns how long until one more message may go (0: now).
	Wait(now time.Time) time.Duration
	// Budget returns how many messages may go now (math.MaxInt: no
	// message limit).
	Budget(now time.Time) int
}

// Config is what a subscription is made of; the core fills it in where
// a topic creates the subscription.
type Config struct {
	Name, Topic string // the subscription's and its topic's names (logs)
	Type        Type   // until the first consumer picks one
	Partition   int    // the topic's partition index (Failover's choice)
	Cursor      storage.Cursor
	// Parse decodes what dispatch needs of an entry; with md non-nil it
	// leaves the whole MessageMetadata there (for Hooks.Skip).
	Parse func(data []byte, md *pulsarproto.Metadata) (Meta, error)
	// Batch is the most entries one read fetches (the broker's
	// dispatcherMaxReadBatchSize, which a dynamic update changes).
	Batch *atomic.Int32
	// Unacked returns maxUnackedMessagesPerConsumer and
	// ...PerSubscription now (0: unlimited); nil: none.
	Unacked func() (perConsumer, perSub int)
	// DelayActive reports whether delayed delivery is on now; nil: on.
	DelayActive func() bool
	// ConsistentHashing selects Key_Shared's consistent-hash ring.
	ConsistentHashing bool
	Hooks             Hooks // nil: none
	Log               *slog.Logger
}

// Subscription is one subscription of a topic. All its dispatch state
// (consumers, permits, pending acks, redelivery and replay sets, the
// cursor) is owned by one loop goroutine; other goroutines submit closures
// with Do/Call and never touch that state directly. The methods other
// than Do, Call, Wake, Close and Limit are the loop's (call them from
// Do or Call).
type Subscription struct {
	name      string
	topic     string
	partition int
	cur       cursor
	// parse decodes what dispatch needs of an entry; with md non-nil it
	// leaves the whole MessageMetadata there (for the dispatch filters).
	parse func(data []byte, md *pulsarproto.Metadata) (Meta, error)
	// batch is the broker's dispatcherMaxReadBatchSize in force
	// (readBatch), which a dynamic update changes.
	batch *atomic.Int32
	log   *slog.Logger
	// unackedFn returns the topic's maxUnackedMessagesPerConsumer and
	// ...PerSubscription (0: unlimited); nil: none.
	unackedFn func() (perConsumer, perSub int)

	wg sync.WaitGroup
	// run says who owns the loop state: nobody (on false: the
	// subscription is idle and holds no goroutine), the loop goroutine,
	// or a call running its function inline (see claim). closed: close
	// began, nothing starts any more. ops are the closures queued for
	// the loop (do, call), oldest first, at most maxOps; room is made by
	// a do that found them full and closed when the loop takes one. kick
	// (cap 1) wakes a blocked loop: ops were queued, entries were
	// persisted (notified) or close began; made by the first loop that
	// blocks (one with timers: an idle loop exits instead). One channel,
	// made when needed, not three per subscription (issue 35: 8 KiB a
	// live topic). running mirrors on for wake.
	run struct {
		sync.Mutex
		on, closed bool
		ops        []subOp
		room, kick chan struct{}
	}
	running atomic.Bool
	// hasConsumers mirrors len(consumers) > 0 for wake (set by the
	// loop's owner where consumers changes); notified: new entries were
	// persisted since the loop last looked.
	hasConsumers atomic.Bool
	notified     atomic.Bool
	typ          Type // the loop's to change

	// owned by the loop
	sel       selector.Selector[*Consumer]
	consumers []*Consumer
	arrivals  uint64
	pending   map[position]*Entry
	// order holds every entry of pending by position (and stale
	// entries, skipped), for cumulative acks (package entryset).
	order   entryset.Heap[*Entry]
	replay  entryset.Replay[*Entry] // to (re)deliver first, in position order
	unacked int                     // sum of unackedMsg over consumers
	// requeues are the pending sets of consumers that left, being moved
	// to the replay set a chunk per loop step (requeue.go); dispatch
	// waits until they are done.
	requeues []*requeueJob
	// blocked: Shared/Key_Shared dispatch is stopped because unacked
	// reached the per-subscription limit (until it is at most half).
	// The other flags sit with it (one word for all; the struct's size
	// class is most of a live topic's subscription, issue 35):
	// keepEmpty: a seek disconnected the consumers, keep the sub;
	// closedLoop: the sub is being dropped; throttled: the loop waits
	// for a rate-limit timer (limits); consistentHashing: see lastRead;
	// haveRead: lastRead is set. keepData: the cursor has no storage to
	// re-read from (a non-persistent topic), so pending entries keep
	// their bytes.
	blocked, keepEmpty, closedLoop, throttled bool
	consistentHashing, haveRead, keepData     bool
	// extra is what few subscriptions use (made by more).
	extra      *subExtra
	delayTimer *time.Timer // fires at extra.delayTimerAt
	// delayActive reports whether delayed delivery is on (nil: on).
	delayActive func() bool
	// chunkOwner: Shared/Key_Shared, the consumer that got the first
	// chunk of a chunked message (by uuid) and so gets all the others
	// (chunk.go).
	chunkOwner  map[string]*Consumer
	notifyTimer *time.Timer // tells extra.notifyQ their state
	msgOut      int64
	bytesOut    int64
	entriesOut  int64 // entries sent (dispatch's turns count them)
	redeliverN  int64
	lastAck     int64
	lastConsume int64

	ackedN     int64        // messages acknowledged
	expiredN   atomic.Int64 // messages expired by TTL
	lastExpire atomic.Int64 // unix ms of the last TTL expiry
	lastFlow   int64        // unix ms of the last FLOW
	win        Window       // stats.go; has its own lock

	// limits are the dispatch rate limiters (limits.go: Limit), set by the
	// topic; throttled is set by the loop while a timer will wake it.
	limits atomic.Pointer[limits]

	// consistentHashing selects the Key_Shared ring (set before the
	// first consumer is added). lastRead is the last entry the cursor
	// returned (haveRead: any), the read position a Key_Shared consumer
	// joining now is restricted to (see keyshared.go).
	// created and lastDetach (unix ms) date the subscription's activity
	// for subscription expiry (LastActive).
	created, lastDetach int64
	lastRead            position

	// hooks are the features' (nil: none); md is the dispatch filters'
	// scratch metadata (loop-owned).
	hooks Hooks
	md    *pulsarproto.Metadata
}

// Key_Shared reads ahead past entries whose consumer has no permits (they
// wait in the replay set) up to these bounds.
const (
	maxReplay      = 10000
	maxReplayBytes = 64 << 20
)

// dispatchTurn is about how many entries one dispatch call sends before
// it hands the loop back (and wakes itself to go on): a consumer with a
// huge window does not hold up stats, acks and other consumers.
const dispatchTurn = 1024

// subExtra is the loop state of a subscription that only some need
// (rate-limited warnings, delayed delivery, Failover notices): a
// pointer, made by more, keeps the subscription a size class smaller.
type subExtra struct {
	// readFailLog rate-limits warnings for failed redelivery reads.
	readFailLog ratelog.Line
	// ackFailLog rate-limits the warnings for acks the cursor refused
	// (at most one line per second per subscription).
	ackFailLog   ratelog.Line
	delayed      entryset.DelayHeap[*Entry] // Shared/Key_Shared: held until deliverAt
	delayedMsgs  int                        // messages in delayed
	delayTimerAt int64                      // unix ms delayTimer fires at
	notifyQ      []*Consumer                // Failover consumers to tell their state
}

// more returns s.extra, made on first use (loop state).
func (s *Subscription) more() *subExtra {
	if s.extra == nil {
		s.extra = &subExtra{}
	}
	return s.extra
}

// New makes a subscription over cfg.Cursor; its loop starts on the
// first Do, Call or Wake with consumers.
func New(cfg Config) *Subscription {
	s := new(Subscription)
	s.Init(cfg)
	return s
}

// Init sets up a zero Subscription as New does: one embedded in a type
// of the caller's is one allocation (most subscriptions of a broker with
// many topics are idle; their size is a live topic's).
func (s *Subscription) Init(cfg Config) {
	_, np := cfg.Cursor.(*QueueCursor)
	s.name, s.topic, s.typ, s.partition, s.cur = cfg.Name, cfg.Topic, cfg.Type, cfg.Partition, cfg.Cursor
	s.parse, s.batch, s.log, s.unackedFn, s.keepData = cfg.Parse, cfg.Batch, cfg.Log, cfg.Unacked, np
	s.delayActive, s.consistentHashing, s.hooks = cfg.DelayActive, cfg.ConsistentHashing, cfg.Hooks
	s.created = time.Now().UnixMilli()
	// pending is made on first use.
	s.win.Roll(time.Now(), 0, 0, 0, 0, 0) // the first window starts now
	s.sel = newSelector(cfg.Type, cfg.Partition, false, false)
}

func newSelector(typ Type, partition int, sticky, consistent bool) selector.Selector[*Consumer] {
	st := selector.TypeExclusive
	switch typ {
	case Shared:
		st = selector.TypeShared
	case Failover:
		st = selector.TypeFailover
	case KeyShared:
		st = selector.TypeKeyShared
	}
	return selector.New[*Consumer](st, partition, sticky, consistent)
}

// AddConsumer attaches c as a consumer of type typ (sticky: Key_Shared
// with declared ranges); refusal is non-empty for ConsumerBusy
// conditions.
func (s *Subscription) AddConsumer(c *Consumer, typ Type, sticky bool) string {
	if s.closedLoop {
		return "subscription is being closed"
	}
	if len(s.consumers) > 0 && typ != s.typ {
		return "Subscription is of different type"
	}
	if len(s.consumers) == 0 && (typ != s.typ || s.typ == KeyShared) {
		s.typ = typ
		s.sel = newSelector(typ, s.partition, sticky, s.consistentHashing)
	}
	var prevActive *Consumer
	if fs, ok := s.sel.(*selector.Failover[*Consumer]); ok {
		prevActive = fs.Active()
	}
	s.arrivals++
	c.arrivalKey = s.arrivals
	if r := s.sel.Add(c); r != "" {
		return r
	}
	s.consumers = append(s.consumers, c)
	s.consumersChanged()
	s.lastDetach = time.Now().UnixMilli() // attach counts as activity
	s.noteJoinLocked(c)
	s.keepEmpty = false
	if fs, ok := s.sel.(*selector.Failover[*Consumer]); ok {
		s.failoverChanged(prevActive, fs.Active(), c)
	}
	return ""
}

// failoverChanged sends ACTIVE_CONSUMER_CHANGE to every consumer but the
// newly added one (it is told after its SUCCESS, see notifyActiveLocked)
// when the active consumer changed, and moves the previous active
// consumer's pending entries back for the new one.
func (s *Subscription) failoverChanged(prev, now, added *Consumer) {
	if prev == now {
		return
	}
	for _, c := range s.consumers {
		if c != added {
			c.sink.SendActiveChange(c.id, c == now)
		}
	}
	if prev != nil {
		s.requeueAll(prev)
	}
}

// ScheduleActiveNotify tells c, a new consumer of a Failover
// subscription, after d whether it is the active consumer (the core
// waits until the client processed its SUCCESS).
func (s *Subscription) ScheduleActiveNotify(c *Consumer, d time.Duration) {
	x := s.more()
	x.notifyQ = append(x.notifyQ, c)
	if s.notifyTimer == nil {
		s.notifyTimer = time.NewTimer(d)
	}
}

// notifyActiveLocked tells c whether it is the active consumer of a
// Failover subscription.
func (s *Subscription) notifyActiveLocked(c *Consumer) {
	if fs, ok := s.sel.(*selector.Failover[*Consumer]); ok && !c.closed {
		c.sink.SendActiveChange(c.id, fs.Active() == c)
	}
}

// RemoveConsumer detaches c, returning its pending entries for
// redelivery. It reports whether the subscription should go: no
// consumer left, not durable, not kept for a seek's consumers.
func (s *Subscription) RemoveConsumer(c *Consumer) (drop bool) {
	i := slices.Index(s.consumers, c)
	if i < 0 {
		return s.droppable()
	}
	var prevActive *Consumer
	fs, isFailover := s.sel.(*selector.Failover[*Consumer])
	if isFailover {
		prevActive = fs.Active()
	}
	s.consumers = slices.Delete(s.consumers, i, i+1)
	s.consumersChanged()
	s.lastDetach = time.Now().UnixMilli()
	s.sel.Remove(c)
	c.closed = true
	s.forgetChunksOf(c)
	s.requeueAll(c)
	s.refreshBlocked()
	if isFailover {
		now := fs.Active()
		if now != prevActive {
			for _, o := range s.consumers {
				o.sink.SendActiveChange(o.id, o == now)
			}
		}
	}
	s.dispatch()
	return s.droppable()
}

func (s *Subscription) anyPermits() bool {
	if s.blocked {
		return false
	}
	for _, c := range s.consumers {
		if c.available() {
			return true
		}
	}
	return false
}

// pick chooses the consumer for an entry with key; nil when none can
// take it (or the subscription is blocked on unacked messages).
func (s *Subscription) pick(key []byte) *Consumer {
	if s.blocked {
		return nil
	}
	return s.sel.Pick(key)
}

// dispatch delivers as much as permits allow: the replay set first (in
// position order), then new entries from the cursor.
func (s *Subscription) dispatch() {
	if len(s.requeues) > 0 && s.typ != Shared {
		return // requeueStep dispatches after the last chunk (requeue.go)
	}
	s.releaseJoined()
	start := s.entriesOut
	for s.anyPermits() {
		if s.throttle() {
			return
		}
		if s.entriesOut-start >= dispatchTurn {
			// Let the loop serve its other work (stats, acks) first.
			s.Wake()
			return
		}
		progressed := false
		if s.replay.Len() > 0 {
			var full bool
			progressed, full = s.replayPass()
			if full {
				// The batch filled up: finish the replay set before new
				// entries (Key_Shared keeps per-key order this way).
				if progressed {
					continue
				}
				return
			}
		}
		if !s.anyPermits() || s.throttle() {
			return
		}
		if n := s.replay.Len(); n > 0 && (s.typ != KeyShared || n >= maxReplay || s.replay.Bytes() >= maxReplayBytes) {
			if !progressed {
				return
			}
			continue
		}
		entries, err := s.cur.ReadEntries(s.limitRead(s.readSize()))
		if err != nil && !errors.Is(err, storage.ErrNoEntries) {
			s.log.Warn("dispatch read failed", "topic", s.topic, "sub", s.name, "err", err)
			return
		}
		if len(entries) == 0 {
			return
		}
		s.lastRead, s.haveRead = entries[len(entries)-1].Pos, true
		now := time.Now().UnixMilli()
		for _, e := range entries {
			md := s.filterMeta()
			m, err := s.parse(e.Data, md)
			if err != nil {
				// Corrupt metadata: deliver as a single message and let
				// the client validate (it acks with validation_error).
				m, md = Meta{Messages: 1}, nil
			}
			if m.Marker != 0 || s.skip(md) {
				// Server-only (or skipped by a DispatchFilter, such as
				// an entry of an aborted transaction): acknowledged,
				// never delivered.
				s.ackSkippedLocked(e, m.Marker)
				continue
			}
			pe := &Entry{pos: e.Pos, data: e.Data, numMsgs: max(m.Messages, 1), chunk: m.Chunk}
			if len(m.Key) > 0 {
				// A copy: the parsed key points into the entry's bytes,
				// which the pending entry must not keep alive.
				pe.key = append([]byte(nil), m.Key...)
			}
			if s.held(pe) {
				continue // withheld by an AckHook (acknowledged in an open transaction)
			}
			if m.DeliverAt > now && (s.typ == Shared || s.typ == KeyShared) {
				if s.delayOn() {
					s.addDelayed(pe, m.DeliverAt)
					continue
				}
			}
			c := s.pickFor(pe)
			if c == nil || s.replay.Len() > 0 && s.typ != KeyShared {
				s.replay.Add(pe)
				continue
			}
			s.assign(c, pe)
			s.send(pe)
		}
	}
}

// filterMeta returns the loop's scratch MessageMetadata for the dispatch
// filters, nil when there are none (the parse then needs no scratch).
func (s *Subscription) filterMeta() *pulsarproto.Metadata {
	if s.hooks == nil || !s.hooks.Filtering() {
		return nil
	}
	if s.md == nil {
		s.md = new(pulsarproto.Metadata)
	}
	return s.md
}

// skip reports whether a dispatch filter skips an entry (md nil: its
// metadata did not parse, or there are no filters).
func (s *Subscription) skip(md *pulsarproto.Metadata) bool {
	return s.hooks != nil && s.hooks.Skip(md)
}

// held reports whether a hook withholds a freshly read entry.
func (s *Subscription) held(pe *Entry) bool {
	if s.hooks != nil && s.hooks.Hold(pe) {
		pe.data = nil
		return true
	}
	return false
}

// replayPass assigns replay entries (in position order) to consumers, up
// to one read batch, re-reads the bytes of those that have none from
// storage in one call, and sends them. It reports whether anything was
// delivered or dropped, and whether it stopped because the batch was
// full (more of the replay set may be deliverable now).
func (s *Subscription) replayPass() (progressed, full bool) {
	var batch []*Entry
	sc := s.replay.Scan()
	for looked := 0; ; looked++ {
		if len(batch) >= s.readBatch() {
			full = true
		}
		// Key_Shared looks at most maxReplay held entries per pass
		// (Pulsar's look-ahead): past it, new reads wait too.
		if full || looked >= maxReplay || !s.anyPermits() || s.throttle() {
			break
		}
		pe, ok := sc.Next()
		if !ok {
			break
		}
		if s.cur.IsAcked(pe.pos) {
			progressed = true
			continue
		}
		if s.held(pe) {
			progressed = true
			continue
		}
		c := s.pickFor(pe)
		if c == nil {
			sc.Hold(pe)
			if s.typ != KeyShared {
				break
			}
			continue
		}
		s.assign(c, pe)
		batch = append(batch, pe)
	}
	sc.Done()
	if len(batch) == 0 {
		return progressed, full
	}
	loaded, dropped := s.load(batch)
	for _, pe := range batch {
		if pe.data != nil {
			s.send(pe)
		}
	}
	return progressed || loaded > 0 || dropped > 0, full
}

// load fills in the bytes of the assigned entries in batch that have
// none, from storage. Entries no longer stored are forgotten (their
// assignment undone); on any other read error the entries without bytes
// go back to the replay set for a later pass. It returns how many entries
// of batch have their bytes and how many were forgotten.
func (s *Subscription) load(batch []*Entry) (loaded, dropped int) {
	var missing []*Entry
	for _, pe := range batch {
		if pe.data == nil {
			missing = append(missing, pe)
		}
	}
	loaded = len(batch) - len(missing)
	if len(missing) == 0 {
		return loaded, 0
	}
	ps := make([]position, len(missing))
	for i, pe := range missing {
		ps[i] = pe.pos
	}
	data, err := s.cur.ReadAt(ps)
	if err == nil && len(data) == len(missing) {
		for i, pe := range missing {
			pe.data = data[i]
		}
		return len(batch), 0
	}
	if errors.Is(err, storage.ErrEntryGone) {
		for _, pe := range missing {
			d, err := s.cur.ReadAt([]position{pe.pos})
			switch {
			case err == nil && len(d) == 1:
				pe.data = d[0]
				loaded++
			case errors.Is(err, storage.ErrEntryGone):
				s.unassign(pe)
				dropped++
			default:
				s.unassign(pe)
				s.replay.Add(pe)
			}
		}
		return loaded, dropped
	}
	s.more().readFailLog.Log(s.log, slog.LevelWarn, "redelivery read failed", "topic", s.topic, "sub", s.name, "entries", len(missing), "err", err)
	for _, pe := range missing {
		s.unassign(pe)
		s.replay.Add(pe)
	}
	return loaded, 0
}

// readBatch is the most entries one read fetches now.
func (s *Subscription) readBatch() int { return int(s.batch.Load()) }

// readSize is how many entries to read next: no more than the permits
// available (every entry holds at least one message), so a consumer with
// a small window does not make the subscription read far ahead, and no
// more than the unacked limits leave room for. Key_Shared reads a full
// batch: entries for blocked keys wait in the replay set.
func (s *Subscription) readSize() int {
	if s.typ == KeyShared {
		return s.readBatch()
	}
	perC, perS := s.unackedLimits()
	n := 0
	for _, c := range s.consumers {
		if c.available() {
			p := c.permits
			if perC > 0 {
				p = min(p, perC-c.unackedMsg)
			}
			n += max(p, 0)
			if b := s.readBatch(); n >= b {
				n = b
				break
			}
		}
	}
	if perS > 0 {
		n = min(n, perS-s.unacked)
	}
	return max(n, 1)
}

// unackedLimits returns the limits that apply to this subscription now:
// only Shared and Key_Shared block on unacked messages (as in Pulsar).
func (s *Subscription) unackedLimits() (perConsumer, perSub int) {
	if s.unackedFn == nil || (s.typ != Shared && s.typ != KeyShared) {
		return 0, 0
	}
	return s.unackedFn()
}

// addUnacked changes c's unacked message count and the subscription's.
func (s *Subscription) addUnacked(c *Consumer, n int) {
	c.unackedMsg += n
	s.unacked += n
}

// refreshBlocked unblocks consumers and the subscription whose unacked
// count fell to half of their limit or below (or whose limit was lifted),
// as Pulsar does. It reports whether anything was unblocked.
func (s *Subscription) refreshBlocked() bool {
	perC, perS := s.unackedLimits()
	changed := false
	for _, c := range s.consumers {
		if c.blocked && (perC <= 0 || c.unackedMsg <= perC/2) {
			c.blocked = false
			changed = true
		}
	}
	if s.blocked && (perS <= 0 || s.unacked <= perS/2) {
		s.blocked = false
		changed = true
	}
	return changed
}

// assign records pe as pending on c (permits, unacked counts, blocking);
// send then delivers it.
func (s *Subscription) assign(c *Consumer, pe *Entry) {
	s.noteChunk(c, pe)
	pe.owner = c
	if c.pending == nil {
		c.pending = make(map[position]*Entry)
	}
	c.pending[pe.pos] = pe
	if s.pending == nil {
		s.pending = make(map[position]*Entry)
	}
	s.pending[pe.pos] = pe
	s.pushOrder(pe)
	c.permits -= pe.numMsgs
	s.addUnacked(c, pe.numMsgs)
	if perC, perS := s.unackedLimits(); perC > 0 || perS > 0 {
		if perC > 0 && c.unackedMsg >= perC {
			c.blocked = true
		}
		if perS > 0 && s.unacked >= perS {
			s.blocked = true
		}
	}
}

// deletePending deletes pos from a pending set and drops the set once
// it is empty: a map keeps the room of its largest size, and most
// subscriptions of a broker with many live topics have nothing pending
// most of the time (assign makes the set again).
func deletePending(m *map[position]*Entry, pos position) {
	delete(*m, pos)
	if len(*m) == 0 {
		*m = nil
	}
}

// unpend deletes pos from the subscription's pending set; once that is
// empty, every entry left in order is stale, and order goes too.
func (s *Subscription) unpend(pos position) {
	deletePending(&s.pending, pos)
	if s.pending == nil && s.order != nil {
		s.clearOrder()
	}
}

// takeFromOwner takes a pending entry from the consumer it was delivered to
// (its pending set and unacked count, if it is still there) and from the
// subscription's pending set, and returns that consumer (nil: none).
func (s *Subscription) takeFromOwner(pe *Entry) *Consumer {
	o := pe.owner
	if o != nil {
		if _, ok := o.pending[pe.pos]; ok {
			deletePending(&o.pending, pe.pos)
			s.addUnacked(o, -pe.numMsgs)
		}
		pe.owner = nil
	}
	s.unpend(pe.pos)
	return o
}

// unassign undoes assign for an entry that was not sent.
func (s *Subscription) unassign(pe *Entry) {
	c := pe.owner
	if c == nil {
		return
	}
	pe.owner = nil
	deletePending(&c.pending, pe.pos)
	s.unpend(pe.pos)
	c.permits += pe.numMsgs
	s.addUnacked(c, -pe.numMsgs)
	s.refreshBlocked()
}

// send sends an assigned entry (with its bytes) to its consumer, then
// drops the bytes unless the cursor cannot re-read them: a pending entry
// holds its position only.
func (s *Subscription) send(pe *Entry) {
	c := pe.owner
	c.msgOut += int64(pe.numMsgs)
	c.bytesOut += int64(len(pe.data))
	c.entriesOut++
	c.lastSent = time.Now().UnixMilli()
	s.msgOut += int64(pe.numMsgs)
	s.bytesOut += int64(len(pe.data))
	s.entriesOut++
	s.lastConsume = time.Now().UnixMilli()
	if l := s.limits.Load(); l != nil {
		now := time.Now()
		take(l.topic, now, pe.numMsgs, len(pe.data))
		take(l.sub, now, pe.numMsgs, len(pe.data))
	}
	var ackSet []int64
	if pe.numMsgs > 1 {
		ackSet = s.cur.BatchAckSet(pe.pos)
	}
	c.sink.SendMessage(c.id, pe.pos, pe.redeliveries, ackSet, pe.data)
	if !s.keepData {
		pe.data = nil
	}
}

func (s *Subscription) addDelayed(pe *Entry, at int64) {
	if !s.keepData {
		pe.data = nil // re-read when due
	}
	x := s.more()
	x.delayed.Push(at, pe)
	x.delayedMsgs += pe.numMsgs
	s.armDelay()
}

// armDelay sets the timer for the first delayed entry due (unless it
// is set for that time already).
func (s *Subscription) armDelay() {
	x := s.extra
	if x == nil || len(x.delayed) == 0 {
		return
	}
	at := x.delayed[0].At
	if s.delayTimer != nil {
		if x.delayTimerAt == at {
			return
		}
		s.delayTimer.Stop()
	}
	s.delayTimer, x.delayTimerAt = time.NewTimer(max(time.Until(time.UnixMilli(at)), 0)), at
}

// delayOn reports whether delayed delivery is on now.
func (s *Subscription) delayOn() bool {
	return s.delayActive == nil || s.delayActive()
}

// releaseDelayed moves due delayed entries into the replay set.
func (s *Subscription) releaseDelayed() {
	x := s.extra
	if x == nil {
		return
	}
	on := s.delayOn()
	now := time.Now().UnixMilli()
	for len(x.delayed) > 0 && (!on || x.delayed[0].At <= now) {
		d := x.delayed.Pop()
		x.delayedMsgs -= d.E.numMsgs
		s.replay.Add(d.E)
	}
	s.armDelay()
}

// throttle reports whether the dispatch rate limits stop dispatch now;
// if so a timer wakes the loop when they allow more.
func (s *Subscription) throttle() bool {
	l := s.limits.Load()
	if l == nil {
		return false
	}
	now := time.Now()
	d := max(wait(l.topic, now), wait(l.sub, now))
	if d <= 0 {
		return false
	}
	if !s.throttled {
		s.throttled = true
		time.AfterFunc(d, func() {
			s.Do(func() {
				s.throttled = false
				s.dispatch()
			})
		})
	}
	return true
}

// rateLimitedNow reports whether a dispatch rate limit allows no message
// now (without arming a timer).
func (s *Subscription) rateLimitedNow() bool {
	l := s.limits.Load()
	if l == nil {
		return false
	}
	now := time.Now()
	return wait(l.topic, now) > 0 || wait(l.sub, now) > 0
}

// limitRead caps a read at what the message rate limits allow now.
func (s *Subscription) limitRead(n int) int {
	l := s.limits.Load()
	if l == nil {
		return n
	}
	now := time.Now()
	b := min(budget(l.topic, now), budget(l.sub, now))
	return max(min(n, b), 1)
}
