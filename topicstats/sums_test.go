package topicstats_test

import (
	"encoding/json"
	"testing"

	"github.com/magnetar-mq/magnetar/topicstats"
)

// partition returns the stats of one partition with a subscription s.
func partition(in, backlog int64, created, published int64, earliest int64, sub string) topicstats.TopicStats {
	st := topicstats.Empty("Enabled")
	st.MsgInCounter, st.BytesInCounter, st.MsgRateIn = in, in*10, float64(in)
	st.MsgBacklog, st.StorageSize = backlog, in*10
	st.TopicCreationTimeStamp, st.LastPublishTimeStamp = created, published
	st.EarliestMsgPublishTimeInBacklogs, st.OldestBacklogMessageSubscriptionName = earliest, sub
	st.BacklogQuotaLimitSize, st.BacklogQuotaLimitTime, st.LastOffloadLedgerID = -1, -1, -1
	st.Publishers = []topicstats.PublisherStats{{ProducerName: "p", Metadata: map[string]string{}}}
	st.Subscriptions[sub] = topicstats.SubscriptionStats{MsgBacklog: backlog, UnackedMessages: 1, MsgOutCounter: in,
		EarliestMsgPublishTimeInBacklog: earliest, Type: "Shared",
		Consumers: []topicstats.ConsumerStats{{ConsumerName: "c", Metadata: map[string]string{}}}}
	st.Replication["r2"] = topicstats.ReplicatorStats{ReplicationBacklog: backlog, ReplicationDelayInSeconds: in, Connected: true,
		OutboundConnection: "o"}
	return st
}

// TestPartitioned: the partitioned-stats aggregate sums counters,
// rates, sizes and backlogs, lists every partition's clients, merges
// same-named subscriptions and remote clusters, keeps the earliest
// creation and backlog message and the latest publish.
func TestPartitioned(t *testing.T) {
	agg := topicstats.NewPartitioned()
	// A partition no client created yet counts as an empty topic.
	empty := topicstats.Empty(agg.DeduplicationStatus)
	agg.Add(&empty)
	p0, p1 := partition(4, 3, 200, 900, 500, "s"), partition(6, 2, 100, 800, 400, "s")
	agg.Add(&p0)
	agg.Add(&p1)
	st := agg.TopicStats
	if st.MsgInCounter != 10 || st.BytesInCounter != 100 || st.MsgRateIn != 10 || st.MsgBacklog != 5 || st.StorageSize != 100 ||
		st.AverageMsgSize != 10 || st.DeduplicationStatus != "Enabled" {
		t.Fatalf("sums %+v", st)
	}
	if st.TopicCreationTimeStamp != 100 || st.LastPublishTimeStamp != 900 || st.EarliestMsgPublishTimeInBacklogs != 400 ||
		st.BacklogQuotaLimitSize != -1 || st.LastOffloadLedgerID != -1 {
		t.Fatalf("times and limits %+v", st)
	}
	s := st.Subscriptions["s"]
	if len(st.Publishers) != 2 || len(st.Subscriptions) != 1 || s.MsgBacklog != 5 || s.UnackedMessages != 2 ||
		s.MsgOutCounter != 10 || len(s.Consumers) != 2 || s.EarliestMsgPublishTimeInBacklog != 400 {
		t.Fatalf("clients and subscriptions %+v", st)
	}
	if len(p0.Subscriptions["s"].Consumers) != 1 {
		t.Fatal("merging changed a partition's consumers")
	}
	r := st.Replication["r2"]
	if r.ReplicationBacklog != 5 || r.ReplicationDelayInSeconds != 6 || !r.Connected || r.OutboundConnection != "o" {
		t.Fatalf("replication %+v", r)
	}
	// The aggregate is Pulsar's TopicStats shape: empty lists and maps,
	// not null.
	raw, err := json.Marshal(topicstats.NewPartitioned().TopicStats)
	if err != nil {
		t.Fatal(err)
	}
	m := object(t, raw)
	if string(m["publishers"]) != "[]" || string(m["subscriptions"]) != "{}" || string(m["replication"]) != "{}" ||
		string(m["deduplicationStatus"]) != `"Disabled"` {
		t.Fatalf("empty aggregate %s", raw)
	}
}

// TestSums: a namespace's sums over its topics' stats, as the admin
// API's broker-stats/metrics and the namespace /metrics series read
// them.
func TestSums(t *testing.T) {
	var s topicstats.Sums
	if s.AverageMsgSize() != 0 {
		t.Fatal("average of nothing")
	}
	a, b := partition(4, 3, 0, 0, 0, "s"), partition(6, 2, 0, 0, 0, "t")
	a.MsgRateOut, a.PublishRateLimitedTimes, a.BacklogSize = 1.5, 2, 30
	b.Replication["r3"] = topicstats.ReplicatorStats{ReplicationBacklog: 1, ReplicationDelayInSeconds: 9}
	s.Add(&a)
	s.Add(&b)
	want := topicstats.Sums{Topics: 2, RateIn: 10, ThroughputIn: 0, RateOut: 1.5, MsgIn: 10, BytesIn: 100, MsgOut: 0,
		Storage: 100, Backlog: 5, BacklogSize: 30, Producers: 2, Subscriptions: 2, Consumers: 2, Replicators: 3,
		ReplicationBacklog: 6, MaxReplicationDelaySeconds: 9, PublishRateLimitedTimes: 2}
	if s != want {
		t.Fatalf("sums\n got %+v\nwant %+v", s, want)
	}
	if s.AverageMsgSize() != 10 {
		t.Fatalf("average %v", s.AverageMsgSize())
	}
}
