package broker

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/policy"
)

// waitUnloaded waits (polling: an unload has no event a client sees)
// until the broker no longer holds full in memory.
func waitUnloaded(t *testing.T, tb *testBroker, full string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for tb.lookupTopic(full) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("%s still loaded after 20s", full)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestIdleUnloadLosesNothing: a topic whose producer and consumer closed
// is unloaded after IdleTopicUnloadTime and loaded again on the next use
// with its messages, its cursor (mark-delete and individual acks) and
// its producer's last sequence id (deduplication) intact.
func TestIdleUnloadLosesNothing(t *testing.T) {
	tb := startBroker(t, func(c *Config) {
		c.Deduplication = true
		c.IdleTopicUnloadTime = time.Second
	})
	cl := tb.client(t)
	topic := "persistent://public/default/" + newTopicName("idle-unload")
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared, AckWithResponse: true})
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, Name: "p1", DisableBatching: true})
	for i := range 10 {
		if _, err := prod.Send(ctxT(t), payloadMsg(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Ack m-0..m-2 (the mark-delete moves) and m-5, m-7 (individual).
	for _, m := range receiveN(t, cons, 10) {
		switch string(m.Payload()) {
		case "m-0", "m-1", "m-2", "m-5", "m-7":
			if err := cons.Ack(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	// AckWithResponse: the acks reached the cursor; the unload persists
	// it.
	cons.Close()
	prod.Close()
	waitUnloaded(t, tb, topic)

	// Reloaded by the producer: a re-send of sequence id 9 is dropped as
	// a duplicate (the client's LastSequenceID counts only receipts).
	prod2 := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, Name: "p1", DisableBatching: true})
	if got := tb.lookupTopic(topic).lastSequence("p1"); got != 9 {
		t.Fatalf("broker's last sequence id of p1 after reload = %d, want 9", got)
	}
	seq := int64(9)
	id, err := prod2.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte("dup"), SequenceID: &seq})
	if err != nil {
		t.Fatal(err)
	}
	// Refused as a duplicate: Pulsar's receipt for a dropped send is -1:-1.
	if id.LedgerID() != -1 || id.EntryID() != -1 {
		t.Fatalf("re-sent sequence id 9 after reload stored at %d:%d, want the duplicate receipt -1:-1", id.LedgerID(), id.EntryID())
	}
	if _, err := prod2.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte("new")}); err != nil {
		t.Fatal(err)
	}
	prod2.Close()
	waitUnloaded(t, tb, topic)

	// Reloaded by the subscription: exactly the unacked messages and the
	// new one, never the duplicate.
	cons2 := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	var got []string
	for _, m := range receiveN(t, cons2, 6) {
		got = append(got, string(m.Payload()))
		cons2.Ack(m)
	}
	want := []string{"m-3", "m-4", "m-6", "m-8", "m-9", "new"}
	if !slices.Equal(got, want) {
		t.Fatalf("after reload got %v, want %v", got, want)
	}
	// Nothing else is delivered (an unacked "dup" would show up here).
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if m, err := cons2.Receive(ctx); err == nil {
		t.Fatalf("unexpected extra message %q", m.Payload())
	}
}

// TestIdleUnloadKeepsBusyTopics: a topic with a connected consumer or
// producer stays loaded however long it is idle.
func TestIdleUnloadKeepsBusyTopics(t *testing.T) {
	tb := startBroker(t, func(c *Config) { c.IdleTopicUnloadTime = time.Second })
	cl := tb.client(t)
	withCons := "persistent://public/default/" + newTopicName("idle-cons")
	withProd := "persistent://public/default/" + newTopicName("idle-prod")
	idle := "persistent://public/default/" + newTopicName("idle-none")
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: withCons, SubscriptionName: "s"})
	defer cons.Close()
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: withProd})
	defer prod.Close()
	c2 := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: idle, SubscriptionName: "s"})
	c2.Close()
	waitUnloaded(t, tb, idle)
	// An hour later by the clock of the check: still nothing to unload.
	if n := tb.unloadIdleTopics(time.Now().Add(time.Hour)); n != 0 {
		t.Fatalf("unloaded %d busy topics", n)
	}
	for _, full := range []string{withCons, withProd} {
		if tb.lookupTopic(full) == nil {
			t.Errorf("%s was unloaded while in use", full)
		}
	}
}

// TestMetricsNamespaceAggregation: with exposeTopicLevelMetricsInPrometheus
// off, /metrics has no per-topic or per-subscription series, and the
// topic metrics are summed per namespace.
func TestMetricsNamespaceAggregation(t *testing.T) {
	tb := startBroker(t, func(c *Config) { c.HideTopicLevelMetrics = true })
	cl := tb.client(t)
	for i := range 3 {
		topic := "persistent://public/default/" + newTopicName("nsagg")
		c := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
		defer c.Close()
		p := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
		defer p.Close()
		for j := 0; j <= i; j++ {
			if _, err := p.Send(ctxT(t), payloadMsg(j)); err != nil {
				t.Fatal(err)
			}
		}
	}
	code, body := httpDo(t, tb, "GET", "/metrics", "")
	if code != 200 {
		t.Fatalf("/metrics %d %s", code, body)
	}
	for _, line := range strings.Split(body, "\n") {
		if strings.Contains(line, `topic="`) || strings.HasPrefix(line, "pulsar_subscription_") {
			t.Fatalf("topic-level series with the switch off: %s", line)
		}
	}
	for _, want := range []string{
		`pulsar_producers_count{cluster="standalone",namespace="public/default"} 3`,
		`pulsar_subscriptions_count{cluster="standalone",namespace="public/default"} 3`,
		`pulsar_in_messages_total{cluster="standalone",namespace="public/default"} 6`,
		`pulsar_msg_backlog{cluster="standalone",namespace="public/default"} 6`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("missing %q in /metrics:\n%s", want, grepLines(body, "namespace="))
		}
	}
}

func grepLines(body, sub string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestIdleUnloadForgetsTopicPolicies: an unloaded topic's cached
// topic-level policies are dropped (not left until the next policy
// refresh) and read again when it loads: a limit set before the unload
// still holds after it.
func TestIdleUnloadForgetsTopicPolicies(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := "persistent://public/default/" + newTopicName("idle-policies")
	tn, err := parseTopicName(topic)
	if err != nil {
		t.Fatal(err)
	}
	key := topicPolicyKey(tn)
	one := 1
	if err := tb.policies.UpdateTopic(ctxT(t), key, func(tp *policy.TopicPolicies) error {
		tp.MaxProducerPerTopic = &one
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	p := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic})
	p.Close()
	if _, ok := tb.policies.CachedTopic(key); !ok {
		t.Fatal("a loaded topic's policies are not cached")
	}
	if n := tb.unloadIdleTopics(time.Now().Add(time.Hour)); n != 1 || tb.lookupTopic(topic) != nil {
		t.Fatalf("unloaded %d topics, want the one", n)
	}
	if _, ok := tb.policies.CachedTopic(key); ok {
		t.Fatal("the unloaded topic's policies are still cached")
	}
	p1 := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic})
	defer p1.Close()
	if p2, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic}); err == nil {
		p2.Close()
		t.Fatal("a second producer was accepted after the reload (maxProducers 1)")
	}
}
