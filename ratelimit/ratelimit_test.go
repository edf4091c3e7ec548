package ratelimit

import (
	"math"
	"testing"
	"time"
)

func TestLimiterDebt(t *testing.T) {
	if New(0, -1, 1) != nil {
		t.Fatal("an unlimited limiter was built")
	}
	var none *Limiter
	now := time.Unix(1000, 0)
	if none.Take(now, 5, 5) != 0 || none.Wait(now) != 0 || none.Budget(now) != math.MaxInt {
		t.Fatal("a nil limiter limits")
	}
	l := New(100, 0, 1) // 100 msg/s, burst 100
	if b := l.Budget(now); b != 100 {
		t.Fatalf("initial budget %d, want the burst 100", b)
	}
	if d := l.Take(now, 100, 1<<20); d != 0 {
		t.Fatalf("the burst waited %s", d)
	}
	// 50 more: 0.5 s of debt.
	if d := l.Take(now, 50, 0); d < 490*time.Millisecond || d > 510*time.Millisecond {
		t.Fatalf("debt of 50 at 100/s = %s, want 0.5s", d)
	}
	if w := l.Wait(now); w < 500*time.Millisecond || w > 520*time.Millisecond {
		t.Fatalf("wait = %s, want ~0.51s", w)
	}
	if l.Budget(now) != 0 {
		t.Fatalf("budget in debt = %d, want 0", l.Budget(now))
	}
	if l.Wait(now.Add(600*time.Millisecond)) != 0 {
		t.Fatal("still waiting after the debt was repaid")
	}
	// More than the burst at once still counts in full.
	b := New(0, 1000, 1)
	if d := b.Take(now, 1, 5000); d < 3900*time.Millisecond || d > 4100*time.Millisecond {
		t.Fatalf("a 5000-byte entry at 1000 B/s (burst 1000) = %s debt, want 4s", d)
	}
	if b.Budget(now) != math.MaxInt {
		t.Fatal("a bytes-only limiter limits the message count")
	}
}

func TestLimiterPeriodIsTheBurst(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(10, 0, 3) // 10/s, bucket of 3 s
	if b := l.Budget(now); b != 30 {
		t.Fatalf("budget %d, want 30 (3 s at 10/s)", b)
	}
	if d := l.Take(now, 30, 0); d != 0 {
		t.Fatalf("the 3-s burst waited %s", d)
	}
	if d := l.Take(now, 10, 0); d < 990*time.Millisecond || d > 1010*time.Millisecond {
		t.Fatalf("10 past the burst at 10/s = %s, want 1s", d)
	}
}

func TestLimiterSetRate(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(10, 0, 1)
	l.Take(now, 10, 0)
	l.SetRate(now, 100, 50) // bytes stay unlimited
	if l.bytes != nil {
		t.Fatal("SetRate limited an unlimited dimension")
	}
	// 10 more at 100/s: 0.1 s of debt.
	if d := l.Take(now, 10, 0); d < 90*time.Millisecond || d > 110*time.Millisecond {
		t.Fatalf("debt after raising the rate = %s, want 0.1s", d)
	}
	l.SetRate(now, 0, 0) // ignored
	if got := float64(l.msgs.Limit()); got != 100 {
		t.Fatalf("rate %v after SetRate(0), want 100 kept", got)
	}
	var none *Limiter
	none.SetRate(now, 1, 1) // no panic
}

func TestPerKey(t *testing.T) {
	if NewPerKey(0, time.Hour) != nil {
		t.Fatal("a limiter of 0 was built")
	}
	var none *PerKey
	if !none.Allow("a") {
		t.Fatal("a nil limiter refused")
	}
	l := NewPerKey(2, time.Hour)
	var got []bool
	for range 3 {
		got = append(got, l.Allow("a"))
	}
	if !got[0] || !got[1] || got[2] {
		t.Fatalf("events of a: %v, want two allowed per period, then a refusal", got)
	}
	if !l.Allow("b") {
		t.Fatal("b is limited by a's events")
	}
	// a is in use (empty bucket), b has one token left of 2: neither is
	// forgotten; a key whose bucket refilled is.
	l.Prune(time.Now())
	if l.Keys() != 2 {
		t.Fatalf("%d keys after pruning busy ones, want 2", l.Keys())
	}
	l.Prune(time.Now().Add(2 * time.Hour))
	if l.Keys() != 0 {
		t.Fatalf("%d keys after their buckets refilled, want 0", l.Keys())
	}
	if !l.Allow("a") {
		t.Fatal("a forgotten key starts with an empty bucket")
	}
}

func TestPerKeyShortPeriod(t *testing.T) {
	l := NewPerKey(5, 0) // a period under a second is a second
	if got := float64(l.period); got != float64(time.Second) {
		t.Fatalf("period %v, want 1s", l.period)
	}
}
