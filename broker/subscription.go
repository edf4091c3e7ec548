package broker

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
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// cursor is the core's short name for storage.Cursor.
type cursor = storage.Cursor

// entryMeta is what dispatch needs from an entry's MessageMetadata.
type entryMeta struct {
	marker      int32 // marker_type; 0: a data entry
	numMsgs     int
	key         []byte
	deliverAt   int64
	publishTime int64
	chunk       chunkInfo
}

// subscription is one subscription of a topic. All its dispatch state
// (consumers, permits, pending acks, redelivery and replay sets, the
// cursor) is owned by one loop goroutine; other goroutines submit closures
// with do/call and never touch that state directly.
type subscription struct {
	name      string
	topic     string
	partition int
	cur       cursor
	// mc is the managed-ledger cursor behind cur (nil when not durable),
	// fixed at creation: other goroutines use it for cursor properties.
	mc *mledger.Cursor
	// parse decodes what dispatch needs of an entry; with md non-nil it
	// leaves the whole MessageMetadata there (for the dispatch filters).
	parse func(data []byte, md *pulsarproto.Metadata) (entryMeta, error)
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
	// replicated is set by a SUBSCRIBE with
	// replicate_subscription_state, by the admin API or by the
	// geo-replication feature (persisted as a cursor property, subops.go).
	replicated atomic.Bool
	typ        SubType // the loop's to change

	// owned by the loop
	sel       selector.Selector[*consumer]
	consumers []*consumer
	arrivals  uint64
	pending   map[position]*pendingEntry
	// order holds every entry of pending by position (and stale
	// entries, skipped), for cumulative acks (package entryset).
	order   entryset.Heap[*pendingEntry]
	replay  entryset.Replay[*pendingEntry] // to (re)deliver first, in position order
	unacked int                            // sum of unackedMsg over consumers
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
	// delayFn returns the topic's delayed-delivery policy (nil: active,
	// no tick).
	delayFn func() policy.DelayedDeliveryPolicies
	// chunkOwner: Shared/Key_Shared, the consumer that got the first
	// chunk of a chunked message (by uuid) and so gets all the others
	// (chunk.go).
	chunkOwner  map[string]*consumer
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
	win        rateWindow   // stats.go; has its own lock

	// limits are the dispatch rate limiters (limits.go), set by the
	// topic; throttled is set by the loop while a timer will wake it.
	limits atomic.Pointer[subLimits]

	// consistentHashing selects the Key_Shared ring (set before the
	// first consumer is added). lastRead is the last entry the cursor
	// returned (haveRead: any), the read position a Key_Shared consumer
	// joining now is restricted to (see keyshared.go).
	// created and lastDetach (unix ms) date the subscription's activity
	// for subscription expiry (SubLoop.LastActive).
	created, lastDetach int64
	lastRead            position

	// Features (extension.go): ext is the broker's (a persistent
	// topic's subscriptions only, nil otherwise: no dispatch filters, ack
	// hooks or replicated subscriptions), tv the topic's view for the
	// dispatch filters; slots are the features' values (SubSlot) and md
	// the filters' scratch metadata, both loop-owned.
	ext   *extensions
	tv    Topic
	slots []any
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
	delayed      entryset.DelayHeap[*pendingEntry] // Shared/Key_Shared: held until deliverAt
	delayedMsgs  int                               // messages in delayed
	delayTimerAt int64                             // unix ms delayTimer fires at
	notifyQ      []*consumer                       // Failover consumers to tell their state
}

// more returns s.extra, made on first use (loop state).
func (s *subscription) more() *subExtra {
	if s.extra == nil {
		s.extra = &subExtra{}
	}
	return s.extra
}

