package broker

import (
	"errors"
	"fmt"
	"time"

	"github.com/magnetar-mq/magnetar/broker/storage"
)

// subscribeReq is a SUBSCRIBE as the topic needs it.
type subscribeReq struct {
	sub      string
	typ      SubType
	durable  bool
	initial  initialPosition
	start    *position // non-durable start id, nil: use initial
	sticky   bool
	consumer *consumer
	// replicated: replicate_subscription_state (subops.go).
	replicated bool
	// readCompacted: read the compacted view, then the tail
	// (the compaction feature's cursor, CompactedReads).
	readCompacted bool
}

// errSubscribe is a refusal of SUBSCRIBE with the ServerError to report.
type errSubscribe struct {
	code int32
	msg  string
}

func (e *errSubscribe) Error() string { return e.msg }

const refusalClosing = "subscription is being closed"

// subscribe attaches req.consumer to the named subscription, creating the
// subscription (and its cursor) if needed.
func (t *topic) subscribe(req subscribeReq) (*subscription, error) {
	for attempt := 0; attempt < 10; attempt++ {
		s, err := t.getOrCreateSub(req)
		if err != nil {
			return nil, err
		}
		if req.replicated && t.persistent() {
			s.markReplicated(true)
		}
		var refusal string
		code := codeConsumerBusy
		ok := s.call(func() {
			if se := t.b.ext.admit(func(a Admission) *SendError { return a.AdmitSubscriber(Topic{t}, len(s.consumers)) }); se != nil {
				refusal, code = se.Msg, int32(se.Code)
				return
			}
			refusal = s.addConsumerLocked(req.consumer, req.typ, req.sticky)
		})
		if !ok || refusal == refusalClosing {
			continue // the subscription went away under us; retry
		}
		if refusal != "" {
			return nil, &errSubscribe{code, refusal}
		}
		return s, nil
	}
	return nil, &errSubscribe{codeServiceNotReady, "subscription keeps closing"}
}

// compactedCursor returns the cursor of a read_compacted subscription
// over cur: the compaction feature's (CompactedReads), or cur without it.
func (t *topic) compactedCursor(cur cursor) cursor {
	if h := t.b.ext.compacted; h != nil {
		if c := h.CompactedCursor(Topic{t}, cur); c != nil {
			return c
		}
	}
	return cur
}

func (t *topic) getOrCreateSub(req subscribeReq) (*subscription, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.closed {
		return nil, &errSubscribe{codeServiceNotReady, "topic is being unloaded"}
	}
	if s := t.mu.subs.get(req.sub); s != nil {
		if req.readCompacted && t.persistent() {
			// A durable subscription loaded at topic load (or created
			// without read_compacted) switches while it has no consumer.
			s.call(func() {
				if _, ok := s.cur.(*storage.LedgerCursor); ok && len(s.consumers) == 0 {
					s.cur = t.compactedCursor(s.cur)
				}
			})
		}
		return s, nil
	}
	// Asked under t.mu, which creating the subscription below holds: a
	// bound on the count holds against concurrent SUBSCRIBEs.
	if se := t.b.ext.admit(func(a Admission) *SendError {
		return a.AdmitSubscription(Topic{t}, len(t.mu.subs), req.durable)
	}); se != nil {
		return nil, &errSubscribe{int32(se.Code), se.Msg}
	}
	var cur cursor
	var err error
	switch {
	case !t.persistent():
		cur = newNPCursor()
	case req.durable:
		cur, err = t.ml.OpenCursor(req.sub, req.initial)
	default:
		start := posLatest
		if req.initial == initialEarliest {
			start = posEarliest
		}
		if req.start != nil {
			start = *req.start
		}
		cur, err = t.ml.NewNonDurableCursor(req.sub, start)
	}
	if err != nil {
		return nil, &errSubscribe{codeUnknownError, fmt.Sprintf("open cursor: %v", err)}
	}
	if _, ok := cur.(*storage.LedgerCursor); ok && req.readCompacted {
		cur = t.compactedCursor(cur)
	}
	return t.addSubLocked(req.sub, req.typ, cur), nil
}

