package dispatch

import (
	"github.com/magnetar-mq/magnetar/broker/storage"
	"log/slog"
	"slices"
	"time"
)

// The methods in this file run on the subscription's loop goroutine
// (through Do/Call); the unexported ones' names end in Locked.

// Flow adds permits to c and dispatches.
func (s *Subscription) Flow(c *Consumer, n int) {
	if c.closed {
		return
	}
	c.permits += n
	c.lastFlow = time.Now().UnixMilli()
	s.lastFlow = c.lastFlow
	s.dispatch()
}

// Ack applies an individual or cumulative ack from c.
func (s *Subscription) Ack(c *Consumer, cumulative bool, ids []AckID) {
	s.lastAck = time.Now().UnixMilli()
	c.lastAck = s.lastAck
	if cumulative {
		if len(ids) == 0 {
			return
		}
		if s.typ == Shared || s.typ == KeyShared {
			// Pulsar ignores a cumulative ack on a subscription whose
			// messages are spread over consumers: it would ack what
			// other consumers hold. Clients refuse it locally; a raw
			// client gets a success answer and nothing changes.
			if !c.warnedCumulative {
				c.warnedCumulative = true
				s.log.Info("cumulative ack on a shared subscription ignored",
					"topic", s.topic, "sub", s.name, "consumer", c.id, "remote", c.address)
			}
			return
		}
		id := ids[0]
		target := id.Pos
		if len(id.AckSet) > 0 {
			// Partial ack of the last batch: everything before it is
			// acked, plus the given indexes of it.
			target = position{LedgerID: id.Pos.LedgerID, EntryID: id.Pos.EntryID - 1}
			s.ackBatchLocked(c, id)
		}
		if err := s.cur.AckCumulative(target); err != nil {
			s.more().ackFailLog.Log(s.log, slog.LevelWarn, "cumulative ack failed", "topic", s.topic, "sub", s.name, "pos", target, "remote", c.address, "err", err)
		}
		s.dropThroughLocked(target)
		s.refreshBlocked()
		s.markDeleteMovedLocked()
		s.dispatch()
		return
	}
	var whole []position
	for _, id := range ids {
		if len(id.AckSet) > 0 {
			s.ackBatchLocked(c, id)
			continue
		}
		whole = append(whole, id.Pos)
		if pe := s.pending[id.Pos]; pe != nil {
			s.dropPending(pe)
		}
	}
	if len(whole) > 0 {
		if err := s.cur.Ack(whole...); err != nil {
			s.more().ackFailLog.Log(s.log, slog.LevelWarn, "ack failed", "topic", s.topic, "sub", s.name, "remote", c.address, "err", err)
		}
		s.markDeleteMovedLocked()
	}
	if unblocked := s.refreshBlocked(); unblocked || s.typ == KeyShared || s.replay.Len() > 0 {
		s.dispatch()
	}
}

func (s *Subscription) ackBatchLocked(c *Consumer, id AckID) {
	size := id.BatchSize
	if pe := s.pending[id.Pos]; pe != nil && size <= 0 {
		size = pe.numMsgs
	}
	full, err := s.cur.AckBatchIndexes(id.Pos, id.AckSet, size)
	if err != nil {
		s.more().ackFailLog.Log(s.log, slog.LevelWarn, "batch ack failed", "topic", s.topic, "sub", s.name, "remote", c.address, "err", err)
		return
	}
	if full {
		if pe := s.pending[id.Pos]; pe != nil {
			s.dropPending(pe)
		}
	}
}

// dropPending forgets an acknowledged pending entry.
func (s *Subscription) dropPending(pe *Entry) {
	s.ackedN += int64(pe.numMsgs)
	if o := s.takeFromOwner(pe); o != nil {
		o.ackedN += int64(pe.numMsgs)
	}
}

// Redeliver handles REDELIVER_UNACKNOWLEDGED_MESSAGES from c.
// Shared and Key_Shared put exactly the named entries back; Exclusive and
// Failover (and an empty list) redeliver everything c holds.
func (s *Subscription) Redeliver(c *Consumer, ids []storage.Position) {
	if len(ids) == 0 || s.typ == Exclusive || s.typ == Failover {
		s.requeueAll(c)
	} else {
		for _, pos := range ids {
			if pe := c.pending[pos]; pe != nil {
				s.requeue(pe)
			}
		}
	}
	s.refreshBlocked()
	s.dispatch()
}

