package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/brokeradmin"
	"github.com/magnetar-mq/magnetar/policy"
)

// TestE2ETopicPoliciesOverrideNamespace sets every policy on a namespace and
// a different value on one topic: the topic's value is what GET
// ?applied=true reports and what the broker enforces, before and after a
// restart; removing the topic's value falls back to the namespace's.
func TestE2ETopicPoliciesOverrideNamespace(t *testing.T) {
	t.Parallel()
	r, tb := startRestartable(t)
	ns := newNamespace(t, tb)
	nsBase := "/admin/v2/namespaces/" + ns
	topic := "persistent://" + ns + "/" + uniqueName("tp")
	tBase := adminPath(topic)
	mustHTTP(t, tb, "PUT", tBase, "", http.StatusNoContent)

	type pol struct {
		nsPath, nsBody string // namespace endpoint and value
		tPath, tBody   string // topic endpoint (POST) and value
		get            string // topic GET endpoint
		want           any    // topic value as GET returns it (decoded JSON)
	}
	pols := []pol{
		{"/retention", `{"retentionTimeInMinutes":60,"retentionSizeInMB":10}`, "/retention", `{"retentionTimeInMinutes":120,"retentionSizeInMB":20}`,
			"/retention", map[string]any{"retentionTimeInMinutes": 120.0, "retentionSizeInMB": 20.0}},
		{"/messageTTL", `100`, "/messageTTL?messageTTL=200", ``, "/messageTTL", 200.0},
		{"/maxProducersPerTopic", `5`, "/maxProducers", `1`, "/maxProducers", 1.0},
		{"/maxConsumersPerTopic", `5`, "/maxConsumers", `2`, "/maxConsumers", 2.0},
		{"/deduplication", `false`, "/deduplicationEnabled", `true`, "/deduplicationEnabled", true},
		{"/backlogQuota?backlogQuotaType=destination_storage", `{"limitSize":1048576,"limitTime":-1,"policy":"producer_request_hold"}`,
			"/backlogQuota?backlogQuotaType=destination_storage", `{"limitSize":2097152,"limitTime":-1,"policy":"producer_exception"}`,
			"/backlogQuotaMap", map[string]any{"destination_storage": map[string]any{"limitSize": 2097152.0, "limitTime": -1.0, "policy": "producer_exception"}}},
		{"/publishRate", `{"publishThrottlingRateInMsg":1000,"publishThrottlingRateInByte":-1}`, "/publishRate", `{"publishThrottlingRateInMsg":500,"publishThrottlingRateInByte":-1}`,
			"/publishRate", map[string]any{"publishThrottlingRateInMsg": 500.0, "publishThrottlingRateInByte": -1.0}},
		{"/dispatchRate", `{"dispatchThrottlingRateInMsg":1000,"dispatchThrottlingRateInByte":-1,"ratePeriodInSecond":1}`,
			"/dispatchRate", `{"dispatchThrottlingRateInMsg":400,"dispatchThrottlingRateInByte":-1,"ratePeriodInSecond":2}`,
			"/dispatchRate", map[string]any{"dispatchThrottlingRateInMsg": 400.0, "dispatchThrottlingRateInByte": -1.0, "ratePeriodInSecond": 2.0, "relativeToPublishRate": false}},
		{"/subscriptionDispatchRate", `{"dispatchThrottlingRateInMsg":1000,"dispatchThrottlingRateInByte":-1,"ratePeriodInSecond":1}`,
			"/subscriptionDispatchRate", `{"dispatchThrottlingRateInMsg":300,"dispatchThrottlingRateInByte":-1,"ratePeriodInSecond":1}`,
			"/subscriptionDispatchRate", map[string]any{"dispatchThrottlingRateInMsg": 300.0, "dispatchThrottlingRateInByte": -1.0, "ratePeriodInSecond": 1.0, "relativeToPublishRate": false}},
		{"/replicatorDispatchRate", `{"dispatchThrottlingRateInMsg":1000,"dispatchThrottlingRateInByte":-1,"ratePeriodInSecond":1}`,
			"/replicatorDispatchRate", `{"dispatchThrottlingRateInMsg":250,"dispatchThrottlingRateInByte":-1,"ratePeriodInSecond":1}`,
			"/replicatorDispatchRate", map[string]any{"dispatchThrottlingRateInMsg": 250.0, "dispatchThrottlingRateInByte": -1.0, "ratePeriodInSecond": 1.0, "relativeToPublishRate": false}},
		{"/subscribeRate", `{"subscribeThrottlingRatePerConsumer":100,"ratePeriodInSecond":30}`, "/subscribeRate", `{"subscribeThrottlingRatePerConsumer":50,"ratePeriodInSecond":10}`,
			"/subscribeRate", map[string]any{"subscribeThrottlingRatePerConsumer": 50.0, "ratePeriodInSecond": 10.0}},
		{"/inactiveTopicPolicies", `{"deleteWhileInactive":false,"maxInactiveDurationSeconds":60,"inactiveTopicDeleteMode":"delete_when_no_subscriptions"}`,
			"/inactiveTopicPolicies", `{"deleteWhileInactive":false,"maxInactiveDurationSeconds":3600,"inactiveTopicDeleteMode":"delete_when_subscriptions_caught_up"}`,
			"/inactiveTopicPolicies", map[string]any{"deleteWhileInactive": false, "maxInactiveDurationSeconds": 3600.0, "inactiveTopicDeleteMode": "delete_when_subscriptions_caught_up"}},
	}
	for _, p := range pols {
		mustHTTP(t, tb, "POST", nsBase+p.nsPath, p.nsBody, http.StatusNoContent)
		mustHTTP(t, tb, "POST", tBase+p.tPath, p.tBody, http.StatusNoContent)
	}
	wantApplied := func(r *policy.Resolved) {
		t.Helper()
		if r == nil {
			t.Fatal("topic not loaded")
		}
		got := map[string]any{
			"retention": *r.Retention, "ttl": r.MessageTTLSeconds, "maxP": r.MaxProducers, "maxC": r.MaxConsumers, "dedup": r.Deduplication,
			"quota": r.BacklogQuotas[policy.QuotaStorage].LimitSize, "pub": r.PublishRate.PublishThrottlingRateInMsg,
			"disp": r.DispatchRate.DispatchThrottlingRateInMsg, "subDisp": r.SubscriptionDispatchRate.DispatchThrottlingRateInMsg,
			"replDisp": r.ReplicatorDispatchRate.DispatchThrottlingRateInMsg,
			"subRate":  r.SubscribeRate.SubscribeThrottlingRatePerConsumer, "inactive": r.InactiveTopic.MaxInactiveDurationSeconds,
		}
		want := map[string]any{
			"retention": policy.RetentionPolicies{RetentionTimeInMinutes: 120, RetentionSizeInMB: 20}, "ttl": int64(200), "maxP": 1, "maxC": 2, "dedup": true,
			"quota": int64(2 << 20), "pub": 500, "disp": 400, "subDisp": 300, "replDisp": 250, "subRate": 50, "inactive": 3600,
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("broker enforces %v, want the topic values %v", got, want)
		}
	}
	check := func(tb *testBroker, phase string) {
		t.Helper()
		for _, p := range pols {
			for _, q := range []string{"", "?applied=true"} {
				var got any
				if err := json.Unmarshal([]byte(mustHTTP(t, tb, "GET", tBase+p.get+q, "", http.StatusOK)), &got); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, p.want) {
					t.Fatalf("%s: GET %s%s = %v, want %v", phase, p.get, q, got, p.want)
				}
			}
		}
		// The broker enforces the topic's values.
		cl := tb.client(t)
		_ = brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic})
		wantApplied(tb.AppliedPolicies(topic))
		if _, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic}); err == nil {
			t.Fatalf("%s: second producer accepted with maxProducers 1 (namespace: 5)", phase)
		}
		st, err := brokeradmin.For(tb.Broker).Reads.TopicStats(context.Background(), topic)
		if err != nil || st.DeduplicationStatus != "Enabled" || st.BacklogQuotaLimitSize != 2<<20 {
			t.Fatalf("%s: stats dedup %q quota %d, %v", phase, st.DeduplicationStatus, st.BacklogQuotaLimitSize, err)
		}
	}
	check(tb, "before restart")
	// The namespace keeps its own values.
	if out := mustHTTP(t, tb, "GET", nsBase+"/maxProducersPerTopic", "", http.StatusOK); strings.TrimSpace(out) != "5" {
		t.Fatalf("namespace maxProducersPerTopic = %s", out)
	}
	tb = r.restart(t)
	check(tb, "after restart")

	// The Go admin client reads and writes the same endpoints.
	ac := adminClient(t, tb)
	tn := mustTopic(t, topic)
	if ttl, err := ac.Topics().GetMessageTTL(tn); err != nil || ttl != 200 {
		t.Fatalf("pulsaradmin GetMessageTTL = %d, %v", ttl, err)
	}
	if err := ac.Topics().SetPublishRate(tn, utils.PublishRateData{PublishThrottlingRateInMsg: 700, PublishThrottlingRateInByte: -1}); err != nil {
		t.Fatal(err)
	}
	if pr, err := ac.Topics().GetPublishRate(tn); err != nil || pr.PublishThrottlingRateInMsg != 700 {
		t.Fatalf("pulsaradmin GetPublishRate = %+v, %v", pr, err)
	}
	if ret, err := ac.Topics().GetRetention(tn, true); err != nil || ret.RetentionTimeInMinutes != 120 {
		t.Fatalf("pulsaradmin GetRetention(applied) = %+v, %v", ret, err)
	}

	// Removing the topic's value falls back to the namespace's, at once
	// on the loaded topic.
	mustHTTP(t, tb, "DELETE", tBase+"/maxProducers", "", http.StatusNoContent)
	mustHTTP(t, tb, "DELETE", tBase+"/messageTTL", "", http.StatusNoContent)
	if out := mustHTTP(t, tb, "GET", tBase+"/maxProducers?applied=true", "", http.StatusOK); strings.TrimSpace(out) != "5" {
		t.Fatalf("applied maxProducers after remove = %s, want the namespace's 5", out)
	}
	if out := mustHTTP(t, tb, "GET", tBase+"/maxProducers", "", http.StatusNoContent); out != "" {
		t.Fatalf("topic maxProducers after remove = %s, want none (204)", out)
	}
	p1, err := tb.client(t).CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p1.Close()
	if r := tb.AppliedPolicies(topic); r.MaxProducers != 5 || r.MessageTTLSeconds != 100 {
		t.Fatalf("after remove the broker enforces maxProducers %d ttl %d, want the namespace's 5 and 100", r.MaxProducers, r.MessageTTLSeconds)
	}
	// Bad values are refused with 412 and change nothing; an unknown
	// topic is 404.
	mustHTTP(t, tb, "POST", tBase+"/maxConsumers", `-3`, http.StatusPreconditionFailed)
	mustHTTP(t, tb, "POST", tBase+"/dispatchRate", `{"dispatchThrottlingRateInMsg":-5}`, http.StatusPreconditionFailed)
	mustHTTP(t, tb, "POST", tBase+"/maxConsumers", `2147483648`, http.StatusPreconditionFailed)
	mustHTTP(t, tb, "GET", "/admin/v2/persistent/"+ns+"/no-such-topic/retention", "", http.StatusNotFound)
	if r := tb.AppliedPolicies(topic); r.MaxConsumers != 2 {
		t.Fatalf("refused value changed maxConsumers to %d", r.MaxConsumers)
	}
}

