package broker

import (
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/txn"
)

// cursor is what a subscription needs from its managed-ledger cursor.
// The subscription's loop goroutine is its only user.
type cursor interface {
	// ReadEntries returns up to max entries from the read position and
	// advances it past them; none (and no error) when caught up. The
	// returned slice (not the entry data) is valid until the next call.
	ReadEntries(max int) ([]ledgerEntry, error)
	// Ack acknowledges single entries.
	Ack(pos ...position) error
	// AckBatchIndexes acknowledges the batch indexes whose bits are clear
	// in ackSet; it reports whether the whole entry is now acknowledged.
	AckBatchIndexes(pos position, ackSet []int64, batchSize int) (bool, error)
	// AckCumulative acknowledges every entry up to and including pos.
	AckCumulative(pos position) error
	// BatchAckSet returns the still-unacked bits of a partially acked
	// batch entry, or nil.
	BatchAckSet(pos position) []int64
	// MarkDelete returns the mark-delete position.
	MarkDelete() position
	// IsAcked reports whether pos was acknowledged (individually or
	// cumulatively).
	IsAcked(pos position) bool
	// Seek moves the read position to pos (inclusive), forgetting acks
	// at or after pos; Earliest/Latest sentinels are accepted.
	Seek(pos position) error
	// SeekTime moves the cursor to the first entry published at or after
	// tsMillis.
	SeekTime(tsMillis int64) error
	// Backlog returns the entries and messages not yet acknowledged.
	Backlog() (entries, messages int64)
	// Durable reports whether the cursor persists.
	Durable() bool
	// ReadAt re-reads the entries at ps (ascending) from storage, for
	// redelivery: pending entries keep positions, not payloads. An error
	// matching errEntryGone means some position is no longer stored
	// (trimmed or deleted); the caller re-reads one by one to find it.
	ReadAt(ps []position) ([][]byte, error)
}

// entryMeta is what dispatch needs from an entry's MessageMetadata.
type entryMeta struct {
	marker      int32 // marker_type; 0: a data entry
	numMsgs     int
	key         []byte
	deliverAt   int64
	publishTime int64
	chunk       chunkInfo
	hasTxn      bool   // produced in a transaction (txnID)
	txnID       txn.ID // with hasTxn
}

