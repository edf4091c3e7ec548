package ratelimit

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter is a pair of token buckets, messages and bytes, that go into
// debt (see the package doc).
type Limiter struct {
	msgs, bytes *rate.Limiter // nil: that dimension is unlimited
}

// New returns a limiter of msgs messages and bytes bytes per second (<= 0:
// that dimension unlimited), each bucket holding period seconds' worth
// (at least one unit); nil when both dimensions are unlimited.
func New(msgs, bytes, period float64) *Limiter {
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
	return &Limiter{msgs: mk(msgs), bytes: mk(bytes)}
}

// Take counts n messages of b bytes done at now, going into debt if
// needed, and returns how long until both buckets are positive again.
func (l *Limiter) Take(now time.Time, n, b int) time.Duration {
	if l == nil {
		return 0
	}
	return max(take(l.msgs, now, n), take(l.bytes, now, b))
}

// take counts n units on lim at now and returns the delay until its
// bucket is positive again.
func take(lim *rate.Limiter, now time.Time, n int) time.Duration {
	if lim == nil || n <= 0 {
		return 0
	}
	var d time.Duration
	// ReserveN refuses more than the burst: take the excess as whole
	// bursts, so a large entry still counts in full.
	for left := n; left > 0; {
		k := min(left, lim.Burst())
		if r := lim.ReserveN(now, k); r.OK() {
			d = max(d, r.DelayFrom(now))
		}
		left -= k
	}
	return d
}

// Wait returns how long until one more message may go (0: now).
func (l *Limiter) Wait(now time.Time) time.Duration {
	if l == nil {
		return 0
	}
	return max(wait(l.msgs, now), wait(l.bytes, now))
}

func wait(lim *rate.Limiter, now time.Time) time.Duration {
	if lim == nil {
		return 0
	}
	tok := lim.TokensAt(now)
	if tok >= 1 {
		return 0
	}
	return time.Duration((1-tok)/float64(lim.Limit())*float64(time.Second)) + time.Millisecond
}

// Budget returns how many messages may go now (math.MaxInt: no message
// limit).
func (l *Limiter) Budget(now time.Time) int {
	if l == nil || l.msgs == nil {
		return math.MaxInt
	}
	return max(int(l.msgs.TokensAt(now)), 0)
}

// SetRate changes the rates of the limited dimensions in place from now
// on (a dimension that was unlimited stays so; rates <= 0 are ignored).
func (l *Limiter) SetRate(now time.Time, msgs, bytes float64) {
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

// PerKey limits events per key: n per period for each key, each key
// starting with a full bucket of n.
type PerKey struct {
	mu     sync.Mutex
	n      int
	period time.Duration
	m      map[string]*rate.Limiter
}

// NewPerKey returns a limiter of n events per period for each key; nil
// (no limit) when n <= 0. A period under a second is a second.
func NewPerKey(n int, period time.Duration) *PerKey {
	if n <= 0 {
		return nil
	}
	return &PerKey{n: n, period: max(period, time.Second)}
}

// Allow reports whether key may have one more event now, counting it.
func (l *PerKey) Allow(key string) bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.m[key]
	if lim == nil {
		lim = rate.NewLimiter(rate.Limit(float64(l.n)/l.period.Seconds()), l.n)
		if l.m == nil {
			l.m = make(map[string]*rate.Limiter)
		}
		l.m[key] = lim
	}
	return lim.Allow()
}

// Prune forgets the keys whose bucket is full again (idle for a period):
// they would start afresh anyway.
func (l *PerKey) Prune(now time.Time) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, lim := range l.m {
		if lim.TokensAt(now) >= float64(lim.Burst()) {
			delete(l.m, k)
		}
	}
}

// Keys returns the number of keys with a bucket.
func (l *PerKey) Keys() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}
