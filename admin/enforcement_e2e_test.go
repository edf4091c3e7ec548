package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/brokeradmin"
	"github.com/magnetar-mq/magnetar/brokerconf"
)

// Namespace and topic policies take effect on real clients: the
// delivery and admission policies (policy/delivery.go) at topic level,
// falling back to the namespace, then to the broker; the unacked and
// partition limits; the inactive topic and subscription expiry policies.

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
	tb := startBroker(t, func(c *brokerconf.Config) { c.Delivery.DelayedDeliveryTick = 1000 })
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
	tb := startBroker(t, func(c *brokerconf.Config) { c.Delivery.MaxSubscriptionsPerTopic = 3 })
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
	tb := startBroker(t, func(c *brokerconf.Config) { c.Delivery.MaxTopicsPerNamespace = 7 })
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

// TestUnackedLimitEndpoints: the namespace endpoints for
// maxUnackedMessagesPerConsumer / ...PerSubscription set, read and remove
// the policy, refuse values outside 0..2^31-1, and a Shared consumer over
// the limit shows blockedConsumerOnUnackedMsgs in the topic stats.
func TestUnackedLimitEndpoints(t *testing.T) {
	tb := startBroker(t, nil)
	if code, body := httpDo(t, tb, "PUT", "/admin/v2/namespaces/public/unacked", ""); code/100 != 2 {
		t.Fatalf("create namespace: %d %s", code, body)
	}
	for _, ep := range []string{"maxUnackedMessagesPerConsumer", "maxUnackedMessagesPerSubscription"} {
		path := "/admin/v2/namespaces/public/unacked/" + ep
		if code, body := httpDo(t, tb, "GET", path, ""); code != http.StatusNoContent || body != "" {
			t.Fatalf("GET %s unset: %d %q", ep, code, body)
		}
		for _, bad := range []string{"-1", "2147483648", "x", ""} {
			if code, body := httpDo(t, tb, "POST", path, bad); code != 412 && code != 400 {
				t.Fatalf("POST %s %q: %d %s", ep, bad, code, body)
			}
		}
		if code, body := httpDo(t, tb, "POST", path, "7"); code/100 != 2 {
			t.Fatalf("POST %s: %d %s", ep, code, body)
		}
		if code, body := httpDo(t, tb, "GET", path, ""); code != 200 || strings.TrimSpace(body) != "7" {
			t.Fatalf("GET %s: %d %q", ep, code, body)
		}
		if code, body := httpDo(t, tb, "DELETE", path, ""); code/100 != 2 {
			t.Fatalf("DELETE %s: %d %s", ep, code, body)
		}
		if code, body := httpDo(t, tb, "GET", path, ""); code != http.StatusNoContent || body != "" {
			t.Fatalf("GET %s after DELETE: %d %q", ep, code, body)
		}
	}
	if code, body := httpDo(t, tb, "POST", "/admin/v2/namespaces/public/unacked/maxUnackedMessagesPerConsumer", "5"); code/100 != 2 {
		t.Fatalf("set limit: %d %s", code, body)
	}
	waitBlockedAt(t, tb, "public/unacked/t", 5)
}

