package ratemeter

import (
	"sync"
	"time"
)

// Meter turns counters into per-second rates, measured between
// successive calls at least a second apart (cluster load reports; a
// feature's stats, such as replicators'). Safe for concurrent use.
type Meter struct {
	mu       sync.Mutex
	at       int64 // unix ns of the last update taken; 0: none yet (a time.Time and a flag cost 24 B more in every loaded topic)
	msgs     int64
	bytes    int64
	msgRate  float64
	byteRate float64
}

// Update takes the counters' current values and returns the rates over
// the last interval of a second or more (0 at the first call).
func (r *Meter) Update(msgs, bytes int64) (msgRate, byteRate float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now().UnixNano()
	if r.at == 0 {
		r.at, r.msgs, r.bytes = now, msgs, bytes
		return 0, 0
	}
	if dt := float64(now-r.at) / 1e9; dt >= 1 {
		r.msgRate = float64(msgs-r.msgs) / dt
		r.byteRate = float64(bytes-r.bytes) / dt
		r.at, r.msgs, r.bytes = now, msgs, bytes
	}
	return r.msgRate, r.byteRate
}
