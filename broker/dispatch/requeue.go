package dispatch

import (
	"iter"
	"maps"
)

// Taking entries back for redelivery. A consumer that leaves (or a
// Failover consumer that stops being active, or a redelivery of all it
// holds) returns its pending entries to the replay set. With the unacked
// limits at 0 a consumer may hold millions, so a large set moves in
// chunks of requeueChunk entries, one chunk per turn of the loop, with
// the loop's other work (stats, acks, flows) served between chunks.
// Exclusive, Failover and Key_Shared dispatch waits until every chunk
// has moved, so redelivery still goes out in position order (per key on
// Key_Shared); Shared, which promises no order, redelivers each chunk as
// it arrives. An entry acknowledged (or parked by a transaction) while
// it waits for its chunk is no longer pending (its owner is cleared) and
// is skipped.

// requeueChunk is how many entries one turn of the loop moves (and, on
// Shared, redelivers): about a millisecond of work, which a machine
// short of CPU stretches tenfold or more; a stats call waits for at most
// one such turn.
const requeueChunk = 256

// requeueJob is the pending set of consumer c being moved.
type requeueJob struct {
	c    *Consumer
	next func() (position, *Entry, bool)
	stop func()
}

// requeueAll moves every pending entry of c to the replay set (see
// above: at once when there are few, else in chunks).
func (s *Subscription) requeueAll(c *Consumer) {
	m := c.pending
	s.unacked -= c.unackedMsg
	c.unackedMsg = 0
	if len(m) == 0 {
		return
	}
	if len(m) <= requeueChunk {
		batch := make([]*Entry, 0, len(m))
		for _, pe := range m {
			if s.takeBack(c, pe) {
				batch = append(batch, pe)
			}
		}
		clear(m)
		s.replay.AddAll(batch)
		return
	}
	// c gets a new pending set on its next assign (a Failover consumer
	// stays attached).
	c.pending = nil
	next, stop := iter.Pull2(maps.All(m))
	s.requeues = append(s.requeues, &requeueJob{c: c, next: next, stop: stop})
}

// requeueStep moves the next chunk of the first job; after the last one
// dispatch resumes.
func (s *Subscription) requeueStep() {
	j := s.requeues[0]
	batch := make([]*Entry, 0, requeueChunk)
	for range requeueChunk {
		_, pe, ok := j.next()
		if !ok {
			j.stop()
			s.requeues[0] = nil
			s.requeues = s.requeues[1:]
			break
		}
		if s.takeBack(j.c, pe) {
			batch = append(batch, pe)
		}
	}
	s.replay.AddAll(batch)
	if len(s.requeues) == 0 {
		s.requeues = nil
		s.refreshBlocked()
	}
	s.dispatch()
}

// stopRequeues abandons the jobs (the subscription closes, or a seek
// forgot every pending entry).
func (s *Subscription) stopRequeues() {
	for _, j := range s.requeues {
		j.stop()
	}
	s.requeues = nil
}

// takeBack ends pe's assignment to c for redelivery, counting one more
// redelivery on Shared and Key_Shared subscriptions; c's unacked count
// was already lowered by the caller. It reports false when pe is no
// longer pending at c (acknowledged or parked meanwhile).
func (s *Subscription) takeBack(c *Consumer, pe *Entry) bool {
	if pe.owner != c { // acknowledged, parked or forgotten meanwhile
		return false
	}
	c.redeliverN += int64(pe.numMsgs)
	pe.owner = nil
	s.unpend(pe.pos)
	s.countRedelivery(pe)
	return true
}

// requeue puts one pending entry back for redelivery (a nack or a
// redelivery of named messages). Exclusive and Failover keep no
// redelivery count (their messages carry redeliveryCount 0, as in
// Pulsar, whose single-active-consumer dispatcher tracks none).
func (s *Subscription) requeue(pe *Entry) {
	if o := s.takeFromOwner(pe); o != nil {
		o.redeliverN += int64(pe.numMsgs)
	}
	s.countRedelivery(pe)
	s.replay.Add(pe)
}

// countRedelivery counts one more redelivery of pe.
func (s *Subscription) countRedelivery(pe *Entry) {
	if s.typ == Shared || s.typ == KeyShared {
		pe.redeliveries++
	}
	s.redeliverN += int64(pe.numMsgs)
}

// pushOrder records a newly pending entry in order. An entry of order
// is stale when it has no owner (acknowledged, or back for redelivery);
// an entry pending again whose stale copy is still in order is live
// again there, so it is not pushed twice: taking back a million entries
// and redelivering them leaves order as it was. Once stale entries
// outnumber the pending and replay entries, order is rebuilt from
// pending (amortised O(1) per entry).
func (s *Subscription) pushOrder(pe *Entry) {
	if pe.inOrder {
		return
	}
	pe.inOrder = true
	s.order.Push(pe)
	if len(s.order) > 2*(len(s.pending)+s.replay.Len())+64 {
		s.rebuildOrder()
	}
}

// rebuildOrder makes order hold exactly the pending entries.
func (s *Subscription) rebuildOrder() {
	for _, p := range s.order {
		p.inOrder = false
	}
	clear(s.order)
	s.order = s.order[:0]
	for _, p := range s.pending {
		p.inOrder = true
		s.order = append(s.order, p)
	}
	s.order.Init()
}

// clearOrder empties order (every pending entry was forgotten).
func (s *Subscription) clearOrder() {
	for _, p := range s.order {
		p.inOrder = false
	}
	s.order = nil
}

// dropThroughLocked forgets the pending and replay entries at or before
// target, which a cumulative acknowledgement (of a consumer, a
// transaction or a replicated subscription's update) covered: O(k log n)
// for the k entries dropped.
func (s *Subscription) dropThroughLocked(target position) {
	for len(s.order) > 0 && s.order[0].pos.Compare(target) <= 0 {
		pe := s.order.Pop()
		pe.inOrder = false
		if pe.owner != nil {
			s.dropPending(pe)
		}
	}
	s.replay.RemoveWhile(func(pe *Entry) bool { return pe.pos.Compare(target) <= 0 })
}
