package enforcement

import (
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/ratelimit"
)

// rates are a topic's rate limiters, built from its policy (update). A
// limiter whose setting did not change is kept, with its state, when the
// policy changes; the subscriptions' and replicators' limiters are made
// when the core asks for them (broker.Limits) and kept by name. mu is a
// leaf lock (the core asks for a subscription's limiter under its own).
type rates struct {
	mu        sync.Mutex
	pubSet    policy.PublishRate
	publish   *ratelimit.Limiter
	dispatch  *dispatch // the topic's, shared by its subscriptions
	subSet    policy.DispatchRate
	subs      map[string]*dispatch
	replSet   policy.DispatchRate
	repl      map[string]*dispatch
	subRate   policy.SubscribeRate
	subscribe *ratelimit.PerKey
}

// dispatch is a dispatch rate setting and its limiter.
type dispatch struct {
	set policy.DispatchRate
	lim *ratelimit.Limiter
}

// newDispatch returns the limiter of d (nil when d limits nothing).
func newDispatch(d policy.DispatchRate) *dispatch {
	if !d.Enabled() {
		return nil
	}
	m, b := d.PerSecond()
	lim := ratelimit.New(m, b, float64(max(d.RatePeriodInSecond, 1)))
	if lim == nil {
		return nil
	}
	return &dispatch{set: d, lim: lim}
}

// limiter returns d's limiter for the core (an untyped nil for none).
func (d *dispatch) limiter() broker.Limiter {
	if d == nil {
		return nil
	}
	return d.lim
}

// sameDispatch reports whether d already enforces set.
func sameDispatch(d *dispatch, set policy.DispatchRate) bool {
	if d == nil {
		return !set.Enabled()
	}
	return d.set == set
}

// update rebuilds the limiters whose setting changed in pol and returns
// the topic's Limits with q (nil when there is nothing to limit).
func (r *rates) update(pol *policy.Resolved, q broker.Quota) *broker.Limits {
	r.mu.Lock()
	defer r.mu.Unlock()
	if pol.PublishRate != r.pubSet {
		r.pubSet, r.publish = pol.PublishRate, nil
		if pol.PublishRate.Enabled() {
			r.publish = ratelimit.New(float64(pol.PublishRate.PublishThrottlingRateInMsg), float64(pol.PublishRate.PublishThrottlingRateInByte), 1)
		}
	}
	if !sameDispatch(r.dispatch, pol.DispatchRate) {
		r.dispatch = newDispatch(pol.DispatchRate)
	}
	if pol.SubscriptionDispatchRate != r.subSet {
		r.subSet, r.subs = pol.SubscriptionDispatchRate, nil
	}
	if pol.ReplicatorDispatchRate != r.replSet {
		r.replSet, r.repl = pol.ReplicatorDispatchRate, nil
	}
	if pol.SubscribeRate != r.subRate {
		r.subRate, r.subscribe = pol.SubscribeRate, nil
		if s := pol.SubscribeRate; s.Enabled() {
			r.subscribe = ratelimit.NewPerKey(s.SubscribeThrottlingRatePerConsumer, time.Duration(s.RatePeriodInSecond)*time.Second)
		}
	}
	l := &broker.Limits{Dispatch: r.dispatch.limiter(), Quota: q}
	some := l.Dispatch != nil || q != nil
	if r.publish != nil {
		l.Publish, some = r.publish, true
	}
	if r.subSet.Enabled() {
		l.Subscription, some = r.subscription, true
	}
	if r.replSet.Enabled() {
		l.Replicator, some = r.replicator, true
	}
	if r.subscribe != nil {
		l.Subscribe, some = r.subscribe.Allow, true
	}
	if !some {
		return nil
	}
	return l
}

// subscription is Limits.Subscription: the named subscription's dispatch
// limiter.
func (r *rates) subscription(name string) broker.Limiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	return limiterOf(&r.subs, name, r.subSet)
}

// replicator is Limits.Replicator: the dispatch limiter of the
// replicator to remote (each has its own, as in Pulsar).
func (r *rates) replicator(remote string) broker.Limiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	return limiterOf(&r.repl, remote, r.replSet)
}

// limiterOf returns m's limiter of key, made for set if it has none (r.mu
// held).
func limiterOf(m *map[string]*dispatch, key string, set policy.DispatchRate) broker.Limiter {
	d := (*m)[key]
	if d == nil {
		if d = newDispatch(set); d == nil {
			return nil
		}
		if *m == nil {
			*m = make(map[string]*dispatch)
		}
		(*m)[key] = d
	}
	return d.lim
}

// rebase re-bases the dispatch limits set relative to the publish rate
// on the topic's publish rate now (messages and bytes per second).
func (r *rates) rebase(now time.Time, msgRateIn, byteRateIn float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	set := func(d *dispatch) {
		if d == nil || !d.set.RelativeToPublishRate {
			return
		}
		m, b := d.set.PerSecond()
		d.lim.SetRate(now, m+msgRateIn, b+byteRateIn)
	}
	set(r.dispatch)
	for _, d := range r.subs {
		set(d)
	}
}

// prune forgets the subscribe buckets of idle identities and the
// limiters of subscriptions the topic no longer has: live lists those it
// has, after prune noted the names it knows (a limiter made meanwhile
// stays).
func (r *rates) prune(now time.Time, live func() map[string]bool) {
	r.mu.Lock()
	sub := r.subscribe
	names := make([]string, 0, len(r.subs))
	for name := range r.subs {
		names = append(names, name)
	}
	r.mu.Unlock()
	sub.Prune(now)
	if len(names) == 0 {
		return
	}
	has := live()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, name := range names {
		if !has[name] {
			delete(r.subs, name)
		}
	}
}

// subscriptionNames returns the names of t's subscriptions.
func subscriptionNames(t broker.Topic) map[string]bool {
	subs := t.Subscriptions()
	out := make(map[string]bool, len(subs))
	for _, s := range subs {
		out[s.Name()] = true
	}
	return out
}