func newSubscription(name, topic string, typ SubType, partition int, cur cursor, parse func([]byte, *pulsarproto.Metadata) (entryMeta, error), batch *atomic.Int32, unackedFn func() (int, int), log *slog.Logger) *subscription {
	_, np := cur.(*npCursor)
	s := &subscription{
		name: name, topic: topic, typ: typ, partition: partition, cur: cur, mc: durableCursor(cur),
		parse: parse, batch: batch, log: log, unackedFn: unackedFn, keepData: np,
		created: time.Now().UnixMilli(),
		// pending is made on first use: most
		// subscriptions of a broker with many topics are idle.
	}
	s.win.roll(time.Now(), 0, 0, 0, 0, 0) // the first window starts now
	s.sel = newSelector(typ, partition, false, false)
	return s // the loop starts on the first do, call or consumer
}

func newSelector(typ SubType, partition int, sticky, consistent bool) selector.Selector[*consumer] {
	st := selector.TypeExclusive
	switch typ {
	case SubShared:
		st = selector.TypeShared
	case SubFailover:
		st = selector.TypeFailover
	case SubKeyShared:
		st = selector.TypeKeyShared
	}
	return selector.New[*consumer](st, partition, sticky, consistent)
}

var errSubClosed = errors.New("broker: subscription closed")

// addConsumer registers c on the loop; refusal is non-empty for
// ConsumerBusy conditions.
func (s *subscription) addConsumerLocked(c *consumer, typ SubType, sticky bool) string {
	if s.closedLoop {
		return "subscription is being closed"
	}
	if len(s.consumers) > 0 && typ != s.typ {
		return "Subscription is of different type"
	}
	if len(s.consumers) == 0 && (typ != s.typ || s.typ == SubKeyShared) {
		s.typ = typ
		s.sel = newSelector(typ, s.partition, sticky, s.consistentHashing)
	}
	var prevActive *consumer
	if fs, ok := s.sel.(*selector.Failover[*consumer]); ok {
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
	if fs, ok := s.sel.(*selector.Failover[*consumer]); ok {
		s.failoverChanged(prevActive, fs.Active(), c)
	}
	return ""
}

// failoverChanged sends ACTIVE_CONSUMER_CHANGE to every consumer but the
// newly added one (it is told after its SUCCESS, see notifyActiveLocked)
// when the active consumer changed, and moves the previous active
// consumer's pending entries back for the new one.
func (s *subscription) failoverChanged(prev, now, added *consumer) {
	if prev == now {
		return
	}
	for _, c := range s.consumers {
		if c != added {
			c.sink.sendActiveChange(c.id, c == now)
		}
	}
	if prev != nil {
		s.requeueAll(prev)
	}
}

// scheduleActiveNotifyLocked tells c after d whether it is the active
// consumer (see activeNotifyDelay).
func (s *subscription) scheduleActiveNotifyLocked(c *consumer, d time.Duration) {
	x := s.more()
	x.notifyQ = append(x.notifyQ, c)
	if s.notifyTimer == nil {
		s.notifyTimer = time.NewTimer(d)
	}
}

// notifyActiveLocked tells c whether it is the active consumer of a
// Failover subscription.
func (s *subscription) notifyActiveLocked(c *consumer) {
	if fs, ok := s.sel.(*selector.Failover[*consumer]); ok && !c.closed {
		c.sink.sendActiveChange(c.id, fs.Active() == c)
	}
}

// removeConsumerLocked detaches c, returning its pending entries for
// redelivery. It reports whether the subscription has no consumer left.
func (s *subscription) removeConsumerLocked(c *consumer) bool {
	i := slices.Index(s.consumers, c)
	if i < 0 {
		return len(s.consumers) == 0
	}
	var prevActive *consumer
	fs, isFailover := s.sel.(*selector.Failover[*consumer])
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
				o.sink.sendActiveChange(o.id, o == now)
			}
		}
	}
	s.dispatch()
	return len(s.consumers) == 0
}

