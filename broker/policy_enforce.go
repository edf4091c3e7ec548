package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/policy"
)

// Policy enforcement on the topics this broker owns. Each topic holds its
// resolved policy (topic.pol, a *policy.Resolved swapped whole) and its
// policy state (topic.held: sends held by a backlog quota, namespace
// deduplication). The broker subscribes to the policy store: a change to
// a namespace re-resolves its loaded topics, reopens those whose
// retention changed (unload; clients reconnect) and re-evaluates the
// others at once.
//
//   - backlog quotas: destination_storage bounds the largest durable
//     subscription backlog in bytes (entries x average entry size),
//     message_age the age of the oldest message after the slowest
//     mark-delete. producer_request_hold keeps SENDs in a per-topic FIFO
//     until the backlog is under the limit (checked on every admin cursor
//     move and every policyCheckInterval) and refuses new producers with
//     ProducerBlockedQuotaExceededError; producer_exception disconnects
//     the producer and refuses it with
//     ProducerBlockedQuotaExceededException; consumer_backlog_eviction
//     skips entries of the slowest cursor.
//   - message TTL: every policyCheckInterval, cursors mark-delete the
//     entries published before now-TTL.
//   - deduplication (when the broker-wide Config.Deduplication is off): a
//     per-topic highest sequence id per producer name; a resent id gets a
//     receipt without being stored.
//   - max producers/consumers per topic: PRODUCER/SUBSCRIBE refused.
//   - auto topic creation override: partitioned auto creation happens at
//     PARTITIONED_METADATA time; disallowed creation fails the lookup.
//   - retention: applied when a topic's managed ledger opens (LedgerOpener
//     reads it from the context).

// policyCheckInterval is how often TTL expiry, backlog eviction and the
// release of held sends are evaluated (Pulsar checks every few minutes;
// admin changes and admin cursor moves trigger an immediate check).
const policyCheckInterval = time.Second

// policyRefreshTicks: the policy cache is re-read from the metadata
// store every this many checks (writes made through other brokers).
const policyRefreshTicks = 10

type heldSend struct {
	p            *producer
	seq, highest uint64
	numMsgs      int
	e            entryBuf
}

func (b *Broker) policyDefaults() policy.Defaults {
	c := &b.cfg
	return policy.Defaults{
		Deduplication:     c.Deduplication,
		AutoTopicCreation: !c.DisableAutoTopicCreation,
		Cluster:           c.ClusterName,
		PublishRate: policy.PublishRate{PublishThrottlingRateInMsg: c.MaxPublishRatePerTopicInMessages,
			PublishThrottlingRateInByte: c.MaxPublishRatePerTopicInBytes},
		DispatchRate: policy.DispatchRate{DispatchThrottlingRateInMsg: c.DispatchThrottlingRatePerTopicInMsg,
			DispatchThrottlingRateInByte: c.DispatchThrottlingRatePerTopicInByte, RatePeriodInSecond: 1},
		SubscriptionDispatchRate: policy.DispatchRate{DispatchThrottlingRateInMsg: c.DispatchThrottlingRatePerSubscriptionInMsg,
			DispatchThrottlingRateInByte: c.DispatchThrottlingRatePerSubscriptionInByte, RatePeriodInSecond: 1},
		ReplicatorDispatchRate: policy.DispatchRate{DispatchThrottlingRateInMsg: c.DispatchThrottlingRatePerReplicatorInMsg,
			DispatchThrottlingRateInByte: c.DispatchThrottlingRatePerReplicatorInByte, RatePeriodInSecond: 1},
		SubscribeRate: policy.SubscribeRate{SubscribeThrottlingRatePerConsumer: c.SubscribeThrottlingRatePerConsumer,
			RatePeriodInSecond: c.SubscribeRatePeriodPerConsumerInSecond},
		InactiveTopic: policy.InactiveTopicPolicies{DeleteWhileInactive: !c.DisableDeleteInactiveTopics,
			InactiveTopicDeleteMode:    c.DeleteInactiveTopicsMode,
			MaxInactiveDurationSeconds: int(c.DeleteInactiveTopicsMaxInactiveDuration / time.Second)},
		SubscriptionExpirationMinutes: c.SubscriptionExpirationTimeMinutes,
		MaxUnackedPerConsumer:         max(c.MaxUnackedPerConsumer, 0),
		MaxUnackedPerSubscription:     max(c.MaxUnackedPerSubscription, 0),
	}
}

