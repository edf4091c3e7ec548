package broker

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/mledger"
)

// The methods in this file run on the subscription's loop goroutine
// (through do/call); their names end in Locked.

// flowLocked adds permits to c and dispatches.
func (s *subscription) flowLocked(c *consumer, n int) {
	if c.closed {
		return
	}
	c.permits += n
	c.lastFlow = time.Now().UnixMilli()
	s.lastFlow = c.lastFlow
	s.dispatch()
}

// ackLocked applies an individual or cumulative ack from c.
func (s *subscription) ackLocked(c *consumer, cumulative bool, ids []AckID) {
	s.lastAck = time.Now().UnixMilli()
	c.lastAck = s.lastAck
	if cumulative {
		if len(ids) == 0 {
			return
		}
		if s.typ == SubShared || s.typ == SubKeyShared {
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
	if unblocked := s.refreshBlocked(); unblocked || s.typ == SubKeyShared || s.replay.Len() > 0 {
		s.dispatch()
	}
}

func (s *subscription) ackBatchLocked(c *consumer, id AckID) {
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
func (s *subscription) dropPending(pe *pendingEntry) {
	s.ackedN += int64(pe.numMsgs)
	if o := pe.owner; o != nil {
		o.ackedN += int64(pe.numMsgs)
		if _, ok := o.pending[pe.pos]; ok {
			deletePending(&o.pending, pe.pos)
			s.addUnacked(o, -pe.numMsgs)
		}
		pe.owner = nil
	}
	s.unpend(pe.pos)
}

// redeliverLocked handles REDELIVER_UNACKNOWLEDGED_MESSAGES from c.
// Shared and Key_Shared put exactly the named entries back; Exclusive and
// Failover (and an empty list) redeliver everything c holds.
func (s *subscription) redeliverLocked(c *consumer, ids []position) {
	if len(ids) == 0 || s.typ == SubExclusive || s.typ == SubFailover {
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
func (s *subscription) resetLocked() {
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

// disconnectAllLocked sends CLOSE_CONSUMER to every consumer and detaches
// them without redelivery bookkeeping. keep marks the subscription to be
// kept although it has no consumers (a seek expects them back).
func (s *subscription) disconnectAllLocked(keep bool) []*consumer {
	cs := s.consumers
	s.consumers = nil
	s.consumersChanged()
	for _, c := range cs {
		s.sel.Remove(c)
		c.closed = true
		s.requeueAll(c)
		c.sink.closeConsumer(c)
	}
	s.keepEmpty = keep
	return cs
}

// seekLocked moves the cursor (by position or, with byTime, by publish
// time) and resets the dispatch state; topic.seek disconnects the
// consumers first, as Pulsar does.
func (s *subscription) seekLocked(pos position, byTime bool, ts int64) error {
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

// withhold takes a delivered entry out of delivery (SubLoop.Withhold):
// it leaves its consumer's unacked set. The returned entry keeps its
// routing (key, chunk), not its bytes.
func (s *subscription) withhold(pos position) *pendingEntry {
	if pe := s.pending[pos]; pe != nil {
		if o := pe.owner; o != nil {
			if _, ok := o.pending[pos]; ok {
				deletePending(&o.pending, pos)
				s.addUnacked(o, -pe.numMsgs)
			}
			pe.owner = nil
		}
		s.unpend(pos)
		pe.data = nil
		s.refreshBlocked()
		return pe
	}
	// An entry waiting in the replay set is withheld when a pass takes
	// it (AckHook.HeldEntry).
	return nil
}

// acknowledge applies acks made on the subscription's behalf
// (SubLoop.Acknowledge): whole entries, batch indexes and a cumulative
// position, with the bookkeeping of consumer acks.
func (s *subscription) acknowledge(a Acks) {
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
// marker, or an entry a DispatchFilter skips) and shows a replicated
// subscription's markers to the ReplicatedSubscriptions feature.
func (s *subscription) ackSkippedLocked(e ledgerEntry, marker int32) {
	if err := s.cur.Ack(e.Pos); err != nil {
		s.more().ackFailLog.Log(s.log, slog.LevelWarn, "marker ack failed", "topic", s.topic, "sub", s.name, "err", err)
	}
	if s.replSubs() != nil && s.replicated.Load() {
		if marker != 0 {
			s.replSubs().MarkerRead(SubLoop{s}, marker, e.Data)
		}
		s.replSubs().MarkDeleteMoved(SubLoop{s})
	}
}

// markDeleteMovedLocked tells the ReplicatedSubscriptions feature that a
// replicated subscription's mark-delete position may have moved.
func (s *subscription) markDeleteMovedLocked() {
	if s.replSubs() != nil && s.replicated.Load() {
		s.replSubs().MarkDeleteMoved(SubLoop{s})
	}
}

// replicatedProperty is the cursor property that marks a replicated
// subscription ("1"), Pulsar's name for it: the flag survives restarts
// and ownership changes with the cursor.
const replicatedProperty = "pulsar.replicated.subscription"

// loadReplicated sets the replicated flag from the cursor's properties
// (a new subscription, or one loaded with its topic).
func (s *subscription) loadReplicated() {
	if mc := s.mc; mc != nil && mc.Properties()[replicatedProperty] == "1" {
		s.replicated.Store(true)
	}
}

// markReplicated sets the replicated flag and, when it changes a durable
// cursor's property, persists it before returning.
func (s *subscription) markReplicated(on bool) error {
	s.replicated.Store(on)
	mc := s.mc
	if mc == nil {
		return nil
	}
	props := mc.Properties()
	if (props[replicatedProperty] == "1") == on {
		return nil
	}
	next := maps.Clone(props)
	if next == nil {
		next = map[string]string{}
	}
	if on {
		next[replicatedProperty] = "1"
	} else {
		delete(next, replicatedProperty)
	}
	ctx, cancel := context.WithTimeout(context.Background(), storage.Timeout)
	defer cancel()
	if err := mc.SetProperties(ctx, next); err != nil {
		s.log.Warn("persist replicated subscription flag", "topic", s.topic, "sub", s.name, "err", err)
		return err
	}
	return nil
}

// durableCursor returns the managed-ledger cursor behind c (nil for
// non-durable and non-persistent cursors).
func durableCursor(c cursor) *mledger.Cursor {
	switch x := c.(type) {
	case *storage.LedgerCursor:
		if x.Managed().IsDurable() {
			return x.Managed()
		}
	case interface{ Unwrap() storage.Cursor }: // a feature's view (read_compacted)
		return durableCursor(x.Unwrap())
	}
	return nil
}