func (s *subscription) anyPermits() bool {
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
func (s *subscription) pick(key []byte) *consumer {
	if s.blocked {
		return nil
	}
	return s.sel.Pick(key)
}

// dispatch delivers as much as permits allow: the replay set first (in
// position order), then new entries from the cursor.
func (s *subscription) dispatch() {
	if len(s.requeues) > 0 && s.typ != SubShared {
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
			s.wake()
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
		if n := s.replay.Len(); n > 0 && (s.typ != SubKeyShared || n >= maxReplay || s.replay.Bytes() >= maxReplayBytes) {
			if !progressed {
				return
			}
			continue
		}
		entries, err := s.cur.ReadEntries(s.limitRead(s.readSize()))
		if err != nil && !errors.Is(err, errNoEntries) {
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
				m, md = entryMeta{numMsgs: 1}, nil
			}
			if m.marker != 0 || s.skip(md) {
				// Server-only (or skipped by a DispatchFilter, such as
				// an entry of an aborted transaction): acknowledged,
				// never delivered.
				s.ackSkippedLocked(e, m.marker)
				continue
			}
			pe := &pendingEntry{pos: e.Pos, data: e.Data, numMsgs: max(m.numMsgs, 1), chunk: m.chunk}
			if len(m.key) > 0 {
				// A copy: the parsed key points into the entry's bytes,
				// which the pending entry must not keep alive.
				pe.key = append([]byte(nil), m.key...)
			}
			if s.held(pe) {
				continue // withheld by an AckHook (acknowledged in an open transaction)
			}
			if m.deliverAt > now && (s.typ == SubShared || s.typ == SubKeyShared) {
				if dd := s.delayPolicy(); dd.Active {
					s.addDelayed(pe, m.deliverAt)
					continue
				}
			}
			c := s.pickFor(pe)
			if c == nil || s.replay.Len() > 0 && s.typ != SubKeyShared {
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
func (s *subscription) filterMeta() *pulsarproto.Metadata {
	if len(s.filters()) == 0 {
		return nil
	}
	if s.md == nil {
		s.md = new(pulsarproto.Metadata)
	}
	return s.md
}

// skip reports whether a DispatchFilter skips an entry (md nil: its
// metadata did not parse, or there are no filters).
func (s *subscription) skip(md *pulsarproto.Metadata) bool {
	return skipEntry(s.filters(), s.tv, md)
}

// filters are the broker's DispatchFilters that s runs.
func (s *subscription) filters() []DispatchFilter {
	if s.ext == nil {
		return nil
	}
	return s.ext.filters
}

// ackHooks are the broker's AckHooks that s runs.
func (s *subscription) ackHooks() []AckHook {
	if s.ext == nil {
		return nil
	}
	return s.ext.acks
}

// replSubs is the replicated-subscriptions feature of s, or nil.
func (s *subscription) replSubs() ReplicatedSubscriptions {
	if s.ext == nil {
		return nil
	}
	return s.ext.replSubs
}

// held reports whether an AckHook withholds a freshly read entry.
func (s *subscription) held(pe *pendingEntry) bool {
	for _, h := range s.ackHooks() {
		if h.HeldEntry(SubLoop{s}, Withheld{pe}) {
			pe.data = nil
			return true
		}
	}
	return false
}

// replayPass assigns replay entries (in position order) to consumers, up
// to one read batch, re-reads the bytes of those that have none from
// storage in one call, and sends them. It reports whether anything was
// delivered or dropped, and whether it stopped because the batch was
// full (more of the replay set may be deliverable now).
func (s *subscription) replayPass() (progressed, full bool) {
	var batch []*pendingEntry
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
			if s.typ != SubKeyShared {
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
func (s *subscription) load(batch []*pendingEntry) (loaded, dropped int) {
	var missing []*pendingEntry
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
	if errors.Is(err, errEntryGone) {
		for _, pe := range missing {
			d, err := s.cur.ReadAt([]position{pe.pos})
			switch {
			case err == nil && len(d) == 1:
				pe.data = d[0]
				loaded++
			case errors.Is(err, errEntryGone):
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
func (s *subscription) readBatch() int { return int(s.batch.Load()) }

// readSize is how many entries to read next: no more than the permits
// available (every entry holds at least one message), so a consumer with
// a small window does not make the subscription read far ahead, and no
// more than the unacked limits leave room for. Key_Shared reads a full
// batch: entries for blocked keys wait in the replay set.
func (s *subscription) readSize() int {
	if s.typ == SubKeyShared {
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
func (s *subscription) unackedLimits() (perConsumer, perSub int) {
	if s.unackedFn == nil || (s.typ != SubShared && s.typ != SubKeyShared) {
		return 0, 0
	}
	return s.unackedFn()
}

// addUnacked changes c's unacked message count and the subscription's.
func (s *subscription) addUnacked(c *consumer, n int) {
	c.unackedMsg += n
	s.unacked += n
}

// refreshBlocked unblocks consumers and the subscription whose unacked
// count fell to half of their limit or below (or whose limit was lifted),
// as Pulsar does. It reports whether anything was unblocked.
func (s *subscription) refreshBlocked() bool {
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
func (s *subscription) assign(c *consumer, pe *pendingEntry) {
	s.noteChunk(c, pe)
	pe.owner = c
	if c.pending == nil {
		c.pending = make(map[position]*pendingEntry)
	}
	c.pending[pe.pos] = pe
	if s.pending == nil {
		s.pending = make(map[position]*pendingEntry)
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
func deletePending(m *map[position]*pendingEntry, pos position) {
	delete(*m, pos)
	if len(*m) == 0 {
		*m = nil
	}
}

// unpend deletes pos from the subscription's pending set; once that is
// empty, every entry left in order is stale, and order goes too.
func (s *subscription) unpend(pos position) {
	deletePending(&s.pending, pos)
	if s.pending == nil && s.order != nil {
		s.clearOrder()
	}
}

// unassign undoes assign for an entry that was not sent.
func (s *subscription) unassign(pe *pendingEntry) {
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
func (s *subscription) send(pe *pendingEntry) {
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
	c.sink.sendMessage(c.id, pe.pos, pe.redeliveries, ackSet, pe.data)
	if !s.keepData {
		pe.data = nil
	}
}

func (s *subscription) addDelayed(pe *pendingEntry, at int64) {
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
func (s *subscription) armDelay() {
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

// delayPolicy returns the topic's delayed-delivery policy now.
func (s *subscription) delayPolicy() policy.DelayedDeliveryPolicies {
	if s.delayFn == nil {
		return policy.DelayedDeliveryPolicies{Active: true}
	}
	return s.delayFn()
}

// releaseDelayed moves due delayed entries into the replay set.
func (s *subscription) releaseDelayed() {
	x := s.extra
	if x == nil {
		return
	}
	dd := s.delayPolicy()
	now := time.Now().UnixMilli()
	for len(x.delayed) > 0 && (!dd.Active || x.delayed[0].At <= now) {
		d := x.delayed.Pop()
		x.delayedMsgs -= d.E.numMsgs
		s.replay.Add(d.E)
	}
	s.armDelay()
}

// throttle reports whether the dispatch rate limits stop dispatch now;
// if so a timer wakes the loop when they allow more.
func (s *subscription) throttle() bool {
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
			s.do(func() {
				s.throttled = false
				s.dispatch()
			})
		})
	}
	return true
}

// rateLimitedNow reports whether a dispatch rate limit allows no message
// now (without arming a timer).
func (s *subscription) rateLimitedNow() bool {
	l := s.limits.Load()
	if l == nil {
		return false
	}
	now := time.Now()
	return wait(l.topic, now) > 0 || wait(l.sub, now) > 0
}

// limitRead caps a read at what the message rate limits allow now.
func (s *subscription) limitRead(n int) int {
	l := s.limits.Load()
	if l == nil {
		return n
	}
	now := time.Now()
	b := min(budget(l.topic, now), budget(l.sub, now))
	return max(min(n, b), 1)
}
