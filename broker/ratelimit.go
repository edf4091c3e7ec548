package broker

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/magnetar-mq/magnetar/policy"
)

// Rate limits (see docs/policies.md). A rateLimiter is a pair of token
// buckets, messages and bytes, refilled at the configured rate and
// holding at most one period's worth. Work is counted after it is done
// (a SEND after it was read, an entry after it was dispatched) and may
// take a bucket below zero; the next unit then waits until the bucket is
// positive again. Over any window longer than the period the work done
// is the limit times the window plus at most one period's burst.
//
//   - publish: per topic. A SEND that leaves the bucket in debt pauses
//     the reads of its connection for as long as the debt lasts (Pulsar
//     disables auto-read on the producer's channel), so every producer
//     on that connection waits and TCP pushes back on the client.
//   - dispatch: per topic (shared by its subscriptions) and per
//     subscription. A subscription in debt stops dispatching and re-arms
//     a timer for the moment its buckets are positive again.
//   - subscribe: per consumer identity (consumer name and client host)
//     and topic; a SUBSCRIBE over the limit is refused with
//     TooManyRequests.
type rateLimiter struct {
	msgs, bytes *rate.Limiter // nil: that dimension is unlimited
}

// newRateLimiter returns a limiter of msgs and bytes per second (<= 0:
// unlimited) bursting to period seconds' worth; nil when both are
// unlimited.
func newRateLimiter(msgs, bytes, period float64) *rateLimiter {
	if msgs <= 0 && bytes <= 0 {
		return nil
	}
	mk := func(r float64) *rate.Limiter {
		if r <= 0 {
			return nil
		}
		burst := int(math.Min(math.Max(r*period, 1), math.MaxInt32))
		return rate.NewLimiter(rate.Limit(r), burst)
	}
	return &rateLimiter{msgs: mk(msgs), bytes: mk(bytes)}
}

// take counts n messages of b bytes done at now, going into debt if
// needed, and returns how long until both buckets are positive again.
func (l *rateLimiter) take(now time.Time, n, b int) time.Duration {
	if l == nil {
		return 0
	}
	var d time.Duration
	for _, x := range []struct {
		lim *rate.Limiter
		n   int
	}{{l.msgs, n}, {l.bytes, b}} {
		if x.lim == nil || x.n <= 0 {
			continue
		}
		// ReserveN refuses more than the burst: take the excess as
		// whole bursts, so a large entry still counts in full.
		for left := x.n; left > 0; {
			k := min(left, x.lim.Burst())
			if r := x.lim.ReserveN(now, k); r.OK() {
				d = max(d, r.DelayFrom(now))
			}
			left -= k
		}
	}
	return d
}

// wait returns how long until one more message may go (0: now).
func (l *rateLimiter) wait(now time.Time) time.Duration {
	if l == nil {
		return 0
	}
	var d time.Duration
	for _, lim := range []*rate.Limiter{l.msgs, l.bytes} {
		if lim == nil {
			continue
		}
		if tok := lim.TokensAt(now); tok < 1 {
			d = max(d, time.Duration((1-tok)/float64(lim.Limit())*float64(time.Second))+time.Millisecond)
		}
	}
	return d
}

// budget returns how many messages may go now (math.MaxInt: no message
// limit).
func (l *rateLimiter) budget(now time.Time) int {
	if l == nil || l.msgs == nil {
		return math.MaxInt
	}
	return max(int(l.msgs.TokensAt(now)), 0)
}

// setRate changes the rates in place (relativeToPublishRate).
func (l *rateLimiter) setRate(now time.Time, msgs, bytes float64) {
	if l == nil {
		return
	}
	if l.msgs != nil && msgs > 0 {
		l.msgs.SetLimitAt(now, rate.Limit(msgs))
	}
	if l.bytes != nil && bytes > 0 {
		l.bytes.SetLimitAt(now, rate.Limit(bytes))
	}
}

// dispatchLimiter is a dispatch rate setting and its limiter.
type dispatchLimiter struct {
	set policy.DispatchRate
	lim *rateLimiter
}

func newDispatchLimiter(d policy.DispatchRate) *dispatchLimiter {
	if !d.Enabled() {
		return nil
	}
	m, b := d.PerSecond()
	return &dispatchLimiter{set: d, lim: newRateLimiter(m, b, float64(max(d.RatePeriodInSecond, 1)))}
}

func (d *dispatchLimiter) limiter() *rateLimiter {
	if d == nil {
		return nil
	}
	return d.lim
}

// sameDispatch reports whether l already enforces d.
func sameDispatch(l *dispatchLimiter, d policy.DispatchRate) bool {
	if l == nil {
		return !d.Enabled()
	}
	return l.set == d
}

