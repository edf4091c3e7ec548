package topicstats_test

import (
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