// resetLocked forgets all in-flight state after the cursor moved (seek).
func (s *Subscription) resetLocked() {
	s.stopRequeues()
	for _, c := range s.consumers {
		clear(c.pending)
		c.unackedMsg = 0
		c.recentJoin = false
	}
	s.unacked = 0
	s.refreshBlocked()
	s.haveRead = false
	clear(s.pending)
	s.clearOrder()
	clear(s.chunkOwner)
	s.replay.Reset()
	if x := s.extra; x != nil {
		x.delayed, x.delayedMsgs = nil, 0
	}
	if s.delayTimer != nil {
		s.delayTimer.Stop()
		s.delayTimer = nil
	}
}

// DisconnectAll sends CLOSE_CONSUMER to every consumer and detaches
// them without redelivery bookkeeping. keep marks the subscription to be
// kept although it has no consumers (a seek expects them back).
func (s *Subscription) DisconnectAll(keep bool) []*Consumer {
	cs := s.consumers
	s.consumers = nil
	s.consumersChanged()
	for _, c := range cs {
		s.sel.Remove(c)
		c.closed = true
		s.requeueAll(c)
		c.sink.CloseConsumer(c)
	}
	s.keepEmpty = keep
	return cs
}

// Seek moves the cursor (by position or, with byTime, by publish
// time) and resets the dispatch state; the core disconnects the
// consumers first, as Pulsar does.
func (s *Subscription) Seek(pos storage.Position, byTime bool, ts int64) error {
	var err error
	if byTime {
		err = s.cur.SeekTime(ts)
	} else {
		err = s.cur.Seek(pos)
	}
	if err != nil {
		return err
	}
	s.resetLocked()
	return nil
}

// Withhold takes a delivered entry out of delivery (a feature's hold):
// it leaves its consumer's unacked set. The returned entry keeps its
// routing (key, chunk), not its bytes.
func (s *Subscription) Withhold(pos storage.Position) *Entry {
	if pe := s.pending[pos]; pe != nil {
		s.takeFromOwner(pe)
		pe.data = nil
		s.refreshBlocked()
		return pe
	}
	// An entry waiting in the replay set is withheld when a pass takes
	// it (Hooks.Hold).
	return nil
}

// Acknowledge applies acks made on the subscription's behalf (a
// feature's: transactions, replicated subscriptions): whole entries,
// batch indexes and a cumulative position, with the bookkeeping of
// consumer acks.
func (s *Subscription) Acknowledge(a Acks) {
	var whole []position
	for _, w := range a.Whole {
		if pe := s.pending[w.Pos]; pe != nil {
			s.dropPending(pe)
		} else {
			s.ackedN += int64(w.Messages)
		}
		if !s.cur.IsAcked(w.Pos) {
			whole = append(whole, w.Pos)
		}
	}
	slices.SortFunc(whole, position.Compare)
	if len(whole) > 0 {
		if err := s.cur.Ack(whole...); err != nil {
			s.more().ackFailLog.Log(s.log, slog.LevelWarn, a.Reason+" failed", "topic", s.topic, "sub", s.name, "err", err)
		}
	}
	for _, ba := range a.Batches {
		if s.cur.IsAcked(ba.Pos) {
			continue
		}
		full, err := s.cur.AckBatchIndexes(ba.Pos, ba.AckSet, ba.Size)
		if err != nil {
			s.more().ackFailLog.Log(s.log, slog.LevelWarn, a.Reason+" (batch) failed", "topic", s.topic, "sub", s.name, "err", err)
			continue
		}
		s.ackedN += int64(ba.Messages)
		if pe := s.pending[ba.Pos]; pe != nil && full {
			s.dropPending(pe)
		}
	}
	if a.Cumulative != nil {
		target := *a.Cumulative
		if target.Compare(s.cur.MarkDelete()) > 0 {
			if err := s.cur.AckCumulative(target); err != nil {
				s.more().ackFailLog.Log(s.log, slog.LevelWarn, a.Reason+" (cumulative) failed", "topic", s.topic, "sub", s.name, "err", err)
			}
		}
		s.dropThroughLocked(target)
	}
	s.refreshBlocked()
	s.markDeleteMovedLocked()
	s.dispatch()
}

// ackSkippedLocked acknowledges an entry dispatch never delivers (a
// marker, or an entry a dispatch filter skips) and shows it to the hooks
// (a replicated subscription's markers).
func (s *Subscription) ackSkippedLocked(e ledgerEntry, marker int32) {
	if err := s.cur.Ack(e.Pos); err != nil {
		s.more().ackFailLog.Log(s.log, slog.LevelWarn, "marker ack failed", "topic", s.topic, "sub", s.name, "err", err)
	}
	if s.hooks != nil {
		s.hooks.Skipped(marker, e.Data)
	}
}

// markDeleteMovedLocked tells the hooks that the mark-delete position
// may have moved.
func (s *Subscription) markDeleteMovedLocked() {
	if s.hooks != nil {
		s.hooks.MarkDeleteMoved()
	}
}
