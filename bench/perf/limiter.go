package perf

import (
	"context"
	"time"
)

// Limiter paces a loop to a fixed number of operations per second. It is
// cheap at millions of operations per second: it only sleeps when the
// caller is ahead of schedule by more than minSleep, so short bursts are
// released together instead of one timer per operation.
//
// A Limiter is used by one goroutine (each producer has its own, with its
// share of the total rate).
type Limiter struct {
	interval time.Duration // time per operation; 0 = unlimited
	burst    time.Duration // how far behind schedule we let the clock run
	next     time.Time     // when the next operation is due
	now      func() time.Time
	sleep    func(ctx context.Context, d time.Duration) error
}

// minSleep is the smallest lead worth sleeping for.
const minSleep = time.Millisecond

// NewLimiter returns a limiter for rate operations per second; rate <= 0
// means unlimited. burst bounds how many operations may be released at
// once after the caller fell behind (at least 1).
func NewLimiter(rate float64, burst int) *Limiter {
	l := &Limiter{now: time.Now, sleep: sleepCtx}
	if rate > 0 {
		l.interval = time.Duration(float64(time.Second) / rate)
		if l.interval <= 0 {
			l.interval = 1
		}
		if burst < 1 {
			burst = 1
		}
		l.burst = time.Duration(burst) * l.interval
	}
	return l
}

// Wait blocks until the next operation is due, or ctx is done.
func (l *Limiter) Wait(ctx context.Context) error {
	if l.interval == 0 {
		return ctx.Err()
	}
	now := l.now()
	if d := l.Reserve(now).Sub(now); d >= minSleep {
		return l.sleep(ctx, d)
	}
	return ctx.Err()
}

// Reserve books the next operation and returns when it is due, given the
// time now; the caller sleeps until then if it is at least minSleep away
// (Wait does exactly that). Callers that have other work to do before the
// operation is due (the raw producer flushing a batch whose delay expires
// first) use it instead of Wait. An unlimited Limiter returns now.
func (l *Limiter) Reserve(now time.Time) time.Time {
	if l.interval == 0 {
		return now
	}
	if l.next.IsZero() {
		l.next = now
	}
	// Fell behind: forgive all but one burst of the debt.
	if floor := now.Add(-l.burst); l.next.Before(floor) {
		l.next = floor
	}
	due := l.next
	l.next = l.next.Add(l.interval)
	return due
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
