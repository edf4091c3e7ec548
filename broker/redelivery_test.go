package broker

import (
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestRedeliveryCountByType: a nacked message comes back with
// redeliveryCount 1 on Shared and Key_Shared and 0 on Exclusive and
// Failover, as Pulsar reports them.
func TestRedeliveryCountByType(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	for _, tc := range []struct {
		typ  pulsar.SubscriptionType
		want uint32
	}{
		{pulsar.Exclusive, 0},
		{pulsar.Failover, 0},
		{pulsar.Shared, 1},
		{pulsar.KeyShared, 1},
	} {
		topic := newTopicName("redelivery")
		cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: tc.typ, NackRedeliveryDelay: 50 * time.Millisecond})
		prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
		sendAsyncAll(t, prod, 1, payloadMsg)
		m := receiveN(t, cons, 1)[0]
		if m.RedeliveryCount() != 0 {
			t.Fatalf("type %v: first delivery count %d", tc.typ, m.RedeliveryCount())
		}
		cons.Nack(m)
		m = receiveN(t, cons, 1)[0]
		if m.RedeliveryCount() != tc.want {
			t.Fatalf("type %v: redelivered with count %d, want %d", tc.typ, m.RedeliveryCount(), tc.want)
		}
		cons.Ack(m)
		cons.Close()
		prod.Close()
	}
}
