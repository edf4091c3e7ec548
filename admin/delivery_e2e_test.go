package admin

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker"
)

// The delivery and admission policies (policy/delivery.go) take effect
// at topic level, fall back to the namespace, then to the broker.

// wantJSON fails unless GET path answers 200 with the JSON want.
func wantJSON(t *testing.T, tb *testBroker, path, want string) {
	t.Helper()
	if got := mustHTTP(t, tb, "GET", path, "", http.StatusOK); !jsonEq(got, want) {
		t.Fatalf("GET %s = %s, want %s", path, got, want)
	}
}

// refusedSend sends one message on a new producer (its SEND refused, the
// producer is unusable afterwards, as against Pulsar) and fails unless
// the send fails.
func refusedSend(t *testing.T, cl pulsar.Client, topic string, msg *pulsar.ProducerMessage) {
	t.Helper()
	p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true, SendTimeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Send(context.Background(), msg); err == nil {
		t.Fatalf("send of %d bytes (deliverAt %d) accepted", len(msg.Payload), msg.DeliverAfter)
	}
}

// receiveWithin receives one message within d, nil if none came.
func receiveWithin(t *testing.T, c pulsar.Consumer, d time.Duration) pulsar.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	m, err := c.Receive(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	c.Ack(m)
	return m
}

// TestE2EDelayedDeliveryPolicy: inactive, deliverAt is ignored; active
// (the namespace's, after the topic's is removed) holds a message until
// it is due and refuses delays past maxDeliveryDelayInMillis.
func TestE2EDelayedDeliveryPolicy(t *testing.T) {
	t.Parallel()
	tb := startBroker(t, func(c *broker.Config) { c.Delivery.DelayedDeliveryTick = 1000 })
	ns, topic, tBase := topicInNewNamespace(t, tb, "delay")
	wantJSON(t, tb, tBase+"/delayedDelivery?applied=true", `{"tickTime":1000,"active":true,"maxDeliveryDelayInMillis":0,"maxDelayInMillis":0}`)
	mustHTTP(t, tb, "POST", tBase+"/delayedDelivery", `{"tickTime":-1,"active":true}`, http.StatusPreconditionFailed)
	mustHTTP(t, tb, "POST", tBase+"/delayedDelivery", `{"tickTime":1000,"active":false}`, http.StatusNoContent)
	wantJSON(t, tb, tBase+"/delayedDelivery", `{"tickTime":1000,"active":false,"maxDeliveryDelayInMillis":0,"maxDelayInMillis":0}`)

	cl := tb.client(t)
	c, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("hour"), DeliverAfter: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if m := receiveWithin(t, c, 5*time.Second); m == nil || string(m.Payload()) != "hour" {
		t.Fatalf("delayed delivery inactive: a message delayed by an hour was not delivered at once (%v)", m)
	}

	// The namespace's policy once the topic's is removed: active, with a
	// maximum delay of a minute.
	mustHTTP(t, tb, "DELETE", tBase+"/delayedDelivery", "", http.StatusNoContent)
	mustHTTP(t, tb, "GET", tBase+"/delayedDelivery", "", http.StatusNoContent)
	mustHTTP(t, tb, "POST", "/admin/v2/namespaces/"+ns+"/delayedDelivery", `{"tickTime":100,"active":true,"maxDeliveryDelayInMillis":60000}`, http.StatusNoContent)
	wantJSON(t, tb, tBase+"/delayedDelivery?applied=true", `{"tickTime":100,"active":true,"maxDeliveryDelayInMillis":60000,"maxDelayInMillis":60000}`)
	refusedSend(t, cl, topic, &pulsar.ProducerMessage{Payload: []byte("too-late"), DeliverAfter: 2 * time.Minute})
	sent := time.Now()
	if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("2s"), DeliverAfter: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if m := receiveWithin(t, c, 500*time.Millisecond); m != nil {
		t.Fatalf("delayed delivery active: %q delivered before it was due", m.Payload())
	}
	m := receiveWithin(t, c, 10*time.Second)
	if m == nil || string(m.Payload()) != "2s" {
		t.Fatalf("the delayed message never came (%v)", m)
	}
	if el := time.Since(sent); el < 1800*time.Millisecond {
		t.Fatalf("delivered after %v, before it was due (2s less the 100ms tick)", el)
	}
}