// TestE2ETopicPoliciesPartitioned: policies set on a partitioned topic apply
// to every partition (and may be read through a partition's name).
func TestE2ETopicPoliciesPartitioned(t *testing.T) {
	t.Parallel()
	tb := startBroker(t, nil)
	topic := "persistent://public/default/" + uniqueName("part")
	base := adminPath(topic)
	mustHTTP(t, tb, "PUT", base+"/partitions", "2", http.StatusNoContent)
	mustHTTP(t, tb, "POST", base+"/maxConsumers", "3", http.StatusNoContent)
	cl := tb.client(t)
	p := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic})
	for i := 0; i < 2; i++ {
		pn := topic + "-partition-" + string(rune('0'+i))
		if r := tb.AppliedPolicies(pn); r == nil || r.MaxConsumers != 3 {
			t.Fatalf("partition %d enforces %+v, want maxConsumers 3", i, r)
		}
	}
	if out := mustHTTP(t, tb, "GET", base+"-partition-1/maxConsumers", "", http.StatusOK); strings.TrimSpace(out) != "3" {
		t.Fatalf("through a partition's name: %s", out)
	}
	// Deleting the partitioned topic deletes its policies.
	p.Close()
	mustHTTP(t, tb, "DELETE", base+"/partitions?force=true", "", http.StatusNoContent)
	mustHTTP(t, tb, "PUT", base+"/partitions", "2", http.StatusNoContent)
	if out := mustHTTP(t, tb, "GET", base+"/maxConsumers", "", http.StatusNoContent); out != "" {
		t.Fatalf("a re-created topic inherited the deleted one's policies: %s", out)
	}
}
