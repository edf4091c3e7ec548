package broker

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/magnetar-mq/magnetar/brokerconf"
)

func TestE2EChunking(t *testing.T) {
	tb := startBroker(t, func(c *brokerconf.Config) { c.MaxMessageSize = 16 << 10 })
	cl := tb.client(t)
	topic := newTopicName("chunk")
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, EnableChunking: true, DisableBatching: true, ChunkMaxMessageSize: 4 << 10})
	big := bytes.Repeat([]byte("0123456789abcdef"), 4<<10) // 64 KiB > max message size
	if _, err := prod.Send(ctxT(t), &pulsar.ProducerMessage{Payload: big}); err != nil {
		t.Fatal(err)
	}
	m := receiveN(t, cons, 1)[0]
	if !bytes.Equal(m.Payload(), big) {
		t.Fatalf("reassembled %d bytes, want %d", len(m.Payload()), len(big))
	}
	cons.Ack(m)
}

func TestE2EZeroQueueConsumer(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("zeroq")
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", EnableZeroQueueConsumer: true})
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendAsyncAll(t, prod, 3, payloadMsg)
	for i := 0; i < 3; i++ {
		m := receiveN(t, cons, 1)[0]
		if got, want := string(m.Payload()), fmt.Sprintf("m-%d", i); got != want {
			t.Fatalf("message %d = %q, want %q", i, got, want)
		}
		st := getStats(t, tb, topic)
		if c := st.Subscriptions["s"].Consumers; len(c) != 1 || c[0].UnackedMessages != 1 {
			t.Fatalf("zero-queue consumer stats after receive %d: %+v", i, c)
		}
		cons.Ack(m)
		waitUntil(t, "no unacked messages after the chunked message is acked", func() bool {
			return getStats(t, tb, topic).Subscriptions["s"].Consumers[0].UnackedMessages == 0
		})
	}
}

// TestE2ELargeMessages sends entries large enough to be queued to the
// consumer by reference (writev) and checks the client verifies them.
func TestE2ELargeMessages(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("large")
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	var want [][]byte
	sendAsyncAll(t, prod, 20, func(i int) *pulsar.ProducerMessage {
		p := bytes.Repeat([]byte{byte('a' + i)}, 8<<10+i*1000)
		want = append(want, p)
		return &pulsar.ProducerMessage{Payload: p}
	})
	for i, m := range receiveN(t, cons, 20) {
		if !bytes.Equal(m.Payload(), want[i]) {
			t.Fatalf("message %d: %d bytes differ", i, len(m.Payload()))
		}
		cons.Ack(m)
	}
}
