package broker

import (
	"context"
	"os"
	"testing"

	"github.com/magnetar-mq/magnetar/broker/snap"
	"github.com/magnetar-mq/magnetar/internal/testenv"
)

// waitUntil polls cond (a state observation, not a timer) until it holds.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, 0, what, cond)
}

// earliest is the Earliest sentinel of Service's MessageID.
var earliest = MessageID{LedgerID: -1, EntryID: -1}

// TestMain removes the binary testenv.RunWithoutRace built.
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveWithoutRace()
	os.Exit(code)
}

// subBacklog returns the backlog of topic's subscription sub.
func subBacklog(t testing.TB, b *Broker, topic, sub string) int64 {
	t.Helper()
	st, err := topicStats(b, ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	return st.Subscriptions[sub].MsgBacklog
}

// The admin operations the tests use, as package brokeradmin builds them
// on the core's seams (Broker.Topic and the view's operations).

// topicStats returns a topic's stats, loading it if it exists.
func topicStats(b *Broker, ctx context.Context, topic string) (snap.Topic, error) {
	v, err := b.Topic(ctx, topic)
	if err != nil {
		return snap.Topic{}, err
	}
	return v.Snapshot(true), nil
}

// terminate terminates a topic.
func terminate(b *Broker, ctx context.Context, topic string) (MessageID, error) {
	v, err := b.Topic(ctx, topic)
	if err != nil {
		return MessageID{}, err
	}
	return v.Terminate()
}

// skipMessages skips n entries of a subscription's backlog.
func skipMessages(b *Broker, ctx context.Context, topic, sub string, n int64) error {
	v, err := b.Topic(ctx, topic)
	if err != nil {
		return err
	}
	s, ok := v.Subscription(sub)
	if !ok {
		return ErrSubscriptionNotFound
	}
	defer v.CursorsMoved()
	return v.SkipEntries(s, n)
}

// createSubscription adds a durable subscription at id.
func createSubscription(b *Broker, ctx context.Context, topic, sub string, id MessageID) error {
	v, err := b.Topic(ctx, topic)
	if err != nil {
		return err
	}
	defer v.CursorsMoved()
	return v.CreateSubscription(sub, id)
}