// addSubLocked makes the subscription name of cur and adds it to the
// topic. Every subscription is made here, whichever path creates it (a
// SUBSCRIBE, the topic's load of its stored cursors, the admin API's
// create, a feature's OpenSubscription), so every one is set up alike:
// the topic's policy hooks (delayed delivery, unacked limits, dispatch
// rate limits), the replicated flag a durable cursor stored, and, on a
// persistent topic, the features' dispatch filters, ack hooks and
// replicated-subscription feature (extension.go). The caller holds t.mu
// and checked that name is free.
func (t *topic) addSubLocked(name string, typ SubType, cur cursor) *subscription {
	s := newSubscription(name, t.name.String(), typ, t.name.PartitionIndex, cur, dispatchEntryMeta, &t.b.tun.dispatchBatch, t.pol.unackedLimits, t.log)
	s.delayFn = t.pol.delayedDelivery
	s.consistentHashing = t.b.cfg.KeySharedUseConsistentHashing
	s.loadReplicated()
	if t.persistent() {
		s.tv, s.ext = Topic{t}, &t.b.ext
	}
	t.mu.subs.put(s)
	t.publishSubsLocked()
	t.limits.install(s)
	return s
}

// loadSubscription creates the subscription of an existing durable cursor
// at topic load, so it shows in stats and keeps its backlog.
func (t *topic) loadSubscription(name string) error {
	cur, err := t.ml.OpenCursor(name, initialLatest)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.addSubLocked(name, SubExclusive, cur)
	t.mu.Unlock()
	return nil
}

// removeConsumer detaches c (client close or connection loss); its
// unacked entries go back for redelivery. A non-durable subscription left
// without consumers is deleted.
func (t *topic) removeConsumer(s *subscription, c *consumer) {
	t.lastUsed.mark(time.Now())
	var empty, drop bool
	s.call(func() {
		empty = s.removeConsumerLocked(c)
		drop = empty && !s.cur.Durable() && !s.keepEmpty
	})
	if drop {
		t.dropSubIfEmpty(s)
	}
}

// dropSubIfEmpty deletes a non-durable subscription that still has no
// consumers.
func (t *topic) dropSubIfEmpty(s *subscription) {
	t.mu.Lock()
	if t.mu.subs.get(s.name) != s {
		t.mu.Unlock()
		return
	}
	var still bool
	// Called with topic.mu held: the loop never takes topic.mu, so this
	// cannot deadlock; it makes "empty" and "removed" atomic with respect
	// to getOrCreateSub.
	s.call(func() {
		still = len(s.consumers) == 0
		if still {
			s.closedLoop = true
		}
	})
	if !still {
		t.mu.Unlock()
		return
	}
	t.mu.subs.del(s.name)
	t.publishSubsLocked()
	t.mu.Unlock()
	s.close()
	if t.persistent() {
		_ = t.ml.DeleteCursor(s.name)
	}
}

// unsubscribe deletes the subscription of consumer c. Without force it
// fails while other consumers are attached; with force it disconnects
// them.
func (t *topic) unsubscribe(s *subscription, c *consumer, force bool) error {
	var err error
	t.mu.Lock()
	defer func() {
		if err == nil {
			t.mu.subs.del(s.name)
			t.publishSubsLocked()
		}
		t.mu.Unlock()
		if err == nil {
			s.close()
			if t.persistent() {
				if derr := t.ml.DeleteCursor(s.name); derr != nil && !errors.Is(derr, errCursorNotFound) {
					t.log.Warn("delete cursor", "topic", t.name.String(), "sub", s.name, "err", derr)
				}
			}
		}
	}()
	ok := s.call(func() {
		for _, o := range s.consumers {
			if o != c && !force {
				err = &errSubscribe{codeUnknownError, "Subscription has active connected consumers"}
				return
			}
		}
		for _, o := range s.consumers {
			s.sel.Remove(o)
			o.closed = true
			if o != c {
				o.sink.closeConsumer(o)
			}
		}
		s.consumers = nil
		s.consumersChanged()
		s.closedLoop = true
	})
	if !ok {
		err = &errSubscribe{codeSubscriptionNotFound, "subscription already closed"}
	}
	return err
}

