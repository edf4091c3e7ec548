package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/policy"
)

// TestReplicatorDispatchRate: a namespace's replicatorDispatchRate holds
// each replicator to its rate (within ±20 % once the one-period burst is
// spent), and every message still arrives, in order.
func TestReplicatorDispatchRate(t *testing.T) {
	const rate, n = 100, 600
	config := newMemMeta()
	a := startGeoBroker(t, "ca", config, nil)
	b := startGeoBroker(t, "cb", config, nil)
	ctx := context.Background()
	if err := a.policies.CreateTenant(ctx, "geo", policy.TenantInfo{AllowedClusters: []string{"ca", "cb"}}); err != nil {
		t.Fatal(err)
	}
	pol := &policy.Policies{ReplicationClusters: []string{"ca", "cb"},
		ReplicatorDispatchRate: map[string]policy.DispatchRate{"ca": {DispatchThrottlingRateInMsg: rate, RatePeriodInSecond: 1}}}
	if err := a.policies.CreateNamespace(ctx, "geo/rl", pol); err != nil {
		t.Fatal(err)
	}
	topic := "persistent://geo/rl/" + newTopicName("t")
	consB, err := b.client(t).Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.client(t).CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
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
	var burstEnd time.Time
	for i := range n {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		m, err := consB.Receive(rctx)
		cancel()
		if err != nil {
			t.Fatalf("cb: %d of %d: %v", i, n, err)
		}
		if want := fmt.Sprintf("m-%d", i); string(m.Payload()) != want {
			t.Fatalf("cb got %q, want %q", m.Payload(), want)
		}
		consB.Ack(m)
		if i == rate {
			burstEnd = time.Now()
		}
	}
	got := float64(n-1-rate) / time.Since(burstEnd).Seconds()
	if got < rate*0.8 || got > rate*1.2 {
		t.Fatalf("replicated at %.1f msg/s after the burst, want %d ±20%%", got, rate)
	}
	st, err := a.TopicStats(ctx, topic)
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
	config := newMemMeta()
	a := startGeoBroker(t, "ca", config, nil)
	b := startGeoBroker(t, "cb", config, nil)
	geoNamespace(t, a, "rsr", "ca", "cb")
	topic := "persistent://geo/rsr/" + newTopicName("t")
	ctx := context.Background()
	ca := a.client(t)
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
	st, err := a.TopicStats(ctx, topic)
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
	waitUntil(t, "acks carried to cb", func() bool {
		st, err := b.TopicStats(ctx, topic)
		if err != nil {
			return false
		}
		ss, ok := st.Subscriptions["rs"]
		return ok && ss.MsgBacklog < n
	})
}