// topicPolicyKey is the policy.Store key of tn's topic-level policies
// (a partition uses its partitioned topic's).
func topicPolicyKey(tn topicName) string {
	p := tn.Parent()
	return policy.TopicKey(p.Domain, p.Tenant, p.Namespace, escapeLocal(p.Local))
}

// resolvePolicies returns the effective policy of topic tn: its
// topic-level policies over its namespace's over the broker defaults (a
// layer that cannot be read is skipped, with a warning).
func (b *Broker) resolvePolicies(tn topicName) *policy.Resolved {
	ns := tn.NamespaceName()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	p := b.policies.Cached(ns)
	if p == nil {
		var err error
		if p, err = b.policies.Get(ctx, ns); err != nil {
			b.log.Warn("read namespace policies", "namespace", ns, "err", err)
			p = nil
		}
	}
	key := topicPolicyKey(tn)
	tp, ok := b.policies.CachedTopic(key)
	if !ok {
		var err error
		if tp, err = b.policies.GetTopic(ctx, key); err != nil {
			b.log.Warn("read topic policies", "topic", tn.String(), "err", err)
			tp = nil
		}
	}
	return policy.Resolve(b.policyDefaults(), tp.Layer(b.cfg.ClusterName), p)
}

// policiesChanged is the policy store subscription: ns ("" for every
// namespace) changed.
func (b *Broker) policiesChanged(ns string) {
	// Bumped before the loaded topics are listed: a topic that resolved
	// its policies before this change but becomes visible to
	// loadedTopics only after the listing finds the epoch moved when its
	// load completes (getTopic) and refreshes itself.
	b.polEpoch.Add(1)
	for t := range b.everyLoaded(ns) {
		b.refreshPolicies(t)
	}
}

// refreshPolicies re-resolves t's policies and applies them; it reports
// whether t was unloaded to reopen with a changed retention or
// persistence.
func (b *Broker) refreshPolicies(t *topic) (unloaded bool) {
	old := t.pol.Load()
	res := b.resolvePolicies(t.name)
	t.pol.Store(res)
	t.applyLimits(res)
	if t.persistent() && old != nil && (!policy.SameRetention(old, res) || !policy.SamePersistence(old, res)) {
		// The managed ledger reopens with the new retention or
		// persistence (the next ledgers get the new quorum).
		b.unloadTopic(t.full)
		return true
	}
	if old == nil || old.MaxUnackedPerConsumer != res.MaxUnackedPerConsumer || old.MaxUnackedPerSubscription != res.MaxUnackedPerSubscription {
		for _, s := range *t.subList.Load() {
			s.do(func() {
				if s.refreshBlocked() {
					s.dispatch()
				}
			})
		}
	}
	b.applyOffload(t)
	b.checkTopic(t)
	t.checkReplication()
	return false
}

// policyLoop runs the periodic policy check until the broker closes.
func (b *Broker) policyLoop() {
	defer b.wg.Done()
	tk := time.NewTicker(policyCheckInterval)
	defer tk.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	b.loadReplicatedTopics(ctx)
	cancel()
	for n := 1; ; n++ {
		select {
		case <-b.done:
			return
		case <-tk.C:
			if n%policyRefreshTicks == 0 {
				b.policies.Refresh() // re-resolves and checks every topic
				ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
				b.loadReplicatedTopics(ctx)
				cancel()
				continue
			}
			for t := range b.everyLoaded("") {
				b.checkTopic(t)
				t.subRates.prune()
			}
		}
	}
}

