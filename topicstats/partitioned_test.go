package topicstats

import (
	"testing"
)

// TestPartitionedStatsAggregateAsPulsar: partitioned-stats adds its
// partitions up as Pulsar's TopicStatsImpl.add does: counters summed,
// averageMsgSize the mean of the partitions' averages, the transaction
// counts and quota limits the last partition's, the oldest backlog age
// the greatest, publishers merged by position with no producer named,
// consumers by position while the counts match and appended otherwise,
// replicators connected only if all are, and what Pulsar does not add
// (offload ledger, connection addresses, timestamps) left at zero.
func TestPartitionedStatsAggregateAsPulsar(t *testing.T) {
	sub := func(backlog int64, typ string, consumers ...ConsumerStats) map[string]SubscriptionStats {
		return map[string]SubscriptionStats{"s": {MsgBacklog: backlog, Type: typ, IsDurable: true, LastAckedTimestamp: 99,
			Consumers: consumers, ConsumersAfterMarkDeletePosition: map[string]string{}, SubscriptionProperties: map[string]string{"k": typ}}}
	}
	parts := []TopicStats{
		{MsgRateIn: 1, MsgInCounter: 10, BytesInCounter: 1000, AverageMsgSize: 100, StorageSize: 5, OffloadedStorageSize: 7,
			OngoingTxnCount: 4, LastOffloadLedgerID: 12, OldestBacklogMessageAgeSeconds: 30, OldestBacklogMessageSubscriptionName: "s",
			DelayedMessageIndexSizeInBytes: 2, NonContiguousDeletedMessagesRanges: 1, EarliestMsgPublishTimeInBacklogs: 500,
			DeduplicationStatus: "Enabled",
			Publishers:          []PublisherStats{{ProducerName: "a", Address: "h:1", MsgRateIn: 1, MsgThroughputIn: 10, AverageMsgSize: 100}},
			Subscriptions:       sub(3, "Shared", ConsumerStats{ConsumerName: "x", AvailablePermits: 5, UnackedMessages: 1}),
			Replication:         map[string]ReplicatorStats{"r": {Connected: true, ReplicationDelayInSeconds: 5, ReplicationBacklog: 1, OutboundConnection: "h:2"}}},
		{OngoingTxnCount: 2, OldestBacklogMessageAgeSeconds: 50, OldestBacklogMessageSubscriptionName: "t", StorageSize: 6,
			Publishers:    []PublisherStats{},
			Subscriptions: sub(4, "Shared", ConsumerStats{ConsumerName: "y", AvailablePermits: 7}),
			Replication:   map[string]ReplicatorStats{"r": {Connected: false, ReplicationDelayInSeconds: 9, ReplicationBacklog: 2}}},
		{MsgRateIn: 5, MsgInCounter: 1, BytesInCounter: 50, AverageMsgSize: 50, OngoingTxnCount: 3, EarliestMsgPublishTimeInBacklogs: 400,
			Publishers: []PublisherStats{{ProducerName: "b", MsgRateIn: 2, AverageMsgSize: 50}, {ProducerName: "c", MsgRateIn: 3, AverageMsgSize: 20}},
			Subscriptions: sub(5, "Key_Shared", ConsumerStats{ConsumerName: "z", AvailablePermits: 1},
				ConsumerStats{ConsumerName: "w", AvailablePermits: 2})},
	}
	s := NewPartitioned()
	for _, p := range parts {
		s.Add(p)
	}
	a := s.out
	if a.MsgRateIn != 6 || a.MsgInCounter != 11 || a.BytesInCounter != 1050 || a.StorageSize != 11 || a.OffloadedStorageSize != 7 ||
		a.DelayedMessageIndexSizeInBytes != 2 || a.NonContiguousDeletedMessagesRanges != 1 {
		t.Errorf("sums: %+v", a)
	}
	if a.AverageMsgSize != 50 { // (100 + 0 + 50) / 3, not bytes/messages (95.45)
		t.Errorf("averageMsgSize = %v, want the mean of the partitions' 50", a.AverageMsgSize)
	}
	if a.OngoingTxnCount != 3 || a.LastOffloadLedgerID != 0 || a.DeduplicationStatus != "" {
		t.Errorf("last partition's txn count 3, offload ledger and deduplicationStatus unset: %d %d %q", a.OngoingTxnCount, a.LastOffloadLedgerID, a.DeduplicationStatus)
	}
	if a.OldestBacklogMessageAgeSeconds != 50 || a.OldestBacklogMessageSubscriptionName != "t" || a.EarliestMsgPublishTimeInBacklogs != 400 {
		t.Errorf("oldest backlog %d %q, earliest %d", a.OldestBacklogMessageAgeSeconds, a.OldestBacklogMessageSubscriptionName, a.EarliestMsgPublishTimeInBacklogs)
	}
	if len(a.Publishers) != 2 {
		t.Fatalf("publishers %+v, want 2 (merged by position)", a.Publishers)
	}
	if p := a.Publishers[0]; p.MsgRateIn != 3 || p.AverageMsgSize != 75 || p.MsgThroughputIn != 10 || p.ProducerName != "" || p.Address != "" {
		t.Errorf("publisher 0 = %+v, want rate 1+2, mean size 75, no name or address", p)
	}
	if p := a.Publishers[1]; p.MsgRateIn != 3 || p.AverageMsgSize != 20 {
		t.Errorf("publisher 1 = %+v", p)
	}
	ss := a.Subscriptions["s"]
	if ss.MsgBacklog != 12 || ss.Type != "Key_Shared" || !ss.IsDurable || ss.LastAckedTimestamp != 0 || ss.SubscriptionProperties["k"] != "Key_Shared" {
		t.Errorf("subscription %+v", ss)
	}
	// Partitions 0 and 1 list one consumer each (merged); partition 2
	// lists two, a different count: both appended.
	if len(ss.Consumers) != 3 || ss.Consumers[0].AvailablePermits != 12 || ss.Consumers[0].UnackedMessages != 1 || ss.Consumers[0].ConsumerName != "" ||
		ss.Consumers[1].AvailablePermits != 1 || ss.Consumers[2].AvailablePermits != 2 {
		t.Errorf("consumers %+v", ss.Consumers)
	}
	r := a.Replication["r"]
	if r.Connected || r.ReplicationDelayInSeconds != 9 || r.ReplicationBacklog != 3 || r.OutboundConnection != "" {
		t.Errorf("replication %+v, want not connected, delay 9, backlog 3, no address", r)
	}
}