// subscription is one subscription of a topic. All its dispatch state
// (consumers, permits, pending acks, redelivery and replay sets, the
// cursor) is owned by one loop goroutine; other goroutines submit closures
// with do/call and never touch that state directly.
type subscription struct {
	name      string
	topic     string
	typ       SubType
	partition int
	cur       cursor
	// mc is the managed-ledger cursor behind cur (nil when not durable),
	// fixed at creation: other goroutines use it for cursor properties.
	mc    *mledger.Cursor
	parse func([]byte) (entryMeta, error)
	batch int
	log   *slog.Logger
	// unackedFn returns the topic's maxUnackedMessagesPerConsumer and
	// ...PerSubscription (0: unlimited); nil: none.
	unackedFn func() (perConsumer, perSub int)
	// keepData: the cursor has no storage to re-read from (a
	// non-persistent topic), so pending entries keep their bytes.
	keepData bool

	ops    chan func()
	notify chan struct{} // cap 1: new entries were persisted
	done   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
	// run says who owns the loop state: nobody (on false: the
	// subscription is idle and holds no goroutine), the loop goroutine,
	// or a call running its function inline (see claim). closed: close
	// began, nothing starts any more. running mirrors on for wake.
	run struct {
		sync.Mutex
		on, closed bool
	}
	running atomic.Bool

	// owned by the loop
	sel         selector
	consumers   []*consumer
	arrivals    uint64
	pending     map[position]*pendingEntry
	replay      []*pendingEntry // sorted by position; to (re)deliver first
	replayBytes int             // sum of len(data) over replay
	unacked     int             // sum of unackedMsg over consumers
	// blocked: Shared/Key_Shared dispatch is stopped because unacked
	// reached the per-subscription limit (until it is at most half).
	blocked bool
	// readFailLog rate-limits warnings for failed redelivery reads.
	readFailLog rateLog
	redelivered map[position]uint32
	// ackFailLog rate-limits the warnings for acks the cursor refused
	// (at most one line per second per subscription, ratelog.go).
	ackFailLog rateLog
	delayed    []*pendingEntry // Shared/Key_Shared: held until deliverAt
	delayTimer *time.Timer
	delayDue   map[position]int64
	// chunkOwner: Shared/Key_Shared, the consumer that got the first
	// chunk of a chunked message (by uuid) and so gets all the others
	// (chunk.go).
	chunkOwner  map[string]*consumer
	notifyQ     []*consumer // Failover consumers to tell their state
	notifyTimer *time.Timer
	keepEmpty   bool // a seek disconnected the consumers: keep the sub
	closedLoop  bool
	msgOut      int64
	bytesOut    int64
	redeliverN  int64
	lastAck     int64
	lastConsume int64

	ackedN     int64        // messages acknowledged
	expiredN   atomic.Int64 // messages expired by TTL
	lastExpire atomic.Int64 // unix ms of the last TTL expiry
	lastFlow   int64        // unix ms of the last FLOW
	win        rateWindow   // stats.go; has its own lock

	// limits are the dispatch rate limiters (ratelimit.go), set by the
	// topic; throttled is set by the loop while a timer will wake it.
	limits    atomic.Pointer[subLimits]
	throttled bool

	// consistentHashing selects the Key_Shared ring (set before the
	// first consumer is added). lastRead is the last entry the cursor
	// returned (haveRead: any), the read position a Key_Shared consumer
	// joining now is restricted to (see keyshared.go).
	consistentHashing bool
	// created and lastDetach (unix ms) date the subscription's activity
	// for subscription expiry (inactive.go).
	created, lastDetach int64
	lastRead            position
	haveRead            bool

	// Replicated subscriptions (replsub.go): replicated is set by a
	// SUBSCRIBE with replicate_subscription_state or by an UPDATE from
	// another cluster; snapshots (loop-owned) are the SNAPSHOT markers
	// passed; publishMarker and lastConfirmed reach the topic (nil on
	// non-persistent topics).
	replicated    atomic.Bool
	snapshots     []snapshotEntry
	publishMarker func(typ int32, replicateTo []string, payload []byte)
	lastConfirmed func() (position, bool)

	// Transactions: txnAborted reports an aborted transaction of the
	// topic (nil on non-persistent topics); txnAcks is the pending-ack
	// state (txn_pendingack.go), loop-owned, nil until used.
	txnAborted func(txn.ID) bool
	txnAcks    *pendingAcks
}

// Key_Shared reads ahead past entries whose consumer has no permits (they
// wait in the replay set) up to these bounds.
const (
	maxReplay      = 10000
	maxReplayBytes = 64 << 20
)

func newSubscription(name, topic string, typ SubType, partition int, cur cursor, parse func([]byte) (entryMeta, error), batch int, unackedFn func() (int, int), log *slog.Logger) *subscription {
	_, np := cur.(*npCursor)
	s := &subscription{
		name: name, topic: topic, typ: typ, partition: partition, cur: cur, mc: durableCursor(cur),
		parse: parse, batch: batch, log: log, unackedFn: unackedFn, keepData: np,
		ops:     make(chan func(), 16),
		notify:  make(chan struct{}, 1),
		done:    make(chan struct{}),
		created: time.Now().UnixMilli(),
		// pending and redelivered are made on first use: most
		// subscriptions of a broker with many topics are idle.
	}
	s.win.roll(time.Now(), 0, 0, 0, 0, 0) // the first window starts now
	s.sel = newSelector(typ, partition, false, false)
	return s // the loop starts on the first do, call or consumer
}

