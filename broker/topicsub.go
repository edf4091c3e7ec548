package broker

import (
	"errors"
	"fmt"
	"time"

	"github.com/magnetar-mq/magnetar/broker/dispatch"
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
	// replicated: replicate_subscription_state (subscription.go).
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

var errSubClosed = errors.New("broker: subscription closed")

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
		ok := s.Call(func() {
			if se := t.b.ext.admit(func(a Admission) *SendError { return a.AdmitSubscriber(Topic{t}, s.Consumers()) }); se != nil {
				refusal, code = se.Msg, int32(se.Code)
				return
			}
			refusal = s.AddConsumer(req.consumer, req.typ, req.sticky)
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
			s.Call(func() {
				if _, ok := s.Cursor().(*storage.LedgerCursor); ok && s.Consumers() == 0 {
					s.SetCursor(t.compactedCursor(s.Cursor()))
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
		cur = dispatch.NewQueueCursor()
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
	s := newSubscription(t, name, typ, cur)
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
	var drop bool
	s.Call(func() { drop = s.RemoveConsumer(c) })
	if drop {
		t.dropSubIfEmpty(s)
	}
}

// dropSubIfEmpty deletes a non-durable subscription that still has no
// consumers.
func (t *topic) dropSubIfEmpty(s *subscription) {
	t.mu.Lock()
	if t.mu.subs.get(s.Name()) != s {
		t.mu.Unlock()
		return
	}
	var still bool
	// Called with topic.mu held: the loop never takes topic.mu, so this
	// cannot deadlock; it makes "empty" and "removed" atomic with respect
	// to getOrCreateSub.
	s.Call(func() { still = s.RetireIfEmpty() })
	if !still {
		t.mu.Unlock()
		return
	}
	t.mu.subs.del(s.Name())
	t.publishSubsLocked()
	t.mu.Unlock()
	s.Close()
	if t.persistent() {
		_ = t.ml.DeleteCursor(s.Name())
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
			t.mu.subs.del(s.Name())
			t.publishSubsLocked()
		}
		t.mu.Unlock()
		if err == nil {
			s.Close()
			if t.persistent() {
				if derr := t.ml.DeleteCursor(s.Name()); derr != nil && !errors.Is(derr, errCursorNotFound) {
					t.log.Warn("delete cursor", "topic", t.name.String(), "sub", s.Name(), "err", derr)
				}
			}
		}
	}()
	ok := s.Call(func() {
		if !force && s.Others(c) {
			err = &errSubscribe{codeUnknownError, "Subscription has active connected consumers"}
			return
		}
		s.Retire(true, c)
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
	ok := s.Call(func() {
		s.DisconnectAll(true)
		answered(s.Seek(pos, byTime, ts))
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
		s.Do(func() { s.Offer(e) })
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
		s.Call(func() { s.Retire(notify, nil) })
		s.Close()
	}
	for _, h := range t.b.ext.topics {
		h.CloseTopic(Topic{t})
	}
}

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
