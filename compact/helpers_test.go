package compact

import (
	"context"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
)

// The tests run brokers from broker/brokertest with compaction on;
// testBroker adds the Compactor the broker registered.

type testBroker struct {
	*brokertest.Broker
	x      *Compactor
	holder *compactorHolder
}

type compactorHolder struct{ x *Compactor }

func startCompacting(t testing.TB, o brokertest.Options, cfg Config) *testBroker {
	t.Helper()
	h := &compactorHolder{}
	o.Features = func(b *broker.Broker) error {
		x, err := Enable(b, cfg)
		h.x = x
		return err
	}
	b := brokertest.Start(t, o)
	return &testBroker{Broker: b, x: h.x, holder: h}
}

func startBroker(t testing.TB, cfg Config) *testBroker {
	t.Helper()
	return startCompacting(t, brokertest.Options{}, cfg)
}

func (tb *testBroker) client(t testing.TB) pulsar.Client { return tb.Client(t) }

func (tb *testBroker) Compact(ctx context.Context, topic string) error {
	return tb.x.Compact(ctx, topic)
}

func (tb *testBroker) CompactionStatus(ctx context.Context, topic string) (string, string, error) {
	return tb.x.CompactionStatus(ctx, topic)
}

func mustProducer(t testing.TB, cl pulsar.Client, o pulsar.ProducerOptions) pulsar.Producer {
	t.Helper()
	return brokertest.Producer(t, cl, o)
}

func mustConsumer(t testing.TB, cl pulsar.Client, o pulsar.ConsumerOptions) pulsar.Consumer {
	t.Helper()
	return brokertest.Consumer(t, cl, o)
}

func receiveN(t testing.TB, c pulsar.Consumer, n int) []pulsar.Message {
	t.Helper()
	return brokertest.Receive(t, c, n)
}

func ctxT(t testing.TB) context.Context { return brokertest.Ctx(t) }

func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	brokertest.WaitFor(t, what, cond)
}

func newTopicName(prefix string) string { return brokertest.Topic(prefix) }
