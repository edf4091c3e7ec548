package brokeradmin

import (
	"context"
	"fmt"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/storage"
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
	return t.ReadEntry(storage.Position{LedgerID: id.LedgerID, EntryID: id.EntryID})
}

// messageIndexer is the feature that numbers messages (package
// entrymeta's interceptor); the last one registered answers.
type messageIndexer interface {
	IndexesMessages() bool
	PositionOfIndex(t broker.Topic, idx int64) (storage.Position, error)
}

// MessageIDByIndex returns the id of the entry holding the message whose
// broker entry metadata index is idx (Pulsar's getMessageIdByIndex).
func (r Reads) MessageIDByIndex(ctx context.Context, topic string, idx int64) (broker.MessageID, error) {
	var ix messageIndexer
	for _, f := range r.b.Features() {
		if i, ok := f.(messageIndexer); ok {
			ix = i
		}
	}
	if ix == nil || !ix.IndexesMessages() {
		return broker.MessageID{}, broker.Reason(broker.ErrPreconditionFailed, "Broker entry metadata index is not enabled: add "+
			"org.apache.pulsar.common.intercept.AppendIndexMetadataInterceptor to brokerEntryMetadataInterceptors")
	}
	if idx < 0 {
		return broker.MessageID{}, broker.Reason(broker.ErrPreconditionFailed, fmt.Sprintf("Invalid index %d: it must be 0 or more", idx))
	}
	if n, err := r.b.Registry().Partitions(ctx, topic); err != nil {
		return broker.MessageID{}, err
	} else if n > 0 {
		return broker.MessageID{}, broker.Reason(broker.ErrPreconditionFailed, topic+" is a partitioned topic: ask one of its partitions (each has its own index)")
	}
	t, err := r.b.Topic(ctx, topic)
	if err != nil {
		return broker.MessageID{}, err
	}
	if !t.Persistent() {
		return broker.MessageID{}, broker.Reason(broker.ErrNotAllowed, "not supported on non-persistent topics")
	}
	pos, err := ix.PositionOfIndex(t, idx)
	if err != nil {
		return broker.MessageID{}, err
	}
	return broker.MessageID{LedgerID: pos.LedgerID, EntryID: pos.EntryID, Partition: t.Partition(), BatchIndex: -1}, nil
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
