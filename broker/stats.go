package broker

import "time"

// Rates as Pulsar computes them: the counters' increase over the last
// fixed window divided by its length, recomputed for every loaded topic,
// producer, subscription and consumer by one timer every
// Config.StatsUpdateInterval (Pulsar's statsUpdateFrequencyInSecs).
// Snapshots (snapshot.go) read the last window's rates. The window is
// package broker/dispatch's (Window), which rolls a subscription's.

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
	t.inWin.Roll(now, t.msgIn.Load(), t.bytesIn.Load())
	t.mu.Lock()
	ps := make([]*producer, 0, len(t.mu.producers))
	for _, p := range t.mu.producers {
		ps = append(ps, p)
	}
	t.mu.Unlock()
	for _, p := range ps {
		p.win.Roll(now, p.msgIn.Load(), p.bytesIn.Load())
	}
	for _, s := range *t.subList.Load() {
		s.Call(func() { s.Roll(now) })
	}
}
