package admin

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker/brokertest"
)

// TestUnsubscribeNamespace: POST .../unsubscribe/{sub} deletes {sub}
// from every topic of the namespace that has it, leaves the other
// subscriptions and skips topics without it; a subscription with a
// connected consumer is refused with 412 and stays.
func TestUnsubscribeNamespace(t *testing.T) {
	tb := startBroker(t, nil)
	subsOf := func(topic string) []string {
		t.Helper()
		code, body := httpDo(t, tb, "GET", "/admin/v2/persistent/public/default/"+topic+"/subscriptions", "")
		var subs []string
		if code != 200 || json.Unmarshal([]byte(body), &subs) != nil {
			t.Fatalf("subscriptions of %s: %d %s", topic, code, body)
		}
		slices.Sort(subs)
		return subs
	}
	for _, topic := range []string{"a", "b", "c"} {
		if code, body := httpDo(t, tb, "PUT", "/admin/v2/persistent/public/default/"+topic, ""); code/100 != 2 {
			t.Fatalf("create %s: %d %s", topic, code, body)
		}
	}
	for _, s := range [][2]string{{"a", "s"}, {"a", "keep"}, {"b", "s"}, {"c", "keep"}} {
		if code, body := httpDo(t, tb, "PUT", "/admin/v2/persistent/public/default/"+s[0]+"/subscription/"+s[1], ""); code/100 != 2 {
			t.Fatalf("create %s on %s: %d %s", s[1], s[0], code, body)
		}
	}
	if code, body := httpDo(t, tb, "POST", "/admin/v2/namespaces/public/default/unsubscribe/s", ""); code != 204 {
		t.Fatalf("unsubscribe: %d %s", code, body)
	}
	for topic, want := range map[string][]string{"a": {"keep"}, "b": {}, "c": {"keep"}} {
		if got := subsOf(topic); !slices.Equal(got, want) {
			t.Errorf("subscriptions of %s: %v, want %v", topic, got, want)
		}
	}
	brokertest.Consumer(t, tb.client(t), pulsar.ConsumerOptions{Topic: "persistent://public/default/c", SubscriptionName: "keep"})
	if code, body := httpDo(t, tb, "POST", "/admin/v2/namespaces/public/default/unsubscribe/keep", ""); code != 412 {
		t.Fatalf("unsubscribe with a consumer: %d %s, want 412", code, body)
	}
	if got := subsOf("c"); !slices.Equal(got, []string{"keep"}) {
		t.Errorf("subscriptions of c after the refusal: %v", got)
	}
}
