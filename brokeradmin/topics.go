package brokeradmin

import (
	"context"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/topicstats"
)

// Reads reads a topic's stats, state and entries (admin.TopicReads).
type Reads struct{ b *broker.Broker }

// TopicStats returns the stats of a topic, loading it if it exists
// (package topicstats builds them, with the storage reads of the admin
// API's stats).
func (r Reads) TopicStats(ctx context.Context, topic string) (topicstats.TopicStats, error) {
	t, err := r.b.Topic(ctx, topic)
	if err != nil {
		return topicstats.TopicStats{}, err
	}
	return topicstats.For(r.b).Full(t), nil
}

// InternalStats returns Pulsar's internal stats of a topic (managed
// ledger and cursors).
func (r Reads) InternalStats(ctx context.Context, topic string) (topicstats.InternalStats, error) {
	t, err := r.b.Topic(ctx, topic)
	if err != nil {
		return topicstats.InternalStats{}, err
	}
	return topicstats.For(r.b).Internal(ctx, t), nil
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
