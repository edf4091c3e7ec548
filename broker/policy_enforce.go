package broker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
)

// policyCheckInterval is how often TTL expiry, backlog eviction and the
// release of held sends are evaluated (Pulsar checks every few minutes;
// admin changes and admin cursor moves trigger an immediate check).
const policyCheckInterval = time.Second

// policyRefreshTicks: the namespace policy cache is re-read from the
// metadata store every this many checks.
const policyRefreshTicks = 10

// topicPol is the per-topic state of namespace policies.
type topicPol struct {
	ns    string // "tenant/namespace"
	mu    sync.Mutex
	held  []heldSend        // sends held by producer_request_hold, in order
	dedup map[string]uint64 // producer name -> highest sequence id accepted
}

type heldSend struct {
	p            *producer
	seq, highest uint64
	numMsgs      int
	e            entryBuf
}

func (x *adminExt) topicState(t *topic) *topicPol {
	if v, ok := x.topics.Load(t); ok {
		return v.(*topicPol)
	}
	v, _ := x.topics.LoadOrStore(t, &topicPol{ns: t.name.NamespaceName(), dedup: map[string]uint64{}})
	return v.(*topicPol)
}

// ensureLoop starts the periodic policy check (once, owned by the
// broker's WaitGroup and stopped by its done channel).
func (x *adminExt) ensureLoop() {
	x.loopOnce.Do(func() {
		b := x.b
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.mu.closed {
			return
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			tk := time.NewTicker(policyCheckInterval)
			defer tk.Stop()
			for n := 1; ; n++ {
				select {
				case <-b.done:
					return
				case <-tk.C:
					if n%policyRefreshTicks == 0 {
						// Pick up policy writes made through other brokers.
						x.mu.Lock()
						clear(x.ns)
						x.mu.Unlock()
					}
					x.checkAll()
				}
			}
		}()
	})
}

// loadedTopics returns the loaded topics, optionally of one namespace.
func (b *Broker) loadedTopics(ns string) []*topic {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*topic
	for full, l := range b.mu.topics {
		select {
		case <-l.done:
		default:
			continue
		}
		if l.t == nil || (ns != "" && !strings.Contains(full, "://"+ns+"/")) {
			continue
		}
		out = append(out, l.t)
	}
	return out
}

// checkAll applies TTL, backlog quotas and releases held sends on every
// loaded topic; it also forgets the state of unloaded topics.
func (x *adminExt) checkAll() {
	live := map[*topic]bool{}
	for _, t := range x.b.loadedTopics("") {
		live[t] = true
		x.checkTopic(t)
	}
	x.topics.Range(func(k, v any) bool {
		if !live[k.(*topic)] {
			tp := v.(*topicPol)
			tp.mu.Lock()
			held := len(tp.held)
			tp.mu.Unlock()
			if held == 0 {
				x.topics.Delete(k)
			}
		}
		return true
	})
}

// policiesChanged re-evaluates the loaded topics of ns now.
func (x *adminExt) policiesChanged(ns string) {
	for _, t := range x.b.loadedTopics(ns) {
		x.checkTopic(t)
	}
}

func (x *adminExt) checkTopic(t *topic) {
	if !t.persistent() || t.isClosed() {
		return
	}
	pol := x.cachedPolicies(t.name.NamespaceName())
	if pol == nil {
		return
	}
	if ttl := pol.MessageTTLInSeconds; ttl != nil && *ttl > 0 {
		for _, s := range *t.subList.Load() {
			_ = x.expire(t, s, int64(*ttl))
		}
	}
	x.applyEviction(t, pol)
	x.release(t, pol)
}

// backlog returns the largest subscription backlog of t in bytes
// (estimated from the average entry size) and that subscription.
func backlogOf(t *topic) (int64, *subscription, int64) {
	entries, bytes := t.ml.Size()
	var avg int64
	if entries > 0 {
		avg = bytes / entries
	}
	var worst int64 = -1
	var slow *subscription
	for _, s := range *t.subList.Load() {
		if !s.cur.Durable() {
			continue
		}
		e, _ := s.cur.Backlog()
		if e*avg > worst {
			worst, slow = e*avg, s
		}
	}
	return max(worst, 0), slow, avg
}

