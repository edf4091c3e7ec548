package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Pulsar clients produce and consume through a `magnetar broker` process
// whose managed ledgers live on three `magnetar bookie` processes at E=3,
// Qw=2, Qa=2, with metadata in a real ZooKeeper; a second subscription
// reads everything again after a broker restart (the ledgers are on the
// bookies, the broker keeps nothing).
func TestClusterBrokerProduceConsume(t *testing.T) {
	c := newTestCluster(t)
	for range 3 {
		c.startBookie("")
	}
	b := c.startBroker()
	cl := b.client(t)
	const topic = "persistent://public/default/cluster-e2e"
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "a",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	ctx := context.Background()
	errs := make(chan error, n)
	for i := range n {
		prod.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte(payload(i))}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			errs <- err
		})
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("send: %v", err)
		}
	}
	for i := range n {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		m, err := cons.Receive(rctx)
		cancel()
		if err != nil {
			t.Fatalf("receive %d: %v", i, err)
		}
		if got := string(m.Payload()); got != payload(i) {
			t.Fatalf("message %d = %q, want %q", i, got, payload(i))
		}
		cons.Ack(m)
	}
	c.checkLedgers(3, 2, 2)
	if code, body := b.get(t, "/admin/v2/bookies/all"); code != 200 || strings.Count(string(body), "bookieId") != 3 {
		t.Fatalf("GET /admin/v2/bookies/all: %d %s", code, body)
	}
	cl.Close()
	b.stop()

	// A new broker process reads the topic back from the bookies.
	b2 := c.startBroker()
	cl2 := b2.client(t)
	cons2, err := cl2.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "b",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		m, err := cons2.Receive(rctx)
		cancel()
		if err != nil {
			t.Fatalf("after restart, receive %d: %v", i, err)
		}
		if got := string(m.Payload()); got != payload(i) {
			t.Fatalf("after restart, message %d = %q, want %q", i, got, payload(i))
		}
	}
}
