package brokeradmin

import (
	"context"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// Reads reads a topic's stats, state and entries (admin.TopicReads).
type Reads struct{ b *broker.Broker }

// TopicStats returns the stats of a topic, loading it if it exists.
func (r Reads) TopicStats(ctx context.Context, topic string) (broker.TopicStats, error) {
	t, err := r.b.Topic(ctx, topic)
	if err != nil {
		return broker.TopicStats{}, err
	}
	return t.FullStats(), nil
}

// InternalStats returns Pulsar's internal stats of a topic (managed
// ledger and cursors).
func (r Reads) InternalStats(ctx context.Context, topic string) (broker.InternalStats, error) {
	t, err := r.b.Topic(ctx, topic)
	if err != nil {
		return broker.InternalStats{}, err
	}
	return t.InternalStats(ctx), nil
}

// LastMessageID returns the id of the topic's last message.
func (r Reads) LastMessageID(ctx context.Context, topic string) (broker.MessageID, error) {
	t, err := r.b.Topic(ctx, topic)
	if err != nil {
		return broker.MessageID{}, err
	}
	return t.LastMessageID(), nil
}

// ReadEntry returns the stored entry (a Pulsar batch) at id.
func (r Reads) ReadEntry(ctx context.Context, topic string, id broker.MessageID) ([]byte, error) {
	t, err := r.b.Topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	if !t.Persistent() {
		return nil, broker.Reason(broker.ErrNotAllowed, "not supported on non-persistent topics")
	}
	return t.ReadEntry(broker.Position{LedgerID: id.LedgerID, EntryID: id.EntryID})
}

// MessageIDByIndex returns the entry holding the message whose broker
// entry metadata index is idx (Broker.MessageIDByIndex).
func (r Reads) MessageIDByIndex(ctx context.Context, topic string, idx int64) (broker.MessageID, error) {
	return r.b.MessageIDByIndex(ctx, topic, idx)
}

// Lifecycle unloads and terminates topics (admin.TopicLifecycle).
type Lifecycle struct{ b *broker.Broker }

// UnloadTopic closes a loaded topic; clients reconnect.
func (l Lifecycle) UnloadTopic(topic string) (bool, error) { return l.b.UnloadTopic(topic) }

// Terminate refuses further publishes and returns the last message id.
func (l Lifecycle) Terminate(ctx context.Context, topic string) (broker.MessageID, error) {
	t, err := l.b.Topic(ctx, topic)
	if err != nil {
		return broker.MessageID{}, err
	}
	return t.Terminate()
}

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

// stored resolves a subscription whose cursor the operations move
// (Topic.StoredSubscription).
func (a Subscriptions) stored(ctx context.Context, topic, sub string) (broker.Topic, broker.Subscription, error) {
	t, err := a.b.Topic(ctx, topic)
	if err != nil {
		return t, broker.Subscription{}, err
	}
	s, err := t.StoredSubscription(sub)
	return t, s, err
}

// SkipMessages skips n entries of the backlog (n < 0: all of it).
func (a Subscriptions) SkipMessages(ctx context.Context, topic, sub string, n int64) error {
	t, s, err := a.stored(ctx, topic, sub)
	if err != nil {
		return err
	}
	defer t.CursorsMoved()
	return t.SkipMessages(s, n)
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
// subscription's backlog.
func (a Subscriptions) PeekMessage(ctx context.Context, topic, sub string, n int64) (broker.MessageID, []byte, error) {
	t, s, err := a.stored(ctx, topic, sub)
	if err != nil {
		return broker.MessageID{}, nil, err
	}
	return t.PeekMessage(ctx, s, n)
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