// TestE2EMaxMessageSizePolicy: a topic's maxMessageSize refuses larger
// messages on publish; it may not exceed the broker's.
func TestE2EMaxMessageSizePolicy(t *testing.T) {
	t.Parallel()
	tb := startBroker(t, nil)
	topic := "persistent://public/default/" + uniqueName("size")
	tBase := adminPath(topic)
	mustHTTP(t, tb, "PUT", tBase, "", http.StatusNoContent)
	wantJSON(t, tb, tBase+"/maxMessageSize?applied=true", "1048576") // the broker's
	mustHTTP(t, tb, "POST", tBase+"/maxMessageSize", "2097152", http.StatusPreconditionFailed)
	mustHTTP(t, tb, "POST", tBase+"/maxMessageSize", "-1", http.StatusPreconditionFailed)
	mustHTTP(t, tb, "POST", tBase+"/maxMessageSize", "2048", http.StatusNoContent)
	wantJSON(t, tb, tBase+"/maxMessageSize", "2048")
	wantJSON(t, tb, tBase+"/maxMessageSize?applied=true", "2048")

	cl := tb.client(t)
	c, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	refusedSend(t, cl, topic, &pulsar.ProducerMessage{Payload: make([]byte, 4096)})
	p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: make([]byte, 1000)}); err != nil {
		t.Fatal(err)
	}
	if m := receiveWithin(t, c, 5*time.Second); m == nil || len(m.Payload()) != 1000 {
		t.Fatalf("first message stored: %v, want the 1000-byte one (the larger was refused)", m)
	}
	// Removed: the broker's limit again.
	mustHTTP(t, tb, "DELETE", tBase+"/maxMessageSize", "", http.StatusNoContent)
	mustHTTP(t, tb, "GET", tBase+"/maxMessageSize", "", http.StatusNoContent)
	if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: make([]byte, 4096)}); err != nil {
		t.Fatalf("after remove: %v", err)
	}
}

// TestE2EMaxSubscriptionsPerTopicPolicy: one more subscription than the
// topic's, else the namespace's, else the broker's limit is refused.
func TestE2EMaxSubscriptionsPerTopicPolicy(t *testing.T) {
	t.Parallel()
	tb := startBroker(t, func(c *broker.Config) { c.Delivery.MaxSubscriptionsPerTopic = 3 })
	ns, topic, tBase := topicInNewNamespace(t, tb, "subs")
	mustHTTP(t, tb, "POST", "/admin/v2/namespaces/"+ns+"/maxSubscriptionsPerTopic", "2", http.StatusNoContent)
	mustHTTP(t, tb, "POST", tBase+"/maxSubscriptionsPerTopic", "1", http.StatusNoContent)
	cl := tb.client(t)
	sub := func(name string, ok bool) {
		t.Helper()
		c, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: name, Type: pulsar.Shared})
		if ok && err != nil {
			t.Fatalf("subscription %s: %v", name, err)
		}
		if !ok && err == nil {
			t.Fatalf("subscription %s accepted beyond the limit", name)
		}
		if err == nil {
			c.Close() // the durable subscription stays
		}
	}
	for _, step := range []struct {
		applied string
		ok, no  string // a subscription accepted, then one refused
	}{
		{"1", "a", "b"}, // the topic's
		{"2", "b", "c"}, // the namespace's
		{"3", "c", "d"}, // the broker's
	} {
		wantJSON(t, tb, tBase+"/maxSubscriptionsPerTopic?applied=true", step.applied)
		sub(step.ok, true)
		sub("a", true) // an existing subscription is never refused
		sub(step.no, false)
		if step.applied == "1" {
			mustHTTP(t, tb, "DELETE", tBase+"/maxSubscriptionsPerTopic", "", http.StatusNoContent)
		} else {
			mustHTTP(t, tb, "DELETE", "/admin/v2/namespaces/"+ns+"/maxSubscriptionsPerTopic", "", http.StatusNoContent)
		}
	}
}

