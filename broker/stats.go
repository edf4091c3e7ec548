package broker

import (
	"sync"
	"time"
)

// Rates as Pulsar computes them: the counters' increase over the last
// fixed window divided by its length, recomputed for every loaded topic,
// producer, subscription and consumer by one timer every
// Config.StatsUpdateInterval (Pulsar's statsUpdateFrequencyInSecs).
// Snapshots (snapshot.go) read the last window's rates.

// Indexes of the counters a rateWindow follows.
const (
	winMsgs = iota
	winBytes
	winRedeliver
	winAcks
	winExpired
	winCount
)

// rateWindow holds the rates of the last window.
type rateWindow struct {
	mu    sync.Mutex
	at    int64 // unix ns the window began; 0: none yet (a time.Time is 16 B more, four times a live topic)
	last  [winCount]int64
	rates [winCount]float64
}

// roll closes the window at now with the counters' current values.
func (w *rateWindow) roll(now time.Time, counters ...int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.at != 0 {
		if dt := float64(now.UnixNano()-w.at) / 1e9; dt > 0 {
			for i, v := range counters {
				w.rates[i] = float64(v-w.last[i]) / dt
			}
		}
	}
	w.at = now.UnixNano()
	copy(w.last[:], counters)
}

// get returns the last window's rates.
func (w *rateWindow) get() [winCount]float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rates
}

// statsLoop rolls the rate windows of every loaded topic, then runs the
// TopicTickers on it, every Config.StatsUpdateInterval until the broker
// closes.
func (b *Broker) statsLoop() {
	defer b.wg.Done()
	tk := time.NewTicker(b.cfg.StatsUpdateInterval)
	defer tk.Stop()
	for {
		select {
		case <-b.done:
			return
		case now := <-tk.C:
			for t := range b.everyLoaded("") {
				t.rollStats(now)
				for _, h := range b.ext.tickers {
					h.TickTopic(Topic{t})
				}
			}
		}
	}
}

// rollStats closes the rate windows of t, its producers, subscriptions
// and consumers.
func (t *topic) rollStats(now time.Time) {
	t.inWin.roll(now, t.msgIn.Load(), t.bytesIn.Load())
	t.mu.Lock()
	ps := make([]*producer, 0, len(t.mu.producers))
	for _, p := range t.mu.producers {
		ps = append(ps, p)
	}
	t.mu.Unlock()
	for _, p := range ps {
		p.win.roll(now, p.msgIn.Load(), p.bytesIn.Load())
	}
	for _, s := range *t.subList.Load() {
		s.call(func() { s.rollLocked(now) })
	}
}

// rollLocked closes the rate windows of s and its consumers.
func (s *subscription) rollLocked(now time.Time) {
	s.win.roll(now, s.msgOut, s.bytesOut, s.redeliverN, s.ackedN, s.expiredN.Load())
	for _, c := range s.consumers {
		c.win.roll(now, c.msgOut, c.bytesOut, c.redeliverN, c.ackedN)
	}
}
