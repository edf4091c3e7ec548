package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
)

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
	tb := startBroker(t, func(c *broker.Config) { c.MaxPartitionsPerTopic = 64 })
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