// TestE2EAutoSubscriptionCreationPolicy: with auto subscription creation
// off, a durable subscribe to a missing subscription is refused; an
// existing one and readers still work; the topic's value overrides the
// namespace's.
func TestE2EAutoSubscriptionCreationPolicy(t *testing.T) {
	t.Parallel()
	tb := startBroker(t, nil)
	ns, topic, tBase := topicInNewNamespace(t, tb, "autosub")
	cl := tb.client(t)
	c, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "existing"})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	wantJSON(t, tb, tBase+"/autoSubscriptionCreation?applied=true", `{"allowAutoSubscriptionCreation":true}`)
	mustHTTP(t, tb, "POST", "/admin/v2/namespaces/"+ns+"/autoSubscriptionCreation", `{"allowAutoSubscriptionCreation":false}`, http.StatusNoContent)
	wantJSON(t, tb, tBase+"/autoSubscriptionCreation?applied=true", `{"allowAutoSubscriptionCreation":false}`)
	_, err = cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "missing"})
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("subscribe to a missing subscription with auto creation off: %v", err)
	}
	c, err = cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "existing"})
	if err != nil {
		t.Fatalf("existing subscription: %v", err)
	}
	c.Close()
	r, err := cl.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatalf("reader (non-durable): %v", err)
	}
	r.Close()
	mustHTTP(t, tb, "POST", tBase+"/autoSubscriptionCreation", `{"allowAutoSubscriptionCreation":true}`, http.StatusNoContent)
	c, err = cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "missing"})
	if err != nil {
		t.Fatalf("the topic allows it over the namespace: %v", err)
	}
	c.Close()
}

// TestE2ESchemaValidationEnforcedPolicy: on a topic with a schema, the
// topic's schemaValidationEnforced refuses producers without one and
// overrides the namespace's.
func TestE2ESchemaValidationEnforcedPolicy(t *testing.T) {
	t.Parallel()
	tb := startBroker(t, nil)
	ns, topic, tBase := topicInNewNamespace(t, tb, "schema")
	cl := tb.client(t)
	typed, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic,
		Schema: pulsar.NewJSONSchema(`{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`, nil)})
	if err != nil {
		t.Fatal(err)
	}
	typed.Close()
	plain := func(ok bool) {
		t.Helper()
		p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		if ok && err != nil {
			t.Fatalf("producer without a schema refused: %v", err)
		}
		if !ok && err == nil {
			t.Fatal("producer without a schema accepted with validation enforced")
		}
		if err == nil {
			p.Close()
		}
	}
	plain(true)
	mustHTTP(t, tb, "POST", tBase+"/schemaValidationEnforced", "true", http.StatusNoContent)
	wantJSON(t, tb, tBase+"/schemaValidationEnforced?applied=true", "true")
	plain(false)
	mustHTTP(t, tb, "DELETE", tBase+"/schemaValidationEnforced", "", http.StatusNoContent)
	wantJSON(t, tb, tBase+"/schemaValidationEnforced?applied=true", "false")
	plain(true)
	mustHTTP(t, tb, "POST", "/admin/v2/namespaces/"+ns+"/schemaValidationEnforced", "true", http.StatusNoContent)
	plain(false)
	mustHTTP(t, tb, "POST", tBase+"/schemaValidationEnforced", "false", http.StatusNoContent)
	plain(true)
}

