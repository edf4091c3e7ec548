package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestE2EBrokerEntryMetadata: with both interceptors and exposure on,
// every message carries the broker's publish time and its index in the
// topic (batches included), and the index continues after a restart.
func TestE2EBrokerEntryMetadata(t *testing.T) {
	mut := func(c *Config) {
		c.BrokerEntryMetadataInterceptors = []string{InterceptorBrokerTimestamp, InterceptorIndex}
		c.ExposeBrokerEntryMetadata = true
	}
	tb := startBroker(t, mut)
	topic := newTopicName("bem")
	before := time.Now().Add(-time.Second)
	check := func(tb *testBroker, from, n int) {
		cl := tb.client(t)
		cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 3, BatchingMaxPublishDelay: 50 * time.Millisecond})
		sendAsyncAll(t, prod, n, payloadMsg)
		for i, m := range receiveN(t, cons, n) {
			bt := m.BrokerPublishTime()
			if bt == nil || bt.Before(before) || bt.After(time.Now().Add(time.Second)) {
				t.Fatalf("message %d: broker publish time %v, want about now", i, bt)
			}
			if idx := m.Index(); idx == nil || *idx != uint64(from+i) {
				t.Fatalf("message %d (%s): index %v, want %d", i, m.Payload(), idx, from+i)
			}
			if got, want := string(m.Payload()), fmt.Sprintf("m-%d", i); got != want {
				t.Fatalf("payload %q, want %q", got, want)
			}
			cons.Ack(m)
		}
		cons.Close()
		prod.Close()
		cl.Close()
	}
	check(tb, 0, 10)
	tb = tb.restart(t)
	check(tb, 10, 5)
}

// TestE2EBrokerEntryMetadataHidden: stored but not exposed (Pulsar's
// default), consumers get plain entries.
func TestE2EBrokerEntryMetadataHidden(t *testing.T) {
	tb := startBroker(t, func(c *Config) {
		c.BrokerEntryMetadataInterceptors = []string{InterceptorBrokerTimestamp, InterceptorIndex}
	})
	cl := tb.client(t)
	topic := newTopicName("bemhidden")
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendAsyncAll(t, prod, 3, payloadMsg)
	for i, m := range receiveN(t, cons, 3) {
		if m.BrokerPublishTime() != nil || m.Index() != nil {
			t.Fatalf("message %d: broker entry metadata exposed: %v %v", i, m.BrokerPublishTime(), m.Index())
		}
		if got, want := string(m.Payload()), fmt.Sprintf("m-%d", i); got != want {
			t.Fatalf("payload %q, want %q", got, want)
		}
	}
}

func TestBrokerEntryMetadataBadInterceptor(t *testing.T) {
	_, err := New(Config{BrokerEntryMetadataInterceptors: []string{"org.example.Nope"}}, Deps{Metadata: newMemMeta()})
	if err == nil {
		t.Fatal("unknown interceptor accepted")
	}
}
