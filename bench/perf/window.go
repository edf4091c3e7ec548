package perf

import (
	"encoding/binary"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Window is the traffic and latency of one fixed window of a run (see
// Common.Window): targets such as "p99 ≤ 2 ms in every 10-second window"
// are checked against these, not against the whole run's percentiles.
type Window struct {
	Start   float64 `json:"start_s"` // seconds from the run's start
	Seconds float64 `json:"seconds"`
	Msgs    int64   `json:"msgs"` // latency samples (messages) in the window
	P50     int64   `json:"p50_us"`
	P99     int64   `json:"p99_us"`
	P999    int64   `json:"p999_us"`
	Max     int64   `json:"max_us"`
}

// windows closes a Stats' windows every Common.Window until stopped.
type windows struct {
	st   *Stats
	size time.Duration
	stop chan struct{}
	wg   sync.WaitGroup

	mu    sync.Mutex
	start time.Time // of the open window
	done  []Window
}

// startWindows gives every shard of st a window histogram and closes a
// window every size; size 0 returns nil (no windows, nothing recorded).
func startWindows(st *Stats, size time.Duration) *windows {
	if size <= 0 {
		return nil
	}
	for _, sh := range st.shards {
		sh.mu.Lock()
		sh.win = hdrhistogram.New(histMinUs, histMaxUs, histSig)
		sh.mu.Unlock()
	}
	w := &windows{st: st, size: size, stop: make(chan struct{}), start: st.start}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTicker(size)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case now := <-t.C:
				w.close(now)
			}
		}
	}()
	return w
}

// close ends the open window at now and opens the next.
func (w *windows) close(now time.Time) {
	merged := hdrhistogram.New(histMinUs, histMaxUs, histSig)
	for _, sh := range w.st.shards {
		sh.mu.Lock()
		merged.Merge(sh.win)
		sh.win.Reset()
		sh.mu.Unlock()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	win := Window{
		Start:   w.start.Sub(w.st.start).Seconds(),
		Seconds: now.Sub(w.start).Seconds(),
		Msgs:    merged.TotalCount(),
	}
	if win.Msgs > 0 {
		win.P50 = merged.ValueAtQuantile(50)
		win.P99 = merged.ValueAtQuantile(99)
		win.P999 = merged.ValueAtQuantile(99.9)
		win.Max = merged.Max()
	}
	w.done = append(w.done, win)
	w.start = now
}

// StartWindows starts per-window latencies on s, as Common.Window does for
// the runs of this package, for drivers built on another client
// (bench/latency/goclient). Call the returned func with the time the
// workers returned; the windows are then in Summary.
func (s *Stats) StartWindows(size time.Duration) func(end time.Time) {
	w := startWindows(s, size)
	return func(end time.Time) { s.windows = w.finish(end) }
}

// finish stops the ticker, closes the last window at end if it is at
// least half a window long (a shorter tail holds too few samples to
// compare with the others; it is dropped) and returns the windows.
func (w *windows) finish(end time.Time) []Window {
	if w == nil {
		return nil
	}
	close(w.stop)
	w.wg.Wait()
	w.mu.Lock()
	tail := end.Sub(w.start)
	w.mu.Unlock()
	if tail >= w.size/2 {
		w.close(end)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done
}

// Payload timestamps (ProduceConfig.PayloadTimestamp,
// ConsumeConfig.PayloadTimestamp): the first 8 bytes of a payload hold the
// producer's send time, Unix nanoseconds big-endian, so the consumer
// measures publish-to-receive in microseconds rather than with the
// millisecond publish time of the message metadata. Producer and
// consumer must share a clock (one machine).
const payloadStampSize = 8

// stampPayload returns a copy of payload with t in its first 8 bytes.
func stampPayload(payload []byte, t time.Time) []byte {
	b := make([]byte, len(payload))
	copy(b, payload)
	binary.BigEndian.PutUint64(b, uint64(t.UnixNano()))
	return b
}

// stampLatency returns now minus the send time stamped in payload, or -1
// when payload is too short or the stamp is not a plausible time (more
// than an hour old or in the future by more than a second: not stamped).
func stampLatency(payload []byte, now time.Time) time.Duration {
	if len(payload) < payloadStampSize {
		return -1
	}
	sent := int64(binary.BigEndian.Uint64(payload))
	lat := time.Duration(now.UnixNano() - sent)
	if lat < -time.Second || lat > time.Hour {
		return -1
	}
	return max(lat, 0)
}