// A subscription without consumers, timers or queued work holds no
// goroutine: its loop exits when idle and do starts it again; call
// runs its function inline while the loop is stopped. Ownership of the
// loop state passes through run's mutex (happens-before for the state).

// idleLocked reports whether the loop has nothing to wait for (loop
// state; the caller owns it).
func (s *subscription) idleLocked() bool {
	return len(s.consumers) == 0 && s.delayTimer == nil && s.notifyTimer == nil && !s.throttled
}

// dropReadCtx releases the cursor's shared read deadline (and its
// timer) while the subscription sleeps.
func (s *subscription) dropReadCtx() {
	if a, ok := s.cur.(*cursorAdapter); ok && a.rcancel != nil {
		a.rcancel()
		a.rctx, a.rcancel = nil, nil
	}
}

// start starts the loop goroutine unless someone owns the state.
func (s *subscription) start() {
	s.run.Lock()
	defer s.run.Unlock()
	if s.run.on || s.run.closed {
		return
	}
	s.run.on = true
	s.running.Store(true)
	s.wg.Add(1)
	go s.loop()
}

// release gives up ownership of the loop state (held by a loop about to
// exit, or an inline call): if work is queued or the subscription is not
// idle, a loop goroutine takes over instead. It reports whether the
// state was released.
func (s *subscription) release(fromLoop bool) bool {
	s.run.Lock()
	defer s.run.Unlock()
	if !s.run.closed && (len(s.ops) > 0 || len(s.notify) > 0 || !s.idleLocked()) {
		if !fromLoop {
			s.wg.Add(1)
			go s.loop()
		}
		return false
	}
	s.run.on = false
	s.running.Store(false)
	return true
}

// claim takes the loop state for an inline call when nobody owns it.
func (s *subscription) claim() bool {
	s.run.Lock()
	defer s.run.Unlock()
	if s.run.on || s.run.closed {
		return false
	}
	s.run.on = true
	s.running.Store(true)
	return true
}

func newSelector(typ SubType, partition int, sticky, consistent bool) selector {
	switch typ {
	case SubShared:
		return &sharedSelector{}
	case SubFailover:
		return &failoverSelector{partition: max(partition, 0)}
	case SubKeyShared:
		return &keySharedSelector{sticky: sticky, consistent: consistent}
	}
	return &exclusiveSelector{}
}

func (s *subscription) loop() {
	defer s.wg.Done()
	var timerC, notifyC <-chan time.Time
	for {
		if s.idleLocked() {
			s.dropReadCtx()
			if s.release(true) {
				return
			}
		}
		timerC, notifyC = nil, nil
		if s.delayTimer != nil {
			timerC = s.delayTimer.C
		}
		if s.notifyTimer != nil {
			notifyC = s.notifyTimer.C
		}
		select {
		case f := <-s.ops:
			f()
		case <-notifyC:
			s.notifyTimer = nil
			for _, c := range s.notifyQ {
				s.notifyActiveLocked(c)
			}
			s.notifyQ = nil
		case <-s.notify:
			s.dispatch()
		case <-timerC:
			s.delayTimer = nil
			s.releaseDelayed()
			s.dispatch()
		case <-s.done:
			s.dropReadCtx()
			if s.delayTimer != nil {
				s.delayTimer.Stop()
			}
			if s.notifyTimer != nil {
				s.notifyTimer.Stop()
			}
			return
		}
	}
}

// do runs f on the loop goroutine. It reports false if the subscription
// is closed.
func (s *subscription) do(f func()) bool {
	select {
	case s.ops <- f:
		s.start()
		return true
	case <-s.done:
		return false
	}
}

