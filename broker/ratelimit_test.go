package broker

import (
	"math"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/policy"
)

func TestRateLimiterDebt(t *testing.T) {
	if newRateLimiter(0, -1, 1) != nil {
		t.Fatal("an unlimited limiter was built")
	}
	var none *rateLimiter
	now := time.Unix(1000, 0)
	if none.take(now, 5, 5) != 0 || none.wait(now) != 0 || none.budget(now) != math.MaxInt {
		t.Fatal("a nil limiter limits")
	}
	l := newRateLimiter(100, 0, 1) // 100 msg/s, burst 100
	if b := l.budget(now); b != 100 {
		t.Fatalf("initial budget %d, want the burst 100", b)
	}
	if d := l.take(now, 100, 1<<20); d != 0 {
		t.Fatalf("the burst waited %s", d)
	}
	// 50 more: 0.5 s of debt.
	if d := l.take(now, 50, 0); d < 490*time.Millisecond || d > 510*time.Millisecond {
		t.Fatalf("debt of 50 at 100/s = %s, want 0.5s", d)
	}
	if w := l.wait(now); w < 500*time.Millisecond || w > 520*time.Millisecond {
		t.Fatalf("wait = %s, want ~0.51s", w)
	}
	if l.wait(now.Add(600*time.Millisecond)) != 0 {
		t.Fatal("still waiting after the debt was repaid")
	}
	// More than the burst at once still counts in full.
	b := newRateLimiter(0, 1000, 1)
	if d := b.take(now, 1, 5000); d < 3900*time.Millisecond || d > 4100*time.Millisecond {
		t.Fatalf("a 5000-byte entry at 1000 B/s (burst 1000) = %s debt, want 4s", d)
	}
}

func TestDispatchLimiterPeriod(t *testing.T) {
	d := newDispatchLimiter(policy.DispatchRate{DispatchThrottlingRateInMsg: 30, RatePeriodInSecond: 3})
	if d == nil || d.lim.msgs.Limit() != 10 || d.lim.msgs.Burst() != 30 || d.lim.bytes != nil {
		t.Fatalf("30 per 3 s: %+v", d)
	}
	if !sameDispatch(d, policy.DispatchRate{DispatchThrottlingRateInMsg: 30, RatePeriodInSecond: 3}) || sameDispatch(d, policy.DispatchRate{}) {
		t.Fatal("sameDispatch")
	}
	if newDispatchLimiter(policy.DispatchRate{DispatchThrottlingRateInMsg: -1}) != nil {
		t.Fatal("-1 built a limiter")
	}
}

func TestSubscribeLimiterPerIdentity(t *testing.T) {
	var l subscribeLimiter
	if !l.allow("a") {
		t.Fatal("unconfigured limiter refused")
	}
	l.configure(policy.SubscribeRate{SubscribeThrottlingRatePerConsumer: 2, RatePeriodInSecond: 3600})
	var got []bool
	for range 3 {
		got = append(got, l.allow("a"))
	}
	if !got[0] || !got[1] || got[2] {
		t.Fatalf("subscribes of a: %v, want two allowed per period, then a refusal", got)
	}
	if !l.allow("b") {
		t.Fatal("b is limited by a's subscribes")
	}
	l.configure(policy.SubscribeRate{SubscribeThrottlingRatePerConsumer: 2, RatePeriodInSecond: 3600})
	if l.allow("a") {
		t.Fatal("re-applying the same setting reset the buckets")
	}
	l.configure(policy.SubscribeRate{})
	if !l.allow("a") {
		t.Fatal("removed limit still refuses")
	}
}