// quotaExceeded reports the policy of the first backlog quota of t that
// is exceeded: destination_storage (limitSize bytes) or message_age
// (limitTime seconds since the oldest unacknowledged message).
func quotaExceeded(t *topic, pol *Policies) (string, bool) {
	if pol == nil || !t.persistent() || len(pol.BacklogQuotaMap) == 0 {
		return "", false
	}
	if q, ok := pol.BacklogQuotaMap["destination_storage"]; ok && q.LimitSize > 0 {
		if bl, _, _ := backlogOf(t); bl > q.LimitSize {
			return q.Policy, true
		}
	}
	if q, ok := pol.BacklogQuotaMap["message_age"]; ok && q.LimitTime > 0 {
		if backlogAge(t) > time.Duration(q.LimitTime)*time.Second {
			return q.Policy, true
		}
	}
	return "", false
}

// backlogAge is the age of the oldest message after the slowest durable
// cursor's mark-delete (0 without backlog).
func backlogAge(t *topic) time.Duration {
	var oldest int64
	for _, s := range *t.subList.Load() {
		ca, ok := s.cur.(*cursorAdapter)
		if !ok || !ca.c.IsDurable() {
			continue
		}
		next, ok := nextPosition(ca.ml.Stats().Ledgers, ca.c.MarkDeletePosition())
		if !ok {
			continue
		}
		data, err := t.ml.ReadEntry(toPos(next))
		if err != nil {
			continue
		}
		if pt, err := entryPublishTime(data); err == nil && pt > 0 && (oldest == 0 || pt < oldest) {
			oldest = pt
		}
	}
	if oldest == 0 {
		return 0
	}
	return time.Since(time.UnixMilli(oldest))
}

// applyEviction enforces consumer_backlog_eviction quotas.
func (x *adminExt) applyEviction(t *topic, pol *Policies) {
	if q, ok := pol.BacklogQuotaMap["destination_storage"]; ok && q.Policy == quotaEviction && q.LimitSize > 0 {
		x.evict(t, q.LimitSize)
	}
	if q, ok := pol.BacklogQuotaMap["message_age"]; ok && q.Policy == quotaEviction && q.LimitTime > 0 {
		for _, s := range *t.subList.Load() {
			if s.cur.Durable() {
				_ = x.expire(t, s, q.LimitTime)
			}
		}
	}
}

func (x *adminExt) evict(t *topic, limit int64) {
	for range 100 {
		bl, slow, avg := backlogOf(t)
		if bl <= limit || slow == nil || avg == 0 {
			return
		}
		n := (bl - limit + avg - 1) / avg
		ca, ok := slow.cur.(*cursorAdapter)
		if !ok {
			return
		}
		var err error
		slow.call(func() { err = ca.c.SkipEntries(n) })
		if err != nil {
			return
		}
	}
}

// expire acknowledges the messages of s published more than secs ago.
func (x *adminExt) expire(t *topic, s *subscription, secs int64) error {
	ca, ok := s.cur.(*cursorAdapter)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	cutoff := time.Now().UnixMilli() - secs*1000
	p, found, err := ca.ml.FindByPublishTime(ctx, cutoff, entryPublishTime)
	if err != nil {
		return err
	}
	s.call(func() {
		if !found {
			err = ca.c.ClearBacklog()
			return
		}
		prev, ok := positionBefore(ca.ml, p)
		if ok && ca.c.MarkDeletePosition().Less(prev) {
			err = ca.c.MarkDelete(prev)
		}
	})
	return err
}

// positionBefore returns the entry before p in ml.
func positionBefore(ml *mledger.ManagedLedger, p mledger.Position) (mledger.Position, bool) {
	if p.EntryID > 0 {
		return mledger.Position{LedgerID: p.LedgerID, EntryID: p.EntryID - 1}, true
	}
	var prev mledger.Position
	ok := false
	for _, l := range ml.Stats().Ledgers {
		if l.LedgerID >= p.LedgerID {
			break
		}
		if l.Entries > 0 {
			prev, ok = mledger.Position{LedgerID: l.LedgerID, EntryID: l.Entries - 1}, true
		}
	}
	return prev, ok
}