// topicLimits are a topic's publish and dispatch limiters, swapped whole
// when the policy changes (a limiter whose setting did not change is
// kept, with its state).
type topicLimits struct {
	pubSet   policy.PublishRate
	publish  *rateLimiter
	dispatch *dispatchLimiter
}

// subLimits are what a subscription's dispatch checks: its topic's
// limiter and its own.
type subLimits struct {
	topic, sub *dispatchLimiter
}

// applyLimits installs the limiters of pol on t and its subscriptions.
func (t *topic) applyLimits(pol *policy.Resolved) {
	t.limitsMu.Lock()
	defer t.limitsMu.Unlock()
	old := t.limits.Load()
	nl := &topicLimits{pubSet: pol.PublishRate}
	if old != nil && old.pubSet == pol.PublishRate {
		nl.publish = old.publish
	} else if pol.PublishRate.Enabled() {
		nl.publish = newRateLimiter(float64(pol.PublishRate.PublishThrottlingRateInMsg), float64(pol.PublishRate.PublishThrottlingRateInByte), 1)
	}
	if old != nil && sameDispatch(old.dispatch, pol.DispatchRate) {
		nl.dispatch = old.dispatch
	} else {
		nl.dispatch = newDispatchLimiter(pol.DispatchRate)
	}
	t.limits.Store(nl)
	for _, s := range *t.subList.Load() {
		t.applySubLimitsLocked(s, nl, pol)
	}
	t.subRates.configure(pol.SubscribeRate)
}

// applySubLimits installs the dispatch limiters of t's policy on s (a
// new subscription).
func (t *topic) applySubLimits(s *subscription) {
	t.limitsMu.Lock()
	defer t.limitsMu.Unlock()
	t.applySubLimitsLocked(s, t.limits.Load(), t.pol.Load())
}

func (t *topic) applySubLimitsLocked(s *subscription, tl *topicLimits, pol *policy.Resolved) {
	if tl == nil || pol == nil {
		return
	}
	old := s.limits.Load()
	nl := &subLimits{topic: tl.dispatch}
	if old != nil && sameDispatch(old.sub, pol.SubscriptionDispatchRate) {
		nl.sub = old.sub
	} else {
		nl.sub = newDispatchLimiter(pol.SubscriptionDispatchRate)
	}
	s.limits.Store(nl)
	s.wake()
}

// publishThrottle counts a SEND of n messages and b bytes on t and
// returns how long its connection must stop reading (0: not at all).
func (t *topic) publishThrottle(n, b int) time.Duration {
	tl := t.limits.Load()
	if tl == nil || tl.publish == nil {
		return 0
	}
	d := tl.publish.take(time.Now(), n, b)
	if d > 0 {
		t.publishLimited.Add(1)
	}
	return d
}

// relativeDispatch re-bases dispatch limits set relative to the publish
// rate on the topic's current publish rate (called on every stats
// update).
func (t *topic) relativeDispatch(msgRateIn, byteRateIn float64) {
	now := time.Now()
	set := func(d *dispatchLimiter) {
		if d == nil || !d.set.RelativeToPublishRate {
			return
		}
		m, b := d.set.PerSecond()
		d.lim.setRate(now, m+msgRateIn, b+byteRateIn)
	}
	if tl := t.limits.Load(); tl != nil {
		set(tl.dispatch)
	}
	for _, s := range *t.subList.Load() {
		if sl := s.limits.Load(); sl != nil {
			set(sl.sub)
		}
	}
}

// subscribeLimiter limits SUBSCRIBEs per consumer identity on one topic.
type subscribeLimiter struct {
	mu  sync.Mutex
	set policy.SubscribeRate
	m   map[string]*rate.Limiter
}

func (l *subscribeLimiter) configure(r policy.SubscribeRate) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.set == r {
		return
	}
	l.set, l.m = r, nil
}

// allow reports whether identity may subscribe now, counting it.
func (l *subscribeLimiter) allow(identity string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.set.Enabled() {
		return true
	}
	lim := l.m[identity]
	if lim == nil {
		n := l.set.SubscribeThrottlingRatePerConsumer
		lim = rate.NewLimiter(rate.Limit(float64(n)/float64(max(l.set.RatePeriodInSecond, 1))), n)
		if l.m == nil {
			l.m = make(map[string]*rate.Limiter)
		}
		l.m[identity] = lim
	}
	return lim.Allow()
}

// prune forgets identities whose bucket is full again (idle for a
// period): they would start afresh anyway.
func (l *subscribeLimiter) prune() {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	for id, lim := range l.m {
		if lim.TokensAt(now) >= float64(lim.Burst()) {
			delete(l.m, id)
		}
	}
}
