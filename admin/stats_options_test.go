package admin

import (
	"encoding/json"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker/brokertest"
)

// TestStatsExcludeClients: the stats options excludePublishers and
// excludeConsumers leave the publishers, and every subscription's
// consumers, out of stats and partitioned-stats (empty lists, as
// Pulsar's); without them both are listed.
func TestStatsExcludeClients(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	plain := "persistent://public/default/" + uniqueName("excl")
	parted := "persistent://public/default/" + uniqueName("excl-p")
	mustHTTP(t, tb, "PUT", adminPath(parted)+"/partitions", "2", 204)
	for _, topic := range []string{plain, parted} {
		brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
		brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic})
	}
	type stats struct {
		Publishers    []json.RawMessage `json:"publishers"`
		Subscriptions map[string]struct {
			Consumers []json.RawMessage `json:"consumers"`
		} `json:"subscriptions"`
		Partitions map[string]json.RawMessage `json:"partitions"`
	}
	get := func(path string) stats {
		t.Helper()
		var st stats
		if err := json.Unmarshal([]byte(mustHTTP(t, tb, "GET", path, "", 200)), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	check := func(what string, st stats, pubs, cons int) {
		t.Helper()
		if st.Publishers == nil || len(st.Publishers) != pubs {
			t.Errorf("%s: %d publishers (listed %v), want a list of %d", what, len(st.Publishers), st.Publishers != nil, pubs)
		}
		s, ok := st.Subscriptions["s"]
		if !ok || s.Consumers == nil || len(s.Consumers) != cons {
			t.Errorf("%s: subscription s (listed %v) has %d consumers (listed %v), want a list of %d", what, ok, len(s.Consumers), s.Consumers != nil, cons)
		}
	}
	const opts = "?excludePublishers=true&excludeConsumers=true"
	check("stats", get(adminPath(plain)+"/stats"), 1, 1)
	check("stats excluding", get(adminPath(plain)+"/stats"+opts), 0, 0)
	// A publisher and a consumer on each of the two partitions: merged
	// by position into one of each, as Pulsar's TopicStatsImpl.add does.
	check("partitioned-stats", get(adminPath(parted)+"/partitioned-stats"), 1, 1)
	ex := get(adminPath(parted) + "/partitioned-stats" + opts + "&perPartition=true")
	check("partitioned-stats excluding", ex, 0, 0)
	if len(ex.Partitions) != 2 {
		t.Fatalf("%d partitions, want 2", len(ex.Partitions))
	}
	for name, raw := range ex.Partitions {
		var st stats
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatal(err)
		}
		check(name, st, 0, 0)
	}
}
