package admin

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/brokeradmin"
)

const inactiveCheck = 300 * time.Millisecond

// TestE2EInactiveTopicDeletion: with the namespace's inactive_topic_policies
// a topic left without producers, consumers and subscriptions is deleted;
// one with a subscription is kept (delete_when_no_subscriptions). A
// topic-level policy in delete_when_subscriptions_caught_up mode deletes
// a topic whose subscription caught up and keeps one with a backlog.
func TestE2EInactiveTopicDeletion(t *testing.T) {
	t.Parallel()
	tb := startBroker(t, func(c *broker.Config) { c.DeleteInactiveTopicsFrequency = inactiveCheck })
	cl := tb.client(t)
	ns := newNamespace(t, tb)
	mustHTTP(t, tb, "POST", "/admin/v2/namespaces/"+ns+"/inactiveTopicPolicies",
		`{"deleteWhileInactive":true,"maxInactiveDurationSeconds":1,"inactiveTopicDeleteMode":"delete_when_no_subscriptions"}`, http.StatusNoContent)
	exists := func(topic string) bool {
		ok, err := tb.Registry().TopicExists(context.Background(), topic)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	produce := func(topic string, n int) {
		p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
				t.Fatal(err)
			}
		}
		p.Close()
	}
	subscribe := func(topic string, consume int) {
		c, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range receiveN(t, c, consume) {
			c.Ack(m)
		}
		c.Close()
	}
	base := "persistent://" + ns + "/"
	bare, withSub := base+uniqueName("bare"), base+uniqueName("sub")
	caughtUp, backlog := base+uniqueName("caught"), base+uniqueName("backlog")
	for _, topic := range []string{caughtUp, backlog} {
		mustHTTP(t, tb, "PUT", adminPath(topic), "", http.StatusNoContent)
		mustHTTP(t, tb, "POST", adminPath(topic)+"/inactiveTopicPolicies",
			`{"deleteWhileInactive":true,"maxInactiveDurationSeconds":1,"inactiveTopicDeleteMode":"delete_when_subscriptions_caught_up"}`, http.StatusNoContent)
	}
	subscribe(withSub, 0)
	produce(withSub, 3)
	produce(bare, 3)
	subscribe(caughtUp, 0)
	produce(caughtUp, 2)
	subscribe(caughtUp, 2) // caught up
	subscribe(backlog, 0)
	produce(backlog, 2) // backlog of 2
	waitUntil(t, "the inactive topic without subscriptions to be deleted", func() bool { return !exists(bare) })
	waitUntil(t, "the inactive caught-up topic to be deleted", func() bool { return !exists(caughtUp) })
	// Two more checks past the inactivity limit: the others stay.
	time.Sleep(time.Second + 2*inactiveCheck) // absence of an event: no signal to wait for
	if !exists(withSub) {
		t.Fatal("a topic with a subscription was deleted in delete_when_no_subscriptions mode")
	}
	if !exists(backlog) {
		t.Fatal("a topic with a backlog was deleted in delete_when_subscriptions_caught_up mode")
	}
	// A new producer brings a deleted topic back, empty.
	produce(bare, 1)
	if !exists(bare) {
		t.Fatal("the deleted topic was not re-created")
	}
}

// TestE2ESubscriptionExpiry: subscription_expiration_time_minutes deletes a
// durable subscription left without consumers for that long (Pulsar's
// unit is minutes: this test takes a little over one), and keeps one
// with a consumer.
func TestE2ESubscriptionExpiry(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10 s (or one-minute) measurement: not in the -short tier")
	}
	t.Parallel()
	tb := startBroker(t, func(c *broker.Config) {
		c.DisableDeleteInactiveTopics = true
		c.SubscriptionExpiryCheckInterval = inactiveCheck
	})
	cl := tb.client(t)
	ns := newNamespace(t, tb)
	mustHTTP(t, tb, "POST", "/admin/v2/namespaces/"+ns+"/subscriptionExpirationTime", `1`, http.StatusNoContent)
	if out := mustHTTP(t, tb, "GET", "/admin/v2/namespaces/"+ns+"/subscriptionExpirationTime", "", http.StatusOK); strings.TrimSpace(out) != "1" {
		t.Fatalf("GET subscriptionExpirationTime = %s", out)
	}
	topic := "persistent://" + ns + "/" + uniqueName("exp")
	idle, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "idle"})
	if err != nil {
		t.Fatal(err)
	}
	idle.Close()
	_ = brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "active"})
	closed := time.Now()
	subs := func() []string {
		s, err := brokeradmin.For(tb.Broker).Subscriptions.Subscriptions(context.Background(), topic)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	deadline := time.Now().Add(time.Minute + 15*time.Second)
	for {
		s := subs()
		if len(s) == 1 && s[0] == "active" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscriptions after %s: %v, want [active]", time.Since(closed), s)
		}
		time.Sleep(100 * time.Millisecond) // polling the subscription list
	}
	if since := time.Since(closed); since < time.Minute {
		t.Fatalf("subscription expired after %s, before its minute", since)
	}
}
