// Package ratelog limits how often one kind of log line is written: at
// most one per Every, and the next line that passes reports how many
// were dropped meanwhile ("suppressed"). It keeps events that repeat per
// message or per connection (a failing disk, a client sending garbage)
// from flooding the log.
package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Every is the least time between two lines of one kind.
const Every = time.Second

// Line is one kind of log line, limited in rate. The zero value is
// ready; it is safe for concurrent use.
type Line struct {
	mu      sync.Mutex
	next    time.Time
	dropped int
}

// Log writes msg with args at level to l unless a line of this kind
// passed less than Every ago.
func (r *Line) Log(l *slog.Logger, level slog.Level, msg string, args ...any) {
	now := time.Now()
	r.mu.Lock()
	if now.Before(r.next) {
		r.dropped++
		r.mu.Unlock()
		return
	}
	r.next = now.Add(Every)
	dropped := r.dropped
	r.dropped = 0
	r.mu.Unlock()
	if dropped > 0 {
		args = append(args, "suppressed", dropped)
	}
	l.Log(context.Background(), level, msg, args...)
}