// TestTopicUnackedLimitOverridesNamespace: a topic-level
// maxUnackedMessagesOnConsumer stands over the namespace's
// maxUnackedMessagesPerConsumer (Pulsar's topic > namespace > broker):
// the consumer is blocked at the topic's limit, ?applied=true answers
// it, and once removed the namespace's applies again.
func TestTopicUnackedLimitOverridesNamespace(t *testing.T) {
	tb := startBroker(t, nil)
	for _, step := range [][3]string{
		{"PUT", "/admin/v2/namespaces/public/unacked", ""},
		{"POST", "/admin/v2/namespaces/public/unacked/maxUnackedMessagesPerConsumer", "5"},
		{"PUT", "/admin/v2/persistent/public/unacked/t", ""},
		{"POST", "/admin/v2/persistent/public/unacked/t/maxUnackedMessagesOnConsumer", "3"},
	} {
		if code, body := httpDo(t, tb, step[0], step[1], step[2]); code/100 != 2 {
			t.Fatalf("%s %s: %d %s", step[0], step[1], code, body)
		}
	}
	const path = "/admin/v2/persistent/public/unacked/t/maxUnackedMessagesOnConsumer"
	for q, want := range map[string]string{"": "3", "?applied=true": "3"} {
		if code, body := httpDo(t, tb, "GET", path+q, ""); code != 200 || body != want {
			t.Fatalf("GET %s%s: %d %q, want %s", path, q, code, body, want)
		}
	}
	waitBlockedAt(t, tb, "public/unacked/t", 3)
	if code, body := httpDo(t, tb, "DELETE", path, ""); code/100 != 2 {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	for q, want := range map[string]string{"": "", "?applied=true": "5"} {
		wantCode := http.StatusOK
		if want == "" {
			wantCode = http.StatusNoContent
		}
		if code, body := httpDo(t, tb, "GET", path+q, ""); code != wantCode || body != want {
			t.Fatalf("GET %s%s after DELETE: %d %q, want %s", path, q, code, body, want)
		}
	}
}

// waitBlockedAt sends 20 messages to persistent://topic, receives limit
// of them on a Shared consumer that acks nothing, and waits until the
// topic's stats show the consumer blocked with limit unacked messages.
func waitBlockedAt(t *testing.T, tb *testBroker, topic string, limit int) {
	t.Helper()
	c := tb.client(t)
	cons := brokertest.Consumer(t, c, pulsar.ConsumerOptions{Topic: "persistent://" + topic, SubscriptionName: "s", Type: pulsar.Shared})
	p := brokertest.Producer(t, c, pulsar.ProducerOptions{Topic: "persistent://" + topic, DisableBatching: true})
	for i := 0; i < 20; i++ {
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("m")}); err != nil {
			t.Fatal(err)
		}
	}
	receiveN(t, cons, limit)
	var st struct {
		Subscriptions map[string]struct {
			UnackedMessages                  int  `json:"unackedMessages"`
			BlockedSubscriptionOnUnackedMsgs bool `json:"blockedSubscriptionOnUnackedMsgs"`
			Consumers                        []struct {
				UnackedMessages              int  `json:"unackedMessages"`
				BlockedConsumerOnUnackedMsgs bool `json:"blockedConsumerOnUnackedMsgs"`
			} `json:"consumers"`
		} `json:"subscriptions"`
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := httpDo(t, tb, "GET", "/admin/v2/persistent/"+topic+"/stats", "")
		if code != 200 {
			t.Fatalf("stats: %d %s", code, body)
		}
		if !strings.Contains(body, `"blockedSubscriptionOnUnackedMsgs":false`) {
			t.Fatalf("stats lack blockedSubscriptionOnUnackedMsgs: %s", body)
		}
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatal(err)
		}
		s := st.Subscriptions["s"]
		if len(s.Consumers) == 1 && s.Consumers[0].BlockedConsumerOnUnackedMsgs {
			if s.Consumers[0].UnackedMessages != limit || s.UnackedMessages != limit {
				t.Fatalf("blocked with %d unacked (subscription %d), want %d", s.Consumers[0].UnackedMessages, s.UnackedMessages, limit)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer not reported blocked: %s", body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPartitionLimits: partition counts above
// maxNumPartitionsPerPartitionedTopic, outside int32 or not positive are
// refused with 412 and Pulsar's reason and create nothing; a body that
// is no count at all is a 400; growing within the limit works.
func TestPartitionLimits(t *testing.T) {
	tb := startBroker(t, func(c *brokerconf.Config) { c.MaxPartitionsPerTopic = 64 })
	const path = "/admin/v2/persistent/public/default/parts/partitions"
	for _, tc := range []struct {
		body string
		code int
		want string
	}{
		{"65", 412, "Number of partitions should be less than or equal to 64"},
		{"10000000", 412, "less than or equal to 64"},
		{"2147483647", 412, "less than or equal to 64"},
		{"2147483648", 412, "outside 1..2147483647"},
		{"9223372036854775807", 412, "outside 1..2147483647"},
		{"99999999999999999999999", 412, "outside 1..2147483647"},
		{`{"partitions":2147483648}`, 412, "outside"},
		{"-5", 412, "more than 0"},
		{"0", 412, "more than 0"},
		{"abc", 400, "integer"},
		{"1.5", 400, "integer"},
		{"NaN", 400, "integer"},
		{`"12"`, 400, "integer"},
		{"1e3", 400, "integer"},
		{`{"partitions":null}`, 400, "integer"},
		{"", 400, "integer"},
	} {
		code, body := httpDo(t, tb, "PUT", path, tc.body)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("PUT partitions %q: %d %s; want %d %q", tc.body, code, body, tc.code, tc.want)
		}
	}
	if code, body := httpDo(t, tb, "GET", path, ""); code != 200 || !strings.Contains(body, `"partitions":0`) {
		t.Fatalf("refused creations left %d %s", code, body)
	}
	if code, body := httpDo(t, tb, "PUT", path, "4"); code/100 != 2 {
		t.Fatalf("create 4: %d %s", code, body)
	}
	for _, tc := range []struct {
		body, want string
	}{
		{"65", "Desired partitions 65 can't be greater than the maximum partitions per topic 64."},
		{"2147483648", "outside"},
		{"-1", "more than 0"},
	} {
		if code, body := httpDo(t, tb, "POST", path, tc.body); code != 412 || !strings.Contains(body, tc.want) {
			t.Errorf("POST partitions %q: %d %s; want 412 %q", tc.body, code, body, tc.want)
		}
	}
	if code, body := httpDo(t, tb, "POST", path, "64"); code/100 != 2 {
		t.Fatalf("grow to the limit: %d %s", code, body)
	}
	code, body := httpDo(t, tb, "GET", "/admin/v2/namespaces/public/default/topics", "")
	if code != 200 || strings.Count(body, "parts-partition-") != 64 {
		t.Fatalf("listing: %d, %d partitions", code, strings.Count(body, "parts-partition-"))
	}
	if code, body := httpDo(t, tb, "POST", "/admin/v2/namespaces/public/default/autoTopicCreation",
		`{"allowAutoTopicCreation":true,"topicType":"partitioned","defaultNumPartitions":65}`); code != 406 ||
		!strings.Contains(body, "Number of partitions should be less than or equal to 64") {
		t.Fatalf("auto-creation above the limit: %d %s", code, body)
	}
}

const inactiveCheck = 300 * time.Millisecond

// TestE2EInactiveTopicDeletion: with the namespace's inactive_topic_policies
// a topic left without producers, consumers and subscriptions is deleted;
// one with a subscription is kept (delete_when_no_subscriptions). A
// topic-level policy in delete_when_subscriptions_caught_up mode deletes
// a topic whose subscription caught up and keeps one with a backlog.
func TestE2EInactiveTopicDeletion(t *testing.T) {
	t.Parallel()
	tb := startBroker(t, func(c *brokerconf.Config) { c.DeleteInactiveTopicsFrequency = inactiveCheck })
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
	tb := startBroker(t, func(c *brokerconf.Config) {
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