// release publishes held sends once the backlog is under its quota (or
// the quota went away).
func (x *adminExt) release(t *topic, pol *Policies) {
	tp := x.topicState(t)
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if len(tp.held) == 0 {
		return
	}
	// Sends of producers that went away while held are dropped without
	// an answer (their clients re-send on reconnect). The detach paths
	// drop them already; this catches a producer fenced meanwhile.
	x.filterHeldLocked(tp, func(h *heldSend) bool { return !t.attached(h.p) })
	if policy, over := quotaExceeded(t, pol); over && policy == quotaHold {
		return
	}
	held := tp.held
	tp.held = nil
	x.heldCount.Add(-int64(len(held)))
	for _, h := range held {
		x.publishLocked(tp, t, pol, h)
	}
}

// filterHeldLocked drops (answers with sendDropped) the held sends of tp
// that match drop; tp.mu is held.
func (x *adminExt) filterHeldLocked(tp *topicPol, drop func(*heldSend) bool) {
	kept := tp.held[:0]
	for i := range tp.held {
		h := &tp.held[i]
		if !drop(h) {
			kept = append(kept, *h)
			continue
		}
		h.p.sink.sendDropped(h.p.id, h.seq)
		x.heldCount.Add(-1)
	}
	clear(tp.held[len(kept):])
	tp.held = kept
}

// dropHeld drops the held sends that match drop, on every topic (a
// closing connection drops the sends of its producers this way).
func (x *adminExt) dropHeld(drop func(*heldSend) bool) {
	if x == nil || x.heldCount.Load() == 0 {
		return
	}
	x.topics.Range(func(_, v any) bool {
		tp := v.(*topicPol)
		tp.mu.Lock()
		x.filterHeldLocked(tp, drop)
		tp.mu.Unlock()
		return true
	})
}

// dropHeldOf drops the held sends of t by p, or by every producer if p
// is nil; it is called after p (or every producer) left t, without
// topic.mu held.
func (x *adminExt) dropHeldOf(t *topic, p *producer) {
	if x == nil || x.heldCount.Load() == 0 {
		return
	}
	v, ok := x.topics.Load(t)
	if !ok {
		return
	}
	tp := v.(*topicPol)
	tp.mu.Lock()
	x.filterHeldLocked(tp, func(h *heldSend) bool { return p == nil || h.p == p })
	tp.mu.Unlock()
}

// attached reports whether p is t's producer of its name.
func (t *topic) attached(p *producer) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mu.producers[p.name] == p
}