// loadedTopics returns the loaded topics, optionally of one namespace.
// A loop over all of them uses everyLoaded (walk.go) instead.
func (b *Broker) loadedTopics(ns string) []*topic {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*topic
	for _, l := range b.mu.topics {
		select {
		case <-l.done:
		default:
			continue
		}
		if l.t == nil || (ns != "" && l.t.name.NamespaceName() != ns) {
			continue
		}
		out = append(out, l.t)
	}
	return out
}

// checkTopic applies TTL and backlog eviction to t and releases its held
// sends when the quota allows.
func (b *Broker) checkTopic(t *topic) {
	if !t.persistent() || t.isClosed() {
		return
	}
	pol := t.pol.Load()
	if ttl := pol.MessageTTLSeconds; ttl > 0 {
		for _, s := range *t.subList.Load() {
			_ = t.expire(s, ttl)
		}
	}
	t.applyEviction(pol)
	t.release(pol)
}

// backlogOf returns the largest subscription backlog of t in bytes
// (estimated from the average entry size), that subscription and the
// average entry size.
func backlogOf(t *topic) (int64, *subscription, int64) {
	entries, bytes := t.ml.Size()
	var avg int64
	if entries > 0 {
		avg = bytes / entries
	}
	var worst int64 = -1
	var slow *subscription
	for _, s := range *t.subList.Load() {
		if !s.cur.Durable() || s.name == compactionSub {
			continue // the compactor's cursor is not a consumer's backlog
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
func quotaExceeded(t *topic, pol *policy.Resolved) (string, bool) {
	if !t.persistent() || len(pol.BacklogQuotas) == 0 {
		return "", false
	}
	if q, ok := pol.BacklogQuotas[policy.QuotaStorage]; ok && q.LimitSize > 0 {
		if bl, _, _ := backlogOf(t); bl > q.LimitSize {
			return q.Policy, true
		}
	}
	if q, ok := pol.BacklogQuotas[policy.QuotaMessageAge]; ok && q.LimitTime > 0 {
		if backlogAge(t) > q.Age() {
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
		if !ok || !ca.c.IsDurable() || s.name == compactionSub {
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
func (t *topic) applyEviction(pol *policy.Resolved) {
	if q, ok := pol.BacklogQuotas[policy.QuotaStorage]; ok && q.Policy == policy.QuotaEviction && q.LimitSize > 0 {
		t.evict(q.LimitSize)
	}
	if q, ok := pol.BacklogQuotas[policy.QuotaMessageAge]; ok && q.Policy == policy.QuotaEviction && q.LimitTime > 0 {
		for _, s := range *t.subList.Load() {
			if s.cur.Durable() {
				_ = t.expire(s, q.LimitTime)
			}
		}
	}
}

func (t *topic) evict(limit int64) {
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
func (t *topic) expire(s *subscription, secs int64) error {
	ca, ok := s.cur.(*cursorAdapter)
	if !ok || s.name == compactionSub {
		// Expiring the compactor's cursor would let data not yet
		// compacted be trimmed.
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	cutoff, some := policy.ExpiryCutoff(time.Now().UnixMilli(), secs)
	if !some {
		return nil
	}
	p, found, err := ca.ml.FindByPublishTime(ctx, cutoff, entryPublishTime)
	if err != nil {
		return err
	}
	s.call(func() {
		_, before := s.cur.Backlog()
		defer func() {
			if _, after := s.cur.Backlog(); after < before {
				s.expiredN.Add(before - after)
				s.lastExpire.Store(time.Now().UnixMilli())
			}
		}()
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
func (t *topic) release(pol *policy.Resolved) {
	t.held.Lock()
	defer t.held.Unlock()
	if len(t.held.sends) == 0 {
		return
	}
	// Sends of producers that went away while held are dropped without
	// an answer (their clients re-send on reconnect). The detach paths
	// drop them already; this catches a producer fenced meanwhile.
	t.filterHeldLocked(func(h *heldSend) bool { return !t.attached(h.p) })
	if quota, over := quotaExceeded(t, pol); over && quota == policy.QuotaHold {
		return
	}
	held := t.held.sends
	t.held.sends = nil
	t.b.heldCount.Add(-int64(len(held)))
	for _, h := range held {
		t.publishPolicyLocked(pol, h)
	}
}

// filterHeldLocked drops (answers with sendDropped) the held sends of t
// that match drop; t.held is locked.
func (t *topic) filterHeldLocked(drop func(*heldSend) bool) {
	kept := t.held.sends[:0]
	for i := range t.held.sends {
		h := &t.held.sends[i]
		if !drop(h) {
			kept = append(kept, *h)
			continue
		}
		h.p.sink.sendDropped(h.p.id, h.seq)
		t.b.heldCount.Add(-1)
	}
	clear(t.held.sends[len(kept):])
	t.held.sends = kept
}

// dropHeld drops the held sends that match drop, on every loaded topic
// (a closing connection drops the sends of its producers this way; a
// topic no longer loaded dropped its held sends when it closed).
func (b *Broker) dropHeld(drop func(*heldSend) bool) {
	if b.heldCount.Load() == 0 {
		return
	}
	for t := range b.everyLoaded("") {
		t.held.Lock()
		t.filterHeldLocked(drop)
		t.held.Unlock()
	}
}

// dropHeldOf drops the held sends of t by p, or by every producer if p
// is nil; it is called after p (or every producer) left t, without
// topic.mu held.
func (t *topic) dropHeldOf(p *producer) {
	if t.b.heldCount.Load() == 0 {
		return
	}
	t.held.Lock()
	t.filterHeldLocked(func(h *heldSend) bool { return p == nil || h.p == p })
	t.held.Unlock()
}

// attached reports whether p is t's producer of its name.
func (t *topic) attached(p *producer) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mu.producers[p.name] == p
}

// policyPublish is the SEND path: it applies deduplication and backlog
// quotas of the topic's policy, then publishes.
func (b *Broker) policyPublish(p *producer, seq, highest uint64, numMsgs int, e entryBuf) {
	t := p.topic
	pol := t.pol.Load()
	if pol.BacklogQuotas == nil && !(pol.Deduplication && !b.cfg.Deduplication) {
		if !t.hasHeld() {
			t.publish(p, seq, highest, numMsgs, e)
			return
		}
	}
	t.held.Lock()
	defer t.held.Unlock()
	h := heldSend{p: p, seq: seq, highest: highest, numMsgs: numMsgs, e: e}
	if len(t.held.sends) > 0 {
		t.holdLocked(h)
		return
	}
	if quota, over := quotaExceeded(t, pol); over {
		switch quota {
		case policy.QuotaHold:
			t.holdLocked(h)
			return
		case policy.QuotaException:
			// As Pulsar: disconnect the producer; its reconnect is refused
			// with ProducerBlockedQuotaExceededException, which makes the
			// client fail its pending sends. The SEND is answered after
			// the CLOSE_PRODUCER (the client ignores that answer).
			t.removeProducer(p)
			p.sink.closeProducer(p)
			p.sink.sendSendError(p.id, seq, codeNotAllowed, msgQuotaException)
			return
		case policy.QuotaEviction:
			t.applyEviction(pol)
		}
	}
	t.publishPolicyLocked(pol, h)
}

// holdLocked appends h to the held sends of t, unless its producer left
// t already (its detach drop may have run before this send got here):
// such a send is dropped. t.held is locked.
func (t *topic) holdLocked(h heldSend) {
	if !t.attached(h.p) {
		h.p.sink.sendDropped(h.p.id, h.seq)
		return
	}
	t.held.sends = append(t.held.sends, h)
	t.b.heldCount.Add(1)
}

func (t *topic) hasHeld() bool {
	t.held.Lock()
	defer t.held.Unlock()
	return len(t.held.sends) > 0
}

// heldCount returns the number of sends t holds.
func (t *topic) heldCount() int {
	t.held.Lock()
	defer t.held.Unlock()
	return len(t.held.sends)
}

// publishPolicyLocked publishes h after the policy's deduplication (when
// the broker-wide one is off); t.held is locked.
func (t *topic) publishPolicyLocked(pol *policy.Resolved, h heldSend) {
	if pol.Deduplication && !t.b.cfg.Deduplication {
		hi := h.highest
		if hi < h.seq {
			hi = h.seq + uint64(max(h.numMsgs, 1)) - 1
		}
		key := h.p.dedupKey(h.e)
		if key == "" {
			t.publish(h.p, h.seq, h.highest, h.numMsgs, h.e)
			return
		}
		if last, seen := t.held.dedup[key]; seen && h.seq <= last {
			h.p.duplicate(h.seq)
			return
		}
		t.held.dedup[key] = hi
	}
	t.publish(h.p, h.seq, h.highest, h.numMsgs, h.e)
}

// policyCheckProducer refuses a new producer on t when the max-producers
// limit or a blocking backlog quota applies.
func (b *Broker) policyCheckProducer(t *topic) (int32, string, bool) {
	pol := t.pol.Load()
	if m := pol.MaxProducers; m > 0 {
		t.mu.Lock()
		n := len(t.mu.producers) + len(t.mu.waiting)
		t.mu.Unlock()
		if n >= m {
			return codeProducerBusy, fmt.Sprintf("Topic '%s' reached max producers limit", t.full), false
		}
	}
	if quota, over := quotaExceeded(t, pol); over {
		switch quota {
		case policy.QuotaHold:
			return codeProducerBlockedError, "Cannot create producer on topic with backlog quota exceeded", false
		case policy.QuotaException:
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

// policyCheckConsumer refuses a new consumer on t at the max-consumers
// limit.
func (b *Broker) policyCheckConsumer(t *topic) (int32, string, bool) {
	m := t.pol.Load().MaxConsumers
	if m <= 0 {
		return 0, "", true
	}
	n := 0
	for _, s := range *t.subList.Load() {
		s.call(func() { n += len(s.consumers) })
	}
	if n >= m {
		return codeConsumerBusy, fmt.Sprintf("Topic '%s' reached max consumers limit", t.full), false
	}
	return 0, "", true
}

// autoCreation returns whether tn may be auto-created and, for a
// partitioned override, the default partition count.
func (b *Broker) autoCreation(tn topicName) (allow bool, partitions int) {
	pol := b.resolvePolicies(tn)
	return pol.AutoCreate, pol.AutoPartitions
}

// dedupEnabled reports whether t deduplicates (broker-wide or by policy).
func (t *topic) dedupEnabled() bool {
	return t.b.cfg.Deduplication || t.pol.Load().Deduplication
}

type retentionKey struct{}

// withRetention attaches a retention policy to ctx, for LedgerOpener.
func withRetention(ctx context.Context, r *policy.RetentionPolicies) context.Context {
	if r == nil {
		return ctx
	}
	return context.WithValue(ctx, retentionKey{}, *r)
}

// applyRetention overrides cfg's retention with a policy carried by ctx
// (minutes and MB; -1 unlimited, 0 none).
func applyRetention(ctx context.Context, cfg *mledger.Config) {
	r, ok := ctx.Value(retentionKey{}).(policy.RetentionPolicies)
	if !ok {
		return
	}
	cfg.RetentionTime = r.Time()
	cfg.RetentionSize = r.Size()
}

// HeldSends reports how many SENDs a producer_request_hold backlog quota
// holds on topic (0 when it is not loaded).
func (b *Broker) HeldSends(topic string) int {
	tn, err := parseTopicName(topic)
	if err != nil {
		return 0
	}
	t := b.lookupTopic(tn.String())
	if t == nil {
		return 0
	}
	return t.heldCount()
}

// namespacePolicies returns ns's policy document (cached), nil if it
// cannot be read.
func (b *Broker) namespacePolicies(ns string) *policy.Policies {
	if p := b.policies.Cached(ns); p != nil {
		return p
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	p, err := b.policies.Get(ctx, ns)
	if err != nil {
		return nil
	}
	return p
}
