package dispatch

import (
	"github.com/magnetar-mq/magnetar/broker/storage"
	"log/slog"
	"time"
)

// The subscription as the core drives it. Name, TopicName and Logger
// may be called anywhere; the rest are loop methods (from Do or Call).

// Name returns the subscription's name.
func (s *Subscription) Name() string { return s.name }

// TopicName returns its topic's name.
func (s *Subscription) TopicName() string { return s.topic }

// Logger returns the logger it logs to.
func (s *Subscription) Logger() *slog.Logger { return s.log }

// Type returns the subscription type (its consumers' since the first
// attached).
func (s *Subscription) Type() Type { return s.typ }

// Cursor returns the cursor dispatch reads.
func (s *Subscription) Cursor() storage.Cursor { return s.cur }

// SetCursor replaces the cursor (read_compacted switching a subscription
// without consumers to the compacted view over the same cursor).
func (s *Subscription) SetCursor(c storage.Cursor) { s.cur = c }

// Consumers returns the number of consumers attached.
func (s *Subscription) Consumers() int { return len(s.consumers) }

// Others reports whether consumers other than c are attached.
func (s *Subscription) Others(c *Consumer) bool {
	for _, o := range s.consumers {
		if o != c {
			return true
		}
	}
	return false
}

// Dispatch delivers what permits allow now (after unblocking consumers
// whose unacked count fell, as withheld or requeued entries change it).
func (s *Subscription) Dispatch() {
	s.refreshBlocked()
	s.dispatch()
}

// UnackedLimitsChanged dispatches if consumers or the subscription
// blocked on unacked messages are unblocked by the limits now.
func (s *Subscription) UnackedLimitsChanged() {
	if s.refreshBlocked() {
		s.dispatch()
	}
}

// PendingMessages returns the message count of an entry delivered and not
// yet acknowledged (false: not pending).
func (s *Subscription) PendingMessages(pos storage.Position) (int, bool) {
	if pe := s.pending[pos]; pe != nil {
		return pe.numMsgs, true
	}
	return 0, false
}

// Requeue sends a delivered, unacknowledged entry back for redelivery
// (whole: a partially acknowledged batch goes back with all its
// messages); nothing if pos is not pending.
func (s *Subscription) Requeue(pos storage.Position) {
	if pe := s.pending[pos]; pe != nil {
		s.requeue(pe)
	}
}

// Return puts a withheld entry back for delivery (in position order,
// before new entries), unless it was acknowledged meanwhile.
func (s *Subscription) Return(e *Entry) {
	if !s.cur.IsAcked(e.pos) {
		s.replay.Add(e)
	}
}

// NoteAck records an acknowledgement by c (handled by a feature) in the
// subscription's and c's stats (last ack time).
func (s *Subscription) NoteAck(c *Consumer) {
	s.lastAck = time.Now().UnixMilli()
	c.lastAck = s.lastAck
}

// Retire detaches every consumer without redelivery bookkeeping (the
// subscription is being deleted, or its topic closes), telling each but
// except with CLOSE_CONSUMER when notify is set; afterwards no consumer
// attaches (AddConsumer refuses).
func (s *Subscription) Retire(notify bool, except *Consumer) {
	for _, c := range s.consumers {
		s.sel.Remove(c)
		c.closed = true
		if notify && c != except {
			c.sink.CloseConsumer(c)
		}
	}
	s.consumers = nil
	s.consumersChanged()
	s.closedLoop = true
}

// RetireIfEmpty retires the subscription if it has no consumer and
// reports whether it did.
func (s *Subscription) RetireIfEmpty() bool {
	if len(s.consumers) > 0 {
		return false
	}
	s.closedLoop = true
	return true
}

// droppable reports whether a subscription without consumers goes: not
// durable, not kept for a seek's consumers.
func (s *Subscription) droppable() bool {
	return len(s.consumers) == 0 && !s.cur.Durable() && !s.keepEmpty
}
