package enforcement

import (
	"time"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// Refusals of a topic over a backlog quota, as Pulsar words them.
const (
	msgQuotaHold      = "Cannot create producer on topic with backlog quota exceeded"
	msgQuotaException = "ProducerBlockedQuotaExceededException: Cannot create producer on topic with backlog quota exceeded"
)

// check applies TTL and backlog eviction to the topic and releases its
// held sends when the quota allows.
func (e *Enforcer) check(st *topicState) {
	t := st.t
	if !t.Persistent() || t.Closed() {
		return
	}
	pol := t.EffectivePolicy()
	if ttl := pol.MessageTTLSeconds; ttl > 0 {
		for _, s := range t.Subscriptions() {
			_ = t.ExpireMessages(s, ttl)
		}
	}
	applyEviction(t, pol)
	t.ReleaseHeld()
}

// quota is a persistent topic's broker.Quota: the backlog quotas of its
// policy.
type quota struct{ t broker.Topic }

// AdmitProducer implements broker.Quota: a topic over a hold or
// exception quota refuses new producers.
func (q quota) AdmitProducer() *broker.SendError {
	p, over := exceeded(q.t, q.t.EffectivePolicy())
	if !over {
		return nil
	}
	switch p {
	case policy.QuotaHold:
		return &broker.SendError{Code: pb.ServerError_ProducerBlockedQuotaExceededError, Msg: msgQuotaHold}
	case policy.QuotaException:
		return &broker.SendError{Code: pb.ServerError_ProducerBlockedQuotaExceededException, Msg: msgQuotaException}
	}
	return nil
}

// AdmitSend implements broker.Quota: over a hold quota the SEND is held,
// over an exception quota refused (its producer disconnected), over an
// eviction quota the slowest cursor skips ahead and the SEND goes.
func (q quota) AdmitSend() (hold bool, refuse *broker.SendError) {
	pol := q.t.EffectivePolicy()
	p, over := exceeded(q.t, pol)
	if !over {
		return false, nil
	}
	switch p {
	case policy.QuotaHold:
		return true, nil
	case policy.QuotaException:
		return false, &broker.SendError{Code: pb.ServerError_NotAllowedError, Msg: msgQuotaException}
	case policy.QuotaEviction:
		applyEviction(q.t, pol)
	}
	return false, nil
}

// exceeded reports the policy of the first backlog quota of t that is
// exceeded: destination_storage (limitSize bytes) or message_age
// (limitTime seconds since the oldest unacknowledged message).
func exceeded(t broker.Topic, pol *policy.Resolved) (string, bool) {
	if !t.Persistent() || len(pol.BacklogQuotas) == 0 {
		return "", false
	}
	if q, ok := pol.BacklogQuotas[policy.QuotaStorage]; ok && q.LimitSize > 0 {
		if b := backlogOf(t); b.bytes > q.LimitSize {
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

// backlog is the largest consumer backlog of a topic.
type backlog struct {
	bytes int64 // estimated from the average entry size
	slow  broker.Subscription
	found bool  // slow is set
	avg   int64 // average entry size
}

// backlogOf returns the largest durable subscription backlog of t (a
// feature's own subscriptions, such as the compactor's, are no
// consumer's backlog).
func backlogOf(t broker.Topic) backlog {
	entries, bytes := t.Ledger().Size()
	var b backlog
	if entries > 0 {
		b.avg = bytes / entries
	}
	worst := int64(-1)
	for _, s := range t.Subscriptions() {
		if !s.Durable() || t.SystemSubscription(s) {
			continue
		}
		e, _ := s.Backlog()
		if e*b.avg > worst {
			worst, b.slow, b.found = e*b.avg, s, true
		}
	}
	b.bytes = max(worst, 0)
	return b
}

// backlogAge is the age of the oldest message after the slowest durable
// cursor's mark-delete (0 without backlog).
func backlogAge(t broker.Topic) time.Duration {
	var oldest int64
	for _, s := range t.Subscriptions() {
		if !s.Durable() || t.SystemSubscription(s) {
			continue
		}
		if pt := t.EarliestInBacklog(s); pt > 0 && (oldest == 0 || pt < oldest) {
			oldest = pt
		}
	}
	if oldest == 0 {
		return 0
	}
	return time.Since(time.UnixMilli(oldest))
}

// applyEviction enforces consumer_backlog_eviction quotas.
func applyEviction(t broker.Topic, pol *policy.Resolved) {
	if q, ok := pol.BacklogQuotas[policy.QuotaStorage]; ok && q.Policy == policy.QuotaEviction && q.LimitSize > 0 {
		evict(t, q.LimitSize)
	}
	if q, ok := pol.BacklogQuotas[policy.QuotaMessageAge]; ok && q.Policy == policy.QuotaEviction && q.LimitTime > 0 {
		for _, s := range t.Subscriptions() {
			if s.Durable() {
				_ = t.ExpireMessages(s, q.LimitTime)
			}
		}
	}
}

// evict skips entries of the slowest cursor until the largest backlog is
// under limit bytes.
func evict(t broker.Topic, limit int64) {
	for range 100 {
		b := backlogOf(t)
		if b.bytes <= limit || !b.found || b.avg == 0 {
			return
		}
		n := (b.bytes - limit + b.avg - 1) / b.avg
		if err := t.SkipEntries(b.slow, n); err != nil {
			return
		}
	}
}
