package dispatch

import (
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/broker/selector"
	"github.com/magnetar-mq/magnetar/broker/snap"
)

// Rates as Pulsar computes them: the counters' increase over the last
// fixed window divided by its length, recomputed by one timer of the
// core every statsUpdateFrequencyInSecs for every loaded topic,
// producer, subscription and consumer (a Window each; Roll here).

// Indexes of the counters a Window follows.
const (
	WinMsgs = iota
	WinBytes
	WinRedeliver
	WinAcks
	WinExpired
	WinCount
)

// Window holds the rates of the last window.
type Window struct {
	mu    sync.Mutex
	at    int64 // unix ns the window began; 0: none yet (a time.Time is 16 B more, four times a live topic)
	last  [WinCount]int64
	rates [WinCount]float64
}

// Roll closes the window at now with the counters' current values (in
// the order of the Win indexes).
func (w *Window) Roll(now time.Time, counters ...int64) {
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

// Rates returns the last window's rates.
func (w *Window) Rates() [WinCount]float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rates
}

// Roll closes the rate windows of s and its consumers.
func (s *Subscription) Roll(now time.Time) {
	s.win.Roll(now, s.msgOut, s.bytesOut, s.redeliverN, s.ackedN, s.expiredN.Load())
	for _, c := range s.consumers {
		c.win.Roll(now, c.msgOut, c.bytesOut, c.redeliverN, c.ackedN)
	}
}

// Snapshot reads the subscription's state and counters (all but
// IsReplicated and EarliestPublish, which the core knows).
func (s *Subscription) Snapshot() snap.Subscription {
	entries, msgs := s.cur.Backlog()
	r := s.win.Rates()
	st := snap.Subscription{
		Type: s.typ.String(), IsDurable: s.cur.Durable(),
		BacklogEntries: entries, MsgBacklog: msgs,
		BlockedSubscriptionOnUnackedMsgs: s.blocked,
		MsgOutCounter:                    s.msgOut, BytesOutCounter: s.bytesOut,
		MsgRateOut: r[WinMsgs], MsgThroughputOut: r[WinBytes],
		MsgRateRedeliver: r[WinRedeliver], MessageAckRate: r[WinAcks], MsgRateExpired: r[WinExpired],
		TotalMsgExpired: s.expiredN.Load(), LastExpire: s.lastExpire.Load(),
		LastAck: s.lastAck, LastConsumed: s.lastConsume, LastFlow: s.lastFlow,
		Consumers: make([]snap.Consumer, 0, len(s.consumers)),
	}
	if ks, ok := s.sel.(*selector.KeyShared[*Consumer]); ok && s.typ == KeyShared {
		st.KeySharedMode = "AUTO_SPLIT"
		if ks.Sticky() {
			st.KeySharedMode = "STICKY"
		}
	}
	if x := s.extra; x != nil {
		st.MsgDelayed = int64(x.delayedMsgs)
	}
	if fs, ok := s.sel.(*selector.Failover[*Consumer]); ok {
		if a := fs.Active(); a != nil {
			st.ActiveConsumerName = a.name
		}
	} else if len(s.consumers) > 0 && s.typ == Exclusive {
		st.ActiveConsumerName = s.consumers[0].name
	}
	for _, c := range s.consumers {
		st.UnackedMessages += int64(c.unackedMsg)
		cr := c.win.Rates()
		st.Consumers = append(st.Consumers, snap.Consumer{
			ConsumerName: c.name, AvailablePermits: int64(max(c.permits, 0)), UnackedMessages: int64(c.unackedMsg),
			BlockedConsumerOnUnackedMsgs: c.blocked,
			MsgOutCounter:                c.msgOut, BytesOutCounter: c.bytesOut,
			MsgRateOut: cr[WinMsgs], MsgThroughputOut: cr[WinBytes],
			MsgRateRedeliver: cr[WinRedeliver], MessageAckRate: cr[WinAcks],
			AvgMessagesPerEntry: c.avgPerEntry(),
			LastAck:             c.lastAck, LastConsumed: c.lastSent, LastFlow: c.lastFlow,
			ReadPositionWhenJoining: c.joinPosString(), KeyHashRanges: s.keyHashRanges(c),
			Client: snap.Client{Address: c.address, ConnectedSince: c.connectedSince, ClientVersion: c.clientVersion, Metadata: c.metadata},
		})
	}
	return st
}

// ConsumerSnapshot is c's part of Snapshot (ok false: c is not attached).
func (s *Subscription) ConsumerSnapshot(c *Consumer) (sub snap.Subscription, cs snap.Consumer, ok bool) {
	sub = s.Snapshot()
	for i, x := range s.consumers {
		if x == c {
			cs, ok = sub.Consumers[i], true
		}
	}
	return sub, cs, ok
}

// Sent returns the messages and bytes sent to consumers so far (the
// history's counters).
func (s *Subscription) Sent() (msgs, bytes int64) { return s.msgOut, s.bytesOut }

// LastActive is when the subscription was last used: created, a
// consumer attached or left, an ack, a message sent (subscription
// expiry).
func (s *Subscription) LastActive() time.Time {
	return time.UnixMilli(max(s.created, s.lastAck, s.lastConsume, s.lastDetach))
}

// Expired counts n messages expired by TTL (any goroutine).
func (s *Subscription) Expired(n int64) {
	s.expiredN.Add(n)
	s.lastExpire.Store(time.Now().UnixMilli())
}
