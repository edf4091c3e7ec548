package georep

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/policy"
)

// TestReplicatorDispatchRate: a namespace's replicatorDispatchRate holds
// each replicator to its rate (within ±20 % once the one-period burst is
// spent), and every message still arrives, in order.
func TestReplicatorDispatchRate(t *testing.T) {
	const rate, n = 100, 600
	config := newConfigStore(t)
	a := startGeo(t, "ca", config, geoOptions{})
	b := startGeo(t, "cb", config, geoOptions{})
	ctx := context.Background()
	if err := a.Policies().CreateTenant(ctx, "geo", policy.TenantInfo{AllowedClusters: []string{"ca", "cb"}}); err != nil {
		t.Fatal(err)
	}
	pol := &policy.Policies{ReplicationClusters: []string{"ca", "cb"},
		ReplicatorDispatchRate: map[string]policy.DispatchRate{"ca": {DispatchThrottlingRateInMsg: rate, RatePeriodInSecond: 1}}}
	if err := a.Policies().CreateNamespace(ctx, "geo/rl", pol); err != nil {
		t.Fatal(err)
	}
	topic := geoTopic("rl")
	consB, err := b.Client(t).Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Client(t).CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	// Receive from the start, beside the sends: the arrival times are the
	// replicator's pace, not a backlog that piled up while the producer
	// waited for its acks (under -race the 600 sends take long enough for
	// more than a burst's worth to arrive before a later receive loop).
	var burstEnd, lastAt time.Time
	received := make(chan error, 1)
	go func() {
		for i := range n {
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			m, err := consB.Receive(rctx)
			cancel()
			if err != nil {
				received <- fmt.Errorf("cb: %d of %d: %w", i, n, err)
				return
			}
			if want := fmt.Sprintf("m-%d", i); string(m.Payload()) != want {
				received <- fmt.Errorf("cb got %q, want %q", m.Payload(), want)
				return
			}
			consB.Ack(m)
			if i == rate {
				burstEnd = time.Now()
			}
		}
		lastAt = time.Now()
		received <- nil
	}()
	errs := make(chan error, n)
	for i := range n {
		p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "m-%d", i)}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			errs <- err
		})
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := <-received; err != nil {
		t.Fatal(err)
	}
	got := float64(n-1-rate) / lastAt.Sub(burstEnd).Seconds()
	if got < rate*0.8 || got > rate*1.2 {
		t.Fatalf("replicated at %.1f msg/s after the burst, want %d ±20%%", got, rate)
	}
	st, err := a.Admin().Reads.TopicStats(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("replicated at %.1f msg/s (limit %d), stats %+v", got, rate, st.Replication["cb"])
}

// TestReplicatedSubscriptionFlagSurvivesReload: the replicated flag is
// kept with the cursor. After the topic is unloaded and loaded again, a
// consumer that does not ask for replication still has its acks carried
// to the other cluster.
func TestReplicatedSubscriptionFlagSurvivesReload(t *testing.T) {
	config := newConfigStore(t)
	a := startGeo(t, "ca", config, geoOptions{})
	b := startGeo(t, "cb", config, geoOptions{})
	geoNamespace(t, a, "rsr", "ca", "cb")
	topic := geoTopic("rsr")
	ctx := context.Background()
	ca := a.Client(t)
	first, err := ca.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "rs", ReplicateSubscriptionState: true,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	if _, err := a.UnloadTopic(topic); err != nil {
		t.Fatal(err)
	}
	p, err := ca.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := a.Admin().Reads.TopicStats(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Subscriptions["rs"].IsReplicated {
		t.Fatal("the reloaded subscription lost its replicated flag")
	}
	const n = 30
	for i := range n {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "m-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	plain, err := ca.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "rs"})
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		m, err := plain.Receive(rctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if err := plain.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	brokertest.WaitFor(t, "acks carried to cb", func() bool {
		st, err := b.Admin().Reads.TopicStats(ctx, topic)
		if err != nil {
			return false
		}
		ss, ok := st.Subscriptions["rs"]
		return ok && ss.MsgBacklog < n
	})
}
