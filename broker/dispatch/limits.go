package dispatch

import (
	"math"
	"time"
)

// limits are what a subscription's dispatch counts against: its topic's
// limiter and its own (either may be nil: no limit).
type limits struct {
	topic, sub Limiter
}

// Limit installs the dispatch rate limiters (nil: no limit) and wakes the
// subscription: a limit that went away lets it dispatch. Any goroutine.
func (s *Subscription) Limit(topic, sub Limiter) {
	if topic == nil && sub == nil {
		s.limits.Store(nil)
	} else {
		s.limits.Store(&limits{topic: topic, sub: sub})
	}
	s.Wake()
}

// take, wait and budget ask a limiter that may be nil (no limit).
func take(l Limiter, now time.Time, msgs, bytes int) time.Duration {
	if l == nil {
		return 0
	}
	return l.Take(now, msgs, bytes)
}

func wait(l Limiter, now time.Time) time.Duration {
	if l == nil {
		return 0
	}
	return l.Wait(now)
}

func budget(l Limiter, now time.Time) int {
	if l == nil {
		return math.MaxInt
	}
	return l.Budget(now)
}