// TestE2EMaxTopicsPerNamespace: creating one topic more than the
// namespace's (else the broker's) maxTopicsPerNamespace fails, through
// the admin API (412) and through auto-creation; a partitioned topic
// counts its partitions.
func TestE2EMaxTopicsPerNamespace(t *testing.T) {
	t.Parallel()
	tb := startBroker(t, func(c *broker.Config) { c.Delivery.MaxTopicsPerNamespace = 7 })
	ns := newNamespace(t, tb)
	nsBase := "/admin/v2/namespaces/" + ns
	topic := func(name string) string { return "persistent://" + ns + "/" + name }
	mustHTTP(t, tb, "GET", nsBase+"/maxTopicsPerNamespace", "", http.StatusNoContent)
	mustHTTP(t, tb, "POST", nsBase+"/maxTopicsPerNamespace", "-1", http.StatusPreconditionFailed)
	mustHTTP(t, tb, "POST", nsBase+"/maxTopicsPerNamespace", "5", http.StatusNoContent)
	wantJSON(t, tb, nsBase+"/maxTopicsPerNamespace", "5")
	mustHTTP(t, tb, "PUT", adminPath(topic("p2"))+"/partitions", "2", http.StatusNoContent)
	mustHTTP(t, tb, "PUT", adminPath(topic("p3"))+"/partitions", "3", http.StatusNoContent) // 5
	if out := mustHTTP(t, tb, "PUT", adminPath(topic("one")), "", http.StatusPreconditionFailed); !strings.Contains(out, "Exceed maximum number of topics in namespace.") {
		t.Fatalf("refusal: %s", out)
	}
	mustHTTP(t, tb, "PUT", adminPath(topic("p1"))+"/partitions", "1", http.StatusPreconditionFailed)
	// Non-persistent topics are not counted.
	mustHTTP(t, tb, "PUT", adminPath("non-persistent://"+ns+"/np"), "", http.StatusNoContent)

	cl := tb.client(t)
	if _, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic("auto")}); err == nil {
		t.Fatal("auto-creation past the limit accepted")
	}
	// The partitions of an existing partitioned topic are counted
	// already: producing to it loads them.
	p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic("p3")})
	if err != nil {
		t.Fatalf("producer on an existing partitioned topic: %v", err)
	}
	p.Close()

	// Removed: the broker's 7. Partitioned auto-creation of 3 is refused
	// (5 + 3 > 7), one non-partitioned topic more is not.
	mustHTTP(t, tb, "DELETE", nsBase+"/maxTopicsPerNamespace", "", http.StatusNoContent)
	mustHTTP(t, tb, "GET", nsBase+"/maxTopicsPerNamespace", "", http.StatusNoContent)
	mustHTTP(t, tb, "POST", nsBase+"/autoTopicCreation", `{"allowAutoTopicCreation":true,"topicType":"partitioned","defaultNumPartitions":3}`, http.StatusNoContent)
	if _, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic("auto-parted")}); err == nil {
		t.Fatal("partitioned auto-creation past the limit accepted")
	}
	mustHTTP(t, tb, "DELETE", nsBase+"/autoTopicCreation", "", http.StatusNoContent)
	p, err = cl.CreateProducer(pulsar.ProducerOptions{Topic: topic("auto")})
	if err != nil {
		t.Fatalf("auto-creation within the broker's limit: %v", err)
	}
	p.Close()
	mustHTTP(t, tb, "PUT", adminPath(topic("seven")), "", http.StatusNoContent)
	mustHTTP(t, tb, "PUT", adminPath(topic("eight")), "", http.StatusPreconditionFailed)
	// 0: unlimited.
	mustHTTP(t, tb, "POST", nsBase+"/maxTopicsPerNamespace", "0", http.StatusNoContent)
	mustHTTP(t, tb, "PUT", adminPath(topic("eight")), "", http.StatusNoContent)
}

// topicInNewNamespace creates a topic in a namespace of its own (policy
// tests change the namespace's values), answering the namespace, the
// topic and its admin path.
func topicInNewNamespace(t testing.TB, tb *testBroker, prefix string) (ns, topic, tBase string) {
	t.Helper()
	ns = newNamespace(t, tb)
	topic = "persistent://" + ns + "/" + uniqueName(prefix)
	tBase = adminPath(topic)
	mustHTTP(t, tb, "PUT", tBase, "", http.StatusNoContent)
	return ns, topic, tBase
}
