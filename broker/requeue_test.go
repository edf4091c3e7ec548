package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/internal/testenv"
)

// TestE2ERequeueManyUnackedWithoutRace runs TestE2ERequeueManyUnacked in
// a build without the race detector, when this one has it: its stats
// latency is checked only in that build (package broker/dispatch's
// TestClientSizedOpsWithoutRace runs the loop's million-entry tests so).
func TestE2ERequeueManyUnackedWithoutRace(t *testing.T) {
	if !raceEnabled {
		return // it runs in this build
	}
	testenv.RunWithoutRace(t, "^TestE2ERequeueManyUnacked$")
}

// TestE2ERequeueManyUnacked is the report behind the tests above, end to
// end: with both unacked limits at 0 (unlimited), a Shared consumer of a
// real client receives n unbatched messages without acking and closes;
// the other consumer receives all n within seconds, and topic stats
// answer within 200 ms throughout (checked in the build without the race
// detector). n is 1M with MAGNETAR_SOAK=1, else 50,000 (the 1M sizes of
// the loop run in package broker/dispatch's TestRequeueMillionUnacked).
func TestE2ERequeueManyUnacked(t *testing.T) {
	n := 50_000
	if testenv.Soak() {
		n = 1 << 20 // the report's 1M unacked; 64Ki under the race detector
		if raceEnabled {
			n = 1 << 16
		}
	}
	tb := startBroker(t, func(c *brokerconf.Config) { c.MaxUnackedPerConsumer, c.MaxUnackedPerSubscription = -1, -1 })
	cl := tb.client(t)
	topic := "persistent://public/default/" + newTopicName("requeue-many")
	a, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared, ReceiverQueueSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	produceN(t, cl, topic, n, 16)
	// Receiving 2n messages takes a while under the race detector on a
	// loaded machine; "within seconds" is checked on the first redelivery.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for i := range n {
		if _, err := a.Receive(ctx); err != nil {
			t.Fatalf("receive %d/%d: %v", i, n, err)
		}
	}
	waitUntil(t, "all unacked at a", func() bool { return subStats(t, tb, topic, "s").UnackedMessages == int64(n) })
	b, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared, ReceiverQueueSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	probe := testenv.StartLatencyProbe(t, 20*time.Millisecond, func() {
		if _, err := topicStats(tb.Broker, ctx, topic); err != nil {
			t.Errorf("stats: %v", err)
		}
	})
	start := time.Now()
	a.Close()
	var first time.Duration
	for i := range n {
		m, err := b.Receive(ctx)
		if err != nil {
			t.Fatalf("receive redelivery %d/%d: %v", i, n, err)
		}
		if i == 0 {
			first = time.Since(start)
		}
		if m.RedeliveryCount() != 1 {
			t.Fatalf("message %v redelivery count %d, want 1", m.ID(), m.RedeliveryCount())
		}
		b.Ack(m)
	}
	what := fmt.Sprintf("%d unacked: first redelivery after %v, all after %v", n, first, time.Since(start))
	if raceEnabled {
		// The race detector makes every turn of the loop several times
		// slower: latency is checked in TestE2ERequeueManyUnackedWithoutRace.
		probe.Report(t, what)
	} else {
		probe.Check(t, what)
	}
	if first > 5*time.Second {
		t.Errorf("first redelivery %v after the consumer closed, want within seconds", first)
	}
}