// policyPublish is the SEND path: it applies deduplication and backlog
// quotas of the topic's namespace, then publishes.
func (b *Broker) policyPublish(p *producer, seq, highest uint64, numMsgs int, e entryBuf) {
	t := p.topic
	x := b.ext
	tp := x.topicState(t)
	pol := x.cachedPolicies(tp.ns)
	if pol == nil || (pol.BacklogQuotaMap == nil && (pol.DeduplicationEnabled == nil || !*pol.DeduplicationEnabled)) {
		if !tp.hasHeld() {
			t.publish(p, seq, highest, numMsgs, e)
			return
		}
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	h := heldSend{p: p, seq: seq, highest: highest, numMsgs: numMsgs, e: e}
	if len(tp.held) > 0 {
		x.holdLocked(tp, t, h)
		return
	}
	if policy, over := quotaExceeded(t, pol); over {
		switch policy {
		case quotaHold:
			x.holdLocked(tp, t, h)
			return
		case quotaException:
			// As Pulsar: disconnect the producer; its reconnect is refused
			// with ProducerBlockedQuotaExceededException, which makes the
			// client fail its pending sends. The SEND is answered after
			// the CLOSE_PRODUCER (the client ignores that answer).
			t.removeProducer(p)
			p.sink.closeProducer(p)
			p.sink.sendSendError(p.id, seq, codeNotAllowed, msgQuotaException)
			return
		case quotaEviction:
			x.applyEviction(t, pol)
		}
	}
	x.publishLocked(tp, t, pol, h)
}

// holdLocked appends h to the held sends of t, unless its producer left
// t already (its detach drop may have run before this send got here):
// such a send is dropped. tp.mu is held.
func (x *adminExt) holdLocked(tp *topicPol, t *topic, h heldSend) {
	if !t.attached(h.p) {
		h.p.sink.sendDropped(h.p.id, h.seq)
		return
	}
	tp.held = append(tp.held, h)
	x.heldCount.Add(1)
}

func (tp *topicPol) hasHeld() bool {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return len(tp.held) > 0
}

func (x *adminExt) publishLocked(tp *topicPol, t *topic, pol *Policies, h heldSend) {
	if pol != nil && pol.DeduplicationEnabled != nil && *pol.DeduplicationEnabled && !x.b.cfg.Deduplication {
		hi := h.highest
		if hi < h.seq {
			hi = h.seq + uint64(max(h.numMsgs, 1)) - 1
		}
		if last, seen := tp.dedup[h.p.name]; seen && h.seq <= last {
			h.p.duplicate(h.seq)
			return
		}
		tp.dedup[h.p.name] = hi
	}
	t.publish(h.p, h.seq, h.highest, h.numMsgs, h.e)
}

// policyCheckProducer refuses a new producer on t when the namespace's
// max-producers limit or a blocking backlog quota applies.
func (b *Broker) policyCheckProducer(t *topic) (int32, string, bool) {
	pol := b.ext.cachedPolicies(t.name.NamespaceName())
	if pol == nil {
		return 0, "", true
	}
	if m := pol.MaxProducersPerTopic; m != nil && *m > 0 {
		t.mu.Lock()
		n := len(t.mu.producers) + len(t.mu.waiting)
		t.mu.Unlock()
		if n >= *m {
			return codeProducerBusy, fmt.Sprintf("Topic '%s' reached max producers limit", t.full), false
		}
	}
	if policy, over := quotaExceeded(t, pol); over {
		switch policy {
		case quotaHold:
			return codeProducerBlockedError, "Cannot create producer on topic with backlog quota exceeded", false
		case quotaException:
			return codeProducerBlockedException, msgQuotaException, false
		}
	}
	return 0, "", true
}

const msgQuotaException = "ProducerBlockedQuotaExceededException: Cannot create producer on topic with backlog quota exceeded"

const (
	codeProducerBlockedError     = int32(7)
	codeProducerBlockedException = int32(8)
)

// policyCheckConsumer refuses a new consumer on t at the namespace's
// max-consumers limit.
func (b *Broker) policyCheckConsumer(t *topic) (int32, string, bool) {
	pol := b.ext.cachedPolicies(t.name.NamespaceName())
	if pol == nil || pol.MaxConsumersPerTopic == nil || *pol.MaxConsumersPerTopic <= 0 {
		return 0, "", true
	}
	n := 0
	for _, s := range *t.subList.Load() {
		s.call(func() { n += len(s.consumers) })
	}
	if n >= *pol.MaxConsumersPerTopic {
		return codeConsumerBusy, fmt.Sprintf("Topic '%s' reached max consumers limit", t.full), false
	}
	return 0, "", true
}

// autoCreation returns whether tn may be auto-created and, for a
// partitioned override, the default partition count.
func (b *Broker) autoCreation(tn topicName) (allow bool, partitions int) {
	pol := b.ext.cachedPolicies(tn.NamespaceName())
	if pol == nil || pol.AutoTopicCreationOverride == nil {
		return !b.cfg.DisableAutoTopicCreation, 0
	}
	a := pol.AutoTopicCreationOverride
	if !a.Allow {
		return false, 0
	}
	if a.TopicType == "partitioned" && a.DefaultNumPartitions != nil {
		return true, *a.DefaultNumPartitions
	}
	return true, 0
}

// dedupEnabled reports whether t's namespace enables deduplication.
func (x *adminExt) dedupEnabled(t *topic) bool {
	if x == nil {
		return false
	}
	pol := x.cachedPolicies(x.topicState(t).ns)
	return pol != nil && pol.DeduplicationEnabled != nil && *pol.DeduplicationEnabled
}
