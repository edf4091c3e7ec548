package perf

import (
	"context"
	"testing"
	"time"
)

// fakeClock drives a Limiter deterministically: sleeping advances it.
type fakeClock struct {
	t      time.Time
	slept  time.Duration
	sleeps int
}

func newTestLimiter(rate float64, burst int, c *fakeClock) *Limiter {
	l := NewLimiter(rate, burst)
	l.now = func() time.Time { return c.t }
	l.sleep = func(_ context.Context, d time.Duration) error {
		c.t = c.t.Add(d)
		c.slept += d
		c.sleeps++
		return nil
	}
	return l
}

func TestLimiterPacesToRate(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	l := newTestLimiter(10_000, 1, c)
	start := c.t
	for range 50_000 {
		if err := l.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// 50,000 ops at 10k/s: the last is due at 4.9999 s.
	el := c.t.Sub(start)
	if el < 4990*time.Millisecond || el > 5*time.Second {
		t.Fatalf("50k ops at 10k/s took %v, want ~5s", el)
	}
	// It sleeps in >= 1 ms steps, not once per op.
	if c.sleeps > 5000 || c.sleeps < 100 {
		t.Fatalf("%d sleeps, want between 100 and 5000", c.sleeps)
	}
}

func TestLimiterUnlimitedNeverSleeps(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	l := newTestLimiter(0, 1, c)
	for range 1000 {
		if err := l.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if c.sleeps != 0 {
		t.Fatalf("unlimited limiter slept %d times", c.sleeps)
	}
}

func TestLimiterForgivesStallBeyondBurst(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	l := newTestLimiter(1000, 10, c) // 1 ms per op, burst 10
	l.Wait(context.Background())
	c.t = c.t.Add(time.Second) // stalled for 1000 op slots
	// At most one burst (10) is released without sleeping; then pacing resumes.
	free := 0
	for range 100 {
		before := c.sleeps
		l.Wait(context.Background())
		if c.sleeps == before {
			free++
		}
	}
	if free < 10 || free > 12 {
		t.Fatalf("%d ops released without waiting after a stall, want ~10 (one burst)", free)
	}
}

func TestLimiterStopsOnCancel(t *testing.T) {
	l := NewLimiter(1, 1) // real clock: the second op is due in 1 s
	ctx, cancel := context.WithCancel(context.Background())
	if err := l.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := l.Wait(ctx); err == nil {
		t.Fatal("Wait on a cancelled context returned nil")
	}
}