// call runs f on the loop goroutine and waits for it.
func (s *subscription) call(f func()) bool {
	if s.claim() {
		// Idle: run f here, as the loop would, then hand over.
		f()
		s.release(false)
		return true
	}
	ch := make(chan struct{})
	if !s.do(func() { f(); close(ch) }) {
		return false
	}
	select {
	case <-ch:
		return true
	case <-s.done:
		// The loop may have taken f just as done closed and still be
		// running it: wait for the loop to exit, so that f either ran
		// to completion or never will (a caller reading what f wrote
		// must not race with it).
		s.wg.Wait()
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
}

// wake tells the loop that new entries are available. Never blocks.
func (s *subscription) wake() {
	if !s.running.Load() {
		return // no consumer: nothing to dispatch to (idleLocked)
	}
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// close stops the loop. It does not touch consumers: callers disconnect
// them first.
func (s *subscription) close() {
	s.run.Lock()
	s.run.closed = true
	s.run.Unlock()
	s.once.Do(func() { close(s.done) })
	s.wg.Wait()
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
	if fs, ok := s.sel.(*failoverSelector); ok {
		prevActive = fs.active()
	}
	s.arrivals++
	c.arrivalKey = s.arrivals
	if r := s.sel.add(c); r != "" {
		return r
	}
	s.consumers = append(s.consumers, c)
	s.lastDetach = time.Now().UnixMilli() // attach counts as activity
	s.noteJoinLocked(c)
	s.keepEmpty = false
	if fs, ok := s.sel.(*failoverSelector); ok {
		s.failoverChanged(prevActive, fs.active(), c)
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
	s.notifyQ = append(s.notifyQ, c)
	if s.notifyTimer == nil {
		s.notifyTimer = time.NewTimer(d)
	}
}

// notifyActiveLocked tells c whether it is the active consumer of a
// Failover subscription.
func (s *subscription) notifyActiveLocked(c *consumer) {
	if fs, ok := s.sel.(*failoverSelector); ok && !c.closed {
		c.sink.sendActiveChange(c.id, fs.active() == c)
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
	fs, isFailover := s.sel.(*failoverSelector)
	if isFailover {
		prevActive = fs.active()
	}
	s.consumers = slices.Delete(s.consumers, i, i+1)
	s.lastDetach = time.Now().UnixMilli()
	s.sel.remove(c)
	c.closed = true
	s.forgetChunksOf(c)
	s.requeueAll(c)
	s.refreshBlocked()
	if isFailover {
		now := fs.active()
		if now != prevActive {
			for _, o := range s.consumers {
				o.sink.sendActiveChange(o.id, o == now)
			}
		}
	}
	s.dispatch()
	return len(s.consumers) == 0
}

// requeueAll moves every pending entry of c to the replay set.
func (s *subscription) requeueAll(c *consumer) {
	for pos, pe := range c.pending {
		s.requeue(pe)
		delete(c.pending, pos)
	}
	s.unacked -= c.unackedMsg
	c.unackedMsg = 0
}

// requeue puts pe back for redelivery, counting one more redelivery on
// Shared and Key_Shared subscriptions. Exclusive and Failover keep no
// redelivery count (their messages carry redeliveryCount 0, as in
// Pulsar, whose single-active-consumer dispatcher tracks none).
func (s *subscription) requeue(pe *pendingEntry) {
	if pe.owner != nil {
		pe.owner.redeliverN += int64(pe.numMsgs)
		if _, ok := pe.owner.pending[pe.pos]; ok {
			delete(pe.owner.pending, pe.pos)
			s.addUnacked(pe.owner, -pe.numMsgs)
		}
		pe.owner = nil
	}
	delete(s.pending, pe.pos)
	if s.typ == SubShared || s.typ == SubKeyShared {
		if s.redelivered == nil {
			s.redelivered = make(map[position]uint32)
		}
		s.redelivered[pe.pos]++
	}
	s.redeliverN += int64(pe.numMsgs)
	s.insertReplay(pe)
}

func (s *subscription) insertReplay(pe *pendingEntry) {
	i, found := slices.BinarySearchFunc(s.replay, pe.pos, func(e *pendingEntry, p position) int {
		return e.pos.Compare(p)
	})
	if found {
		return
	}
	s.replay = slices.Insert(s.replay, i, pe)
	s.replayBytes += len(pe.data)
}

// setReplay replaces the replay set, recounting its bytes.
func (s *subscription) setReplay(r []*pendingEntry) {
	s.replay = r
	s.replayBytes = 0
	for _, pe := range r {
		s.replayBytes += len(pe.data)
	}
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
	return s.sel.pick(key)
}

// dispatch delivers as much as permits allow: the replay set first (in
// position order), then new entries from the cursor.
func (s *subscription) dispatch() {
	s.releaseJoined()
	for s.anyPermits() {
		if s.throttle() {
			return
		}
		progressed := false
		if len(s.replay) > 0 {
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
		if len(s.replay) > 0 && (s.typ != SubKeyShared || len(s.replay) >= maxReplay || s.replayBytes >= maxReplayBytes) {
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
			m, err := s.parse(e.Data)
			if err != nil {
				// Corrupt metadata: deliver as a single message and let
				// the client validate (it acks with validation_error).
				m = entryMeta{numMsgs: 1}
			}
			if m.marker != 0 || m.hasTxn && s.txnAborted != nil && s.txnAborted(m.txnID) {
				// Server-only (or of an aborted transaction):
				// acknowledged, never delivered.
				s.onMarkerLocked(e, m.marker)
				s.afterMarkDeleteLocked()
				continue
			}
			if s.txnAcks != nil && s.txnHeldRead(e.Pos, m.numMsgs) {
				continue // acknowledged in an open transaction
			}
			pe := &pendingEntry{pos: e.Pos, data: e.Data, numMsgs: max(m.numMsgs, 1), chunk: m.chunk}
			if len(m.key) > 0 {
				// A copy: the parsed key points into the entry's bytes,
				// which the pending entry must not keep alive.
				pe.key = append([]byte(nil), m.key...)
			}
			if m.deliverAt > now && (s.typ == SubShared || s.typ == SubKeyShared) {
				s.addDelayed(pe, m.deliverAt)
				continue
			}
			c := s.pickFor(pe)
			if c == nil || len(s.replay) > 0 && s.typ != SubKeyShared {
				s.insertReplay(pe)
				continue
			}
			s.assign(c, pe)
			s.send(pe)
		}
	}
}

// replayPass assigns replay entries (in position order) to consumers, up
// to one read batch, re-reads the bytes of those that have none from
// storage in one call, and sends them. It reports whether anything was
// delivered or dropped, and whether it stopped because the batch was
// full (more of the replay set may be deliverable now).
func (s *subscription) replayPass() (progressed, full bool) {
	var batch []*pendingEntry
	keep := s.replay[:0]
	for i, pe := range s.replay {
		if len(batch) >= s.batch {
			full = true
		}
		if full || !s.anyPermits() || s.throttle() {
			keep = append(keep, s.replay[i:]...)
			break
		}
		if s.cur.IsAcked(pe.pos) {
			delete(s.redelivered, pe.pos)
			progressed = true
			continue
		}
		c := s.pickFor(pe)
		if c == nil {
			keep = append(keep, pe)
			if s.typ != SubKeyShared {
				keep = append(keep, s.replay[i+1:]...)
				break
			}
			continue
		}
		s.assign(c, pe)
		batch = append(batch, pe)
	}
	clear(s.replay[len(keep):])
	s.setReplay(keep)
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
				delete(s.redelivered, pe.pos)
				dropped++
			default:
				s.unassign(pe)
				s.insertReplay(pe)
			}
		}
		return loaded, dropped
	}
	s.readFailLog.log(s.log, slog.LevelWarn, "redelivery read failed", "topic", s.topic, "sub", s.name, "entries", len(missing), "err", err)
	for _, pe := range missing {
		s.unassign(pe)
		s.insertReplay(pe)
	}
	return loaded, 0
}

// readSize is how many entries to read next: no more than the permits
// available (every entry holds at least one message), so a consumer with
// a small window does not make the subscription read far ahead, and no
// more than the unacked limits leave room for. Key_Shared reads a full
// batch: entries for blocked keys wait in the replay set.
func (s *subscription) readSize() int {
	if s.typ == SubKeyShared {
		return s.batch
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
			if n >= s.batch {
				n = s.batch
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
	c.pending[pe.pos] = pe
	if s.pending == nil {
		s.pending = make(map[position]*pendingEntry)
	}
	s.pending[pe.pos] = pe
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

// unassign undoes assign for an entry that was not sent.
func (s *subscription) unassign(pe *pendingEntry) {
	c := pe.owner
	if c == nil {
		return
	}
	pe.owner = nil
	delete(c.pending, pe.pos)
	delete(s.pending, pe.pos)
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
	s.lastConsume = time.Now().UnixMilli()
	if l := s.limits.Load(); l != nil {
		now := time.Now()
		l.topic.limiter().take(now, pe.numMsgs, len(pe.data))
		l.sub.limiter().take(now, pe.numMsgs, len(pe.data))
	}
	var ackSet []int64
	if pe.numMsgs > 1 {
		ackSet = s.cur.BatchAckSet(pe.pos)
	}
	c.sink.sendMessage(c.id, pe.pos, s.redelivered[pe.pos], ackSet, pe.data)
	if !s.keepData {
		pe.data = nil
	}
}

func (s *subscription) addDelayed(pe *pendingEntry, at int64) {
	if !s.keepData {
		pe.data = nil // re-read when due
	}
	s.delayed = append(s.delayed, pe)
	slices.SortStableFunc(s.delayed, func(a, b *pendingEntry) int { return a.pos.Compare(b.pos) })
	s.delayedAt(pe, at)
	s.armDelay()
}

// delayedAt remembers when a delayed entry becomes deliverable.
func (s *subscription) delayedAt(pe *pendingEntry, at int64) {
	if s.delayDue == nil {
		s.delayDue = make(map[position]int64)
	}
	s.delayDue[pe.pos] = at
}

func (s *subscription) armDelay() {
	if len(s.delayed) == 0 {
		return
	}
	next := int64(-1)
	for _, pe := range s.delayed {
		if at := s.delayDue[pe.pos]; next < 0 || at < next {
			next = at
		}
	}
	d := time.Until(time.UnixMilli(next))
	if s.delayTimer != nil {
		s.delayTimer.Stop()
	}
	s.delayTimer = time.NewTimer(max(d, 0))
}

// releaseDelayed moves due delayed entries into the replay set.
func (s *subscription) releaseDelayed() {
	now := time.Now().UnixMilli()
	keep := s.delayed[:0]
	for _, pe := range s.delayed {
		if s.delayDue[pe.pos] <= now {
			delete(s.delayDue, pe.pos)
			s.insertReplay(pe)
			continue
		}
		keep = append(keep, pe)
	}
	s.delayed = keep
	s.armDelay()
}

// throttle reports whether the dispatch rate limits stop dispatch now;
// if so a timer wakes the loop when they allow more.
func (s *subscription) throttle() bool {
	l := s.limits.Load()
	if l == nil || (l.topic == nil && l.sub == nil) {
		return false
	}
	now := time.Now()
	d := max(l.topic.limiter().wait(now), l.sub.limiter().wait(now))
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
	return l.topic.limiter().wait(now) > 0 || l.sub.limiter().wait(now) > 0
}

// limitRead caps a read at what the message rate limits allow now.
func (s *subscription) limitRead(n int) int {
	l := s.limits.Load()
	if l == nil {
		return n
	}
	now := time.Now()
	b := min(l.topic.limiter().budget(now), l.sub.limiter().budget(now))
	return max(min(n, b), 1)
}
