package broker

import (
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/policy"
)

// waitUntil polls cond (a state observation, not a timer) until it holds.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// earliest is the Earliest sentinel of Service's MessageID.
var earliest = MessageID{LedgerID: -1, EntryID: -1}

// holdQuotaTopic creates namespace ns with a producer_request_hold
// storage quota of limit bytes, topic in it, and a durable subscription
// "slow" at the earliest position, all through the broker's Service.
func holdQuotaTopic(t testing.TB, tb *testBroker, ns, topic string, limit int64) {
	t.Helper()
	ctx := ctxT(t)
	if err := tb.Policies().CreateNamespace(ctx, ns, &policy.Policies{
		BacklogQuotaMap: map[string]policy.BacklogQuota{policy.QuotaStorage: {LimitSize: limit, LimitTime: -1, Policy: policy.QuotaHold}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := tb.CreateTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	if err := tb.CreateSubscription(ctx, topic, "slow", earliest); err != nil {
		t.Fatal(err)
	}
}

// heldSends is the number of sends held on topic.
func heldSends(tb *testBroker, topic string) int { return tb.HeldSends(topic) }
