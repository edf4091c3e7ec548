package enforcement

import (
	"math"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/policy"
)

// TestDispatchPeriod: a dispatch rate of N per P seconds limits N/P a
// second with a bucket of N; -1 and 0 build no limiter.
func TestDispatchPeriod(t *testing.T) {
	now := time.Unix(1000, 0)
	d := newDispatch(policy.DispatchRate{DispatchThrottlingRateInMsg: 30, RatePeriodInSecond: 3})
	if d == nil {
		t.Fatal("30 per 3 s built no limiter")
	}
	if b := d.lim.Budget(now); b != 30 {
		t.Fatalf("budget %d, want the 30 of one period", b)
	}
	d.lim.Take(now, 30, 0)
	if w := d.lim.Wait(now); w < 90*time.Millisecond || w > 110*time.Millisecond {
		t.Fatalf("wait after the period's burst = %v, want ~0.1 s (10/s)", w)
	}
	if !sameDispatch(d, policy.DispatchRate{DispatchThrottlingRateInMsg: 30, RatePeriodInSecond: 3}) || sameDispatch(d, policy.DispatchRate{}) {
		t.Fatal("sameDispatch")
	}
	for _, off := range []policy.DispatchRate{{DispatchThrottlingRateInMsg: -1}, {}} {
		if newDispatch(off) != nil {
			t.Fatalf("%+v built a limiter", off)
		}
		if !sameDispatch(nil, off) {
			t.Fatalf("no limiter does not enforce %+v", off)
		}
	}
}

// TestRatesUpdate: a policy without rates or quota gives no Limits; the
// limiters of a policy are built once and kept while their setting does
// not change (state included); a changed setting builds new ones.
func TestRatesUpdate(t *testing.T) {
	var r rates
	if l := r.update(&policy.Resolved{}, nil); l != nil {
		t.Fatalf("no rates, no quota: %+v, want nil", l)
	}
	pol := &policy.Resolved{
		PublishRate:              policy.PublishRate{PublishThrottlingRateInMsg: 10},
		DispatchRate:             policy.DispatchRate{DispatchThrottlingRateInMsg: 20, RatePeriodInSecond: 1},
		SubscriptionDispatchRate: policy.DispatchRate{DispatchThrottlingRateInByte: 1000, RatePeriodInSecond: 1},
		ReplicatorDispatchRate:   policy.DispatchRate{DispatchThrottlingRateInMsg: 5, RatePeriodInSecond: 1},
		SubscribeRate:            policy.SubscribeRate{SubscribeThrottlingRatePerConsumer: 1, RatePeriodInSecond: 60},
	}
	l := r.update(pol, nil)
	if l == nil || l.Publish == nil || l.Dispatch == nil || l.Subscription == nil || l.Replicator == nil || l.Subscribe == nil || l.Quota != nil {
		t.Fatalf("limits %+v, want every limiter and no quota", l)
	}
	subA, subB, repl := l.Subscription("a"), l.Subscription("b"), l.Replicator("c2")
	if subA == nil || subA == subB || l.Subscription("a") != subA || l.Replicator("c2") != repl || l.Replicator("c3") == repl {
		t.Fatal("subscriptions and replicators do not each keep one limiter of their own")
	}
	if !l.Subscribe("x@h") || l.Subscribe("x@h") || !l.Subscribe("y@h") {
		t.Fatal("subscribe limit: want one per identity per period")
	}

	// Only the publish rate changes: the other limiters stay.
	pol2 := *pol
	pol2.PublishRate = policy.PublishRate{PublishThrottlingRateInMsg: 99}
	l2 := r.update(&pol2, quota{})
	if l2.Publish == l.Publish || l2.Dispatch != l.Dispatch || l2.Subscription("a") != subA || l2.Replicator("c2") != repl || l2.Quota == nil {
		t.Fatal("a publish rate change rebuilt more than the publish limiter")
	}
	if l2.Subscribe("x@h") {
		t.Fatal("the subscribe buckets were reset by an unrelated change")
	}
	// The subscription and replicator rates change: new limiters.
	pol3 := pol2
	pol3.SubscriptionDispatchRate = policy.DispatchRate{DispatchThrottlingRateInByte: 2000, RatePeriodInSecond: 1}
	pol3.ReplicatorDispatchRate = policy.DispatchRate{}
	l3 := r.update(&pol3, nil)
	if l3.Subscription("a") == subA || l3.Replicator != nil {
		t.Fatal("changed subscription and replicator rates kept their limiters")
	}
}

// TestRatesRebase: a dispatch rate relative to the publish rate is the
// set rate plus the topic's publish rate of the last window.
func TestRatesRebase(t *testing.T) {
	var r rates
	now := time.Unix(1000, 0)
	l := r.update(&policy.Resolved{
		DispatchRate:             policy.DispatchRate{DispatchThrottlingRateInMsg: 10, RatePeriodInSecond: 1, RelativeToPublishRate: true},
		SubscriptionDispatchRate: policy.DispatchRate{DispatchThrottlingRateInMsg: 10, RatePeriodInSecond: 1},
	}, nil)
	sub := l.Subscription("s")
	r.rebase(now, 90, 0)
	// 10 in the bucket, then 100/s: 20 more is 0.2 s of debt.
	l.Dispatch.Take(now, 30, 0)
	if w := l.Dispatch.Wait(now); w < 190*time.Millisecond || w > 215*time.Millisecond {
		t.Fatalf("relative dispatch wait %v, want ~0.2 s at 10+90 msg/s", w)
	}
	// The subscription's rate is not relative: still 10/s.
	sub.Take(now, 20, 0)
	if w := sub.Wait(now); w < time.Second || w > 1150*time.Millisecond {
		t.Fatalf("absolute dispatch wait %v, want ~1 s at 10 msg/s", w)
	}
}

// TestRatesPrune: the limiters of subscriptions that went away are
// forgotten, those listed stay, as do the ones made after the names
// were taken.
func TestRatesPrune(t *testing.T) {
	var r rates
	l := r.update(&policy.Resolved{SubscriptionDispatchRate: policy.DispatchRate{DispatchThrottlingRateInMsg: 10, RatePeriodInSecond: 1}}, nil)
	a, _ := l.Subscription("a"), l.Subscription("gone")
	r.prune(time.Now(), func() map[string]bool {
		l.Subscription("new") // made while the topic is listed
		return map[string]bool{"a": true}
	})
	if len(r.subs) != 2 || r.subs["a"] == nil || r.subs["new"] == nil {
		t.Fatalf("after prune: %v, want a and new", r.subs)
	}
	if l.Subscription("a") != a {
		t.Fatal("a listed subscription lost its limiter")
	}
}

// TestLimiterInterface: what the core gets for no limit is an untyped
// nil, never a nil pointer in an interface.
func TestLimiterInterface(t *testing.T) {
	var d *dispatch
	if d.limiter() != nil {
		t.Fatal("a nil dispatch gave a non-nil Limiter")
	}
	var r rates
	l := r.update(&policy.Resolved{PublishRate: policy.PublishRate{PublishThrottlingRateInByte: 100}}, nil)
	if l.Dispatch != nil || l.Subscription != nil || l.Replicator != nil || l.Subscribe != nil {
		t.Fatalf("limits %+v: want only the publish limiter", l)
	}
	var _ broker.Limiter = l.Publish
	if b := l.Publish.Budget(time.Now()); b != math.MaxInt {
		t.Fatalf("a bytes-only publish limit limits the message count: %d", b)
	}
}