// seek handles SEEK in Pulsar's order: disconnect every consumer of the
// subscription (CLOSE_CONSUMER), move the cursor, then answer. A client
// thus has its CLOSE_CONSUMER before the answer: pulsar-client-go
// relies on it, reconnecting before it sends anything else on that
// consumer (an answer first let its next SEEK reach the closed consumer
// id: ConsumerNotFound).
func (t *topic) seek(s *subscription, pos position, byTime bool, ts int64, answered func(error)) {
	ok := s.call(func() {
		s.disconnectAllLocked(true)
		answered(s.seekLocked(pos, byTime, ts))
	})
	if !ok {
		answered(errSubClosed)
	}
}

// dispatchNonPersistent hands an entry to every subscription of a
// non-persistent topic; subscriptions whose consumers have no permits,
// or whose dispatch rate limit is exhausted, drop it (as Pulsar does).
func (t *topic) dispatchNonPersistent(e ledgerEntry) {
	for _, s := range *t.subList.Load() {
		s.do(func() {
			if !s.anyPermits() || s.rateLimitedNow() {
				return
			}
			s.cur.(*npCursor).push(e)
			s.dispatch()
		})
	}
}

// closeAll disconnects every producer and consumer (unload, delete,
// broker shutdown) and stops the subscriptions.
func (t *topic) closeAll(notify bool) {
	t.mu.Lock()
	t.mu.closed = true
	prods := make([]*producer, 0, len(t.mu.producers)+len(t.mu.waiting))
	for _, p := range t.mu.producers {
		prods = append(prods, p)
	}
	prods = append(prods, t.mu.waiting...)
	t.mu.producers = nil
	t.mu.waiting = nil
	t.mu.exclusive = nil
	subs := make([]*subscription, 0, len(t.mu.subs))
	for _, s := range t.mu.subs {
		subs = append(subs, s)
	}
	t.mu.subs = nil
	t.publishSubsLocked()
	t.mu.Unlock()
	for _, p := range prods {
		if notify {
			p.sink.closeProducer(p)
		}
	}
	t.held.drop(heldBy(nil))
	for _, s := range subs {
		s.call(func() {
			for _, c := range s.consumers {
				s.sel.Remove(c)
				c.closed = true
				if notify {
					c.sink.closeConsumer(c)
				}
			}
			s.consumers = nil
			s.consumersChanged()
			s.closedLoop = true
		})
		s.close()
	}
	for _, h := range t.b.ext.topics {
		h.CloseTopic(Topic{t})
	}
}

// npCursor is the cursor of a non-persistent subscription: a queue of
// entries published while some consumer had permits.
type npCursor struct{ q []ledgerEntry }

func newNPCursor() *npCursor { return &npCursor{} }

func (c *npCursor) push(e ledgerEntry) { c.q = append(c.q, e) }
func (c *npCursor) ReadEntries(max int) ([]ledgerEntry, error) {
	n := min(max, len(c.q))
	out := c.q[:n:n]
	c.q = c.q[n:]
	if len(c.q) == 0 {
		c.q = nil
	}
	return out, nil
}
func (c *npCursor) Ack(...position) error { return nil }
func (c *npCursor) AckBatchIndexes(position, []int64, int) (bool, error) {
	return true, nil
}
func (c *npCursor) AckCumulative(position) error { return nil }
func (c *npCursor) BatchAckSet(position) []int64 { return nil }
func (c *npCursor) MarkDelete() position         { return position{LedgerID: 0, EntryID: -1} }
func (c *npCursor) IsAcked(position) bool        { return false }
func (c *npCursor) Seek(position) error          { c.q = nil; return nil }
func (c *npCursor) SeekTime(int64) error         { c.q = nil; return nil }
func (c *npCursor) Backlog() (int64, int64)      { return 0, 0 }
func (c *npCursor) Durable() bool                { return false }

// ReadAt: a non-persistent topic stores nothing (its pending entries keep
// their bytes instead).
func (c *npCursor) ReadAt(ps []position) ([][]byte, error) { return nil, errEntryGone }

// ensureSubscription creates a durable subscription at the end of the
// topic if it does not exist (PRODUCER's initial_subscription_name).
func (t *topic) ensureSubscription(name string) error {
	t.mu.Lock()
	ok := t.mu.subs.get(name) != nil
	t.mu.Unlock()
	if ok {
		return nil
	}
	_, err := t.getOrCreateSub(subscribeReq{sub: name, typ: SubExclusive, durable: true, initial: initialLatest})
	return err
}
