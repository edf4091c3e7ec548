package brokeradmin

import (
	"context"
	"strings"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// Subscriptions manages a topic's subscriptions (admin.Subscriptions).
// The operations that move cursors tell the broker's CursorObservers
// (Topic.CursorsMoved): a held producer may resume.
type Subscriptions struct{ b *broker.Broker }

// Subscriptions lists a topic's subscriptions.
func (a Subscriptions) Subscriptions(ctx context.Context, topic string) ([]string, error) {
	t, err := a.b.Topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, s := range t.Subscriptions() {
		names = append(names, s.Name())
	}
	return names, nil
}

// CreateSubscription adds a durable subscription positioned at id
// (Earliest, Latest or the entry to read first).
func (a Subscriptions) CreateSubscription(ctx context.Context, topic, name string, id broker.MessageID) error {
	if err := pulsarproto.CheckSubscriptionName(name); err != nil {
		return broker.Reason(broker.ErrPreconditionFailed, err.Error())
	}
	if strings.HasPrefix(name, broker.ReplicatorPrefix+".") {
		return broker.Reason(broker.ErrPreconditionFailed, "Subscription name "+name+" is reserved for replication")
	}
	t, err := a.b.Topic(ctx, topic)
	if err != nil {
		return err
	}
	defer t.CursorsMoved()
	return t.CreateSubscription(name, id)
}

// DeleteSubscription deletes a subscription; without force it refuses
// one with connected consumers (ErrPreconditionFailed).
func (a Subscriptions) DeleteSubscription(ctx context.Context, topic, sub string, force bool) error {
	t, err := a.b.Topic(ctx, topic)
	if err != nil {
		return err
	}
	defer t.CursorsMoved()
	return t.DeleteSubscription(sub, force)
}

// stored resolves a subscription whose cursor the operations below move:
// one whose cursor is the managed ledger's (durable or not), not a
// non-persistent topic's nor a feature's view over it (the compacted
// reads); ErrSubscriptionNotFound, or ErrNotAllowed for one of those.
func (a Subscriptions) stored(ctx context.Context, topic, sub string) (broker.Topic, broker.Subscription, error) {
	t, err := a.b.Topic(ctx, topic)
	if err != nil {
		return t, broker.Subscription{}, err
	}
	s, ok := t.Subscription(sub)
	if !ok {
		return t, s, broker.Reason(broker.ErrSubscriptionNotFound, "Subscription not found")
	}
	managed := false
	if !s.Call(func(l broker.SubLoop) { managed = storage.ManagedCursor(l.Cursor()) != nil }) {
		return t, s, broker.Reason(broker.ErrSubscriptionNotFound, "Subscription not found")
	}
	if !managed {
		return t, s, broker.Reason(broker.ErrNotAllowed, "operation not supported on this subscription")
	}
	return t, s, nil
}

// SkipMessages skips n entries of the backlog (n < 0: all of it).
func (a Subscriptions) SkipMessages(ctx context.Context, topic, sub string, n int64) error {
	t, s, err := a.stored(ctx, topic, sub)
	if err != nil {
		return err
	}
	defer t.CursorsMoved()
	return t.SkipEntries(s, n)
}

// ExpireMessages acknowledges the messages published more than secs
// ago, on sub or (sub == "") every subscription.
func (a Subscriptions) ExpireMessages(ctx context.Context, topic, sub string, secs int64) error {
	if sub == "" {
		t, err := a.b.Topic(ctx, topic)
		if err != nil {
			return err
		}
		defer t.CursorsMoved()
		for _, s := range t.Subscriptions() {
			if err := t.ExpireMessages(s, secs); err != nil {
				return err
			}
		}
		return nil
	}
	t, s, err := a.stored(ctx, topic, sub)
	if err != nil {
		return err
	}
	defer t.CursorsMoved()
	return t.ExpireMessages(s, secs)
}

// ResetCursor moves the subscription to id (or, byTime, to the first
// message published at or after tsMillis) and disconnects its
// consumers.
func (a Subscriptions) ResetCursor(ctx context.Context, topic, sub string, id broker.MessageID, byTime bool, tsMillis int64) error {
	t, s, err := a.stored(ctx, topic, sub)
	if err != nil {
		return err
	}
	defer t.CursorsMoved()
	return t.ResetCursor(s, id, byTime, tsMillis)
}

// PeekMessage returns the n-th (1-based) unacknowledged entry of the
// subscription's backlog: the walk from the mark-delete position runs on
// the subscription's loop, the read after it.
func (a Subscriptions) PeekMessage(ctx context.Context, topic, sub string, n int64) (broker.MessageID, []byte, error) {
	t, s, err := a.stored(ctx, topic, sub)
	if err != nil {
		return broker.MessageID{}, nil, err
	}
	ls := t.Ledger().Stats().Ledgers
	var pos storage.Position
	found := true
	ran := s.Call(func(l broker.SubLoop) {
		pos = l.MarkDelete()
		for left := n; left > 0; {
			next, ok := mledger.NextPosition(ls, mledger.Position(pos))
			if !ok {
				found = false
				return
			}
			if pos = storage.Position(next); !l.IsAcked(pos) {
				left--
			}
		}
	})
	switch {
	case !ran:
		return broker.MessageID{}, nil, broker.Reason(broker.ErrSubscriptionNotFound, "Subscription not found")
	case !found:
		return broker.MessageID{}, nil, broker.Reason(broker.ErrTopicNotFound, "Message not found")
	}
	data, err := t.ReadEntry(pos)
	if err != nil {
		return broker.MessageID{}, nil, err
	}
	return broker.MessageID{LedgerID: pos.LedgerID, EntryID: pos.EntryID, Partition: t.Partition(), BatchIndex: -1}, data, nil
}

// SetReplicatedSubscription turns a durable subscription's replicated
// state on or off (docs/geo-replication.md).
func (a Subscriptions) SetReplicatedSubscription(ctx context.Context, topic, sub string, replicated bool) error {
	t, err := a.b.Topic(ctx, topic)
	if err != nil {
		return err
	}
	if !t.Persistent() {
		return broker.Reason(broker.ErrNotAllowed, "Replicated subscriptions need a persistent topic")
	}
	s, ok := t.Subscription(sub)
	if !ok {
		return broker.Reason(broker.ErrSubscriptionNotFound, "Subscription not found")
	}
	if !s.Durable() {
		return broker.Reason(broker.ErrPreconditionFailed, "A non-durable subscription cannot be replicated")
	}
	return s.SetReplicated(replicated)
}
