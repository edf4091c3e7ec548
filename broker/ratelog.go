package broker

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// rateLogEvery is the least time between two lines of one rate-limited
// kind (see rateLog).
const rateLogEvery = time.Second

// rateLog lets through at most one log line per rateLogEvery and counts
// the ones it drops; the next line that passes reports that count as
// "suppressed". It keeps events that repeat per message or per connection
// (a failing disk, a client sending garbage) from flooding the log. The
// zero value is ready.
type rateLog struct {
	mu      sync.Mutex
	next    time.Time
	dropped int
}

// log writes msg with args at level unless a line passed less than
// rateLogEvery ago.
func (r *rateLog) log(l *slog.Logger, level slog.Level, msg string, args ...any) {
	now := time.Now()
	r.mu.Lock()
	if now.Before(r.next) {
		r.dropped++
		r.mu.Unlock()
		return
	}
	r.next = now.Add(rateLogEvery)
	dropped := r.dropped
	r.dropped = 0
	r.mu.Unlock()
	if dropped > 0 {
		args = append(args, "suppressed", dropped)
	}
	l.Log(context.Background(), level, msg, args...)
}

// rateLogs are the broker's rate-limited log kinds.
type rateLogs struct {
	persist     rateLog // SEND_ERROR for a failed persist
	clientFault rateLog // connections closed for the client's fault, failed acks
}
