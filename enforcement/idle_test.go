package enforcement_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/policy"
)

// loaded reports whether b holds topic in memory.
func loaded(b *brokertest.Broker, topic string) bool {
	found := false
	b.EachTopic(func(t broker.Topic) bool {
		found = t.Name() == topic
		return !found
	})
	return found
}

// waitUnloaded waits (polling: an unload has no event a client sees)
// until b no longer holds topic in memory.
func waitUnloaded(t *testing.T, b *brokertest.Broker, topic string) {
	t.Helper()
	brokertest.WaitFor(t, topic+" unloaded", func() bool { return !loaded(b, topic) })
}

func idleBroker(t *testing.T, more func(*brokerconf.Config)) *brokertest.Broker {
	return brokertest.Start(t, brokertest.Options{Config: func(c *brokerconf.Config) {
		c.IdleTopicUnloadTime = time.Second
		if more != nil {
			more(c)
		}
	}})
}

// TestIdleUnloadLosesNothing: a topic whose producer and consumer closed
// is unloaded after IdleTopicUnloadTime and loaded again on the next use
// with its messages, its cursor (mark-delete and individual acks) and
// its producer's last sequence id (deduplication) intact.
func TestIdleUnloadLosesNothing(t *testing.T) {
	b := idleBroker(t, func(c *brokerconf.Config) { c.Deduplication = true })
	cl := b.Client(t)
	topic := brokertest.Topic("idle-unload")
	cons := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared, AckWithResponse: true})
	prod := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic, Name: "p1", DisableBatching: true})
	brokertest.SendAll(t, prod, 10, brokertest.Msg)
	// Ack m-0..m-2 (the mark-delete moves) and m-5, m-7 (individual).
	for _, m := range brokertest.Receive(t, cons, 10) {
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
	waitUnloaded(t, b, topic)

	// Reloaded by the producer: a re-send of sequence id 9 is dropped as
	// a duplicate (the client's LastSequenceID counts only receipts).
	prod2 := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic, Name: "p1", DisableBatching: true})
	seq := int64(9)
	id, err := prod2.Send(brokertest.Ctx(t), &pulsar.ProducerMessage{Payload: []byte("dup"), SequenceID: &seq})
	if err != nil {
		t.Fatal(err)
	}
	// Refused as a duplicate: Pulsar's receipt for a dropped send is -1:-1.
	if id.LedgerID() != -1 || id.EntryID() != -1 {
		t.Fatalf("re-sent sequence id 9 after reload stored at %d:%d, want the duplicate receipt -1:-1", id.LedgerID(), id.EntryID())
	}
	if _, err := prod2.Send(brokertest.Ctx(t), &pulsar.ProducerMessage{Payload: []byte("new")}); err != nil {
		t.Fatal(err)
	}
	prod2.Close()
	waitUnloaded(t, b, topic)

	// Reloaded by the subscription: exactly the unacked messages and the
	// new one, never the duplicate.
	cons2 := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	var got []string
	for _, m := range brokertest.Receive(t, cons2, 6) {
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
	b := idleBroker(t, nil)
	cl := b.Client(t)
	withCons := brokertest.Topic("idle-cons")
	withProd := brokertest.Topic("idle-prod")
	idle := brokertest.Topic("idle-none")
	brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: withCons, SubscriptionName: "s"})
	brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: withProd})
	c2 := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: idle, SubscriptionName: "s"})
	c2.Close()
	waitUnloaded(t, b, idle)
	// An hour later by the clock of the check: still nothing to unload.
	if n := b.Enforcer.UnloadIdle(time.Now().Add(time.Hour), time.Second); n != 0 {
		t.Fatalf("unloaded %d busy topics", n)
	}
	for _, full := range []string{withCons, withProd} {
		if !loaded(b, full) {
			t.Errorf("%s was unloaded while in use", full)
		}
	}
}

// TestIdleUnloadForgetsTopicPolicies: an unloaded topic's cached
// topic-level policies are dropped (not left until the next policy
// refresh) and read again when it loads: a limit set before the unload
// still holds after it.
func TestIdleUnloadForgetsTopicPolicies(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	cl := b.Client(t)
	topic := brokertest.Topic("idle-policies")
	key, err := policy.TopicKeyOf(topic)
	if err != nil {
		t.Fatal(err)
	}
	one := 1
	if err := b.Policies().UpdateTopic(brokertest.Ctx(t), key, func(tp *policy.TopicPolicies) error {
		tp.MaxProducerPerTopic = &one
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	p := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic})
	p.Close()
	if _, ok := b.Policies().CachedTopic(key); !ok {
		t.Fatal("a loaded topic's policies are not cached")
	}
	if n := b.Enforcer.UnloadIdle(time.Now().Add(time.Hour), time.Second); n != 1 || loaded(b, topic) {
		t.Fatalf("unloaded %d topics, want the one", n)
	}
	if _, ok := b.Policies().CachedTopic(key); ok {
		t.Fatal("the unloaded topic's policies are still cached")
	}
	brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic})
	if p2, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic}); err == nil {
		p2.Close()
		t.Fatal("a second producer was accepted after the reload (maxProducers 1)")
	}
}
