package acceptloop

import (
	"errors"
	"log/slog"
	"net"
	"time"
)

const (
	minBackoff = 5 * time.Millisecond
	maxBackoff = time.Second
)

// Run accepts connections from ln and calls handle with each until ln is
// closed, done is closed, or handle returns false. A nil log discards.
func Run(ln net.Listener, done <-chan struct{}, log *slog.Logger, handle func(net.Conn) bool) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var backoff time.Duration
	var lastLog time.Time
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			backoff = min(max(2*backoff, minBackoff), maxBackoff)
			if now := time.Now(); now.Sub(lastLog) >= time.Second {
				lastLog = now
				log.Warn("accept failed; retrying", "addr", ln.Addr().String(), "err", err, "backoff", backoff)
			}
			t := time.NewTimer(backoff)
			select {
			case <-done:
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		backoff = 0
		if !handle(nc) {
			return
		}
	}
}
