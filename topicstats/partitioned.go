package topicstats

import (
	"maps"
)

// Partitioned is the aggregate of partitioned-stats, built as Pulsar's
// PartitionedTopicStatsImpl (TopicStatsImpl.add, with its
// PublisherStatsImpl, SubscriptionStatsImpl, ConsumerStatsImpl and
// ReplicatorStatsImpl add) builds it, partition by partition
// (docs/topic-stats.md):
//   - summed: the rates and counters, storageSize, backlogSize,
//     msgBacklog, publishRateLimitedTimes, waitingPublishers,
//     offloadedStorageSize, the non-contiguous deleted ranges,
//     delayedMessageIndexSizeInBytes;
//   - averageMsgSize: the mean of the partitions' averages;
//   - the last partition's: the transaction counts and the backlog quota
//     limits;
//   - oldestBacklogMessageAgeSeconds: the greatest, with its subscription;
//     earliestMsgPublishTimeInBacklogs: the earliest that is set;
//   - publishers: by position (Pulsar's default, without
//     aggregatePublisherStatsByProducerName): the i-th publisher of the
//     aggregate adds up the i-th publisher of every partition (rates,
//     mean size) and names no producer;
//   - subscriptions: by name, their counters summed, consumers by
//     position while the partitions list as many as the aggregate,
//     appended otherwise, as Pulsar does;
//   - replication: by cluster, rates and backlog summed, connected only
//     if every partition's is, the greatest delay;
//   - everything else (offload ledger and times, compaction,
//     deduplicationStatus, connection addresses, consumer and
//     subscription timestamps) is left at its zero value, as Pulsar
//     leaves it unset.
//
// Magnetar's own fields follow the same rules: the creation time is the
// earliest of the partitions', the last publish the latest, the
// replicators' message and byte counts are summed.
type Partitioned struct {
	out   TopicStats
	count int
	// pubs counts the partitions added into each aggregate publisher
	// (its averageMsgSize is their mean).
	pubs []int
}

// NewPartitioned returns an empty aggregate.
func NewPartitioned() *Partitioned {
	return &Partitioned{out: TopicStats{Publishers: []PublisherStats{},
		Subscriptions: map[string]SubscriptionStats{}, Replication: map[string]ReplicatorStats{}}}
}

// Stats returns the aggregate of the partitions added so far.
func (s *Partitioned) Stats() TopicStats { return s.out }

// mean folds v into an average of n-1 values, as Pulsar's running mean.
func mean(avg float64, n int, v float64) float64 {
	return (avg*float64(n-1) + v) / float64(n)
}

// earliest is the earlier of two times of which 0 means none.
func earliest(a, b int64) int64 {
	if a != 0 && b != 0 {
		return min(a, b)
	}
	return max(a, b)
}

// Add adds the next partition's stats.
func (s *Partitioned) Add(st TopicStats) {
	a := &s.out
	s.count++
	a.MsgRateIn += st.MsgRateIn
	a.MsgThroughputIn += st.MsgThroughputIn
	a.MsgRateOut += st.MsgRateOut
	a.MsgThroughputOut += st.MsgThroughputOut
	a.BytesInCounter += st.BytesInCounter
	a.MsgInCounter += st.MsgInCounter
	a.BytesOutCounter += st.BytesOutCounter
	a.MsgOutCounter += st.MsgOutCounter
	a.WaitingPublishers += st.WaitingPublishers
	a.AverageMsgSize = mean(a.AverageMsgSize, s.count, st.AverageMsgSize)
	a.StorageSize += st.StorageSize
	a.BacklogSize += st.BacklogSize
	a.MsgBacklog += st.MsgBacklog
	a.PublishRateLimitedTimes += st.PublishRateLimitedTimes
	a.OffloadedStorageSize += st.OffloadedStorageSize
	a.NonContiguousDeletedMessagesRanges += st.NonContiguousDeletedMessagesRanges
	a.NonContiguousDeletedMessagesRangesSerializedSize += st.NonContiguousDeletedMessagesRangesSerializedSize
	a.DelayedMessageIndexSizeInBytes += st.DelayedMessageIndexSizeInBytes
	a.OngoingTxnCount, a.AbortedTxnCount, a.CommittedTxnCount = st.OngoingTxnCount, st.AbortedTxnCount, st.CommittedTxnCount
	a.BacklogQuotaLimitTime, a.BacklogQuotaLimitSize = st.BacklogQuotaLimitTime, st.BacklogQuotaLimitSize
	if st.OldestBacklogMessageAgeSeconds > a.OldestBacklogMessageAgeSeconds {
		a.OldestBacklogMessageAgeSeconds = st.OldestBacklogMessageAgeSeconds
		a.OldestBacklogMessageSubscriptionName = st.OldestBacklogMessageSubscriptionName
	}
	for i, p := range st.Publishers {
		if i == len(a.Publishers) {
			a.Publishers = append(a.Publishers, PublisherStats{})
			s.pubs = append(s.pubs, 0)
		}
		ap := &a.Publishers[i]
		s.pubs[i]++
		ap.MsgRateIn += p.MsgRateIn
		ap.MsgThroughputIn += p.MsgThroughputIn
		ap.AverageMsgSize = mean(ap.AverageMsgSize, s.pubs[i], p.AverageMsgSize)
	}
	for name, ss := range st.Subscriptions {
		as, ok := a.Subscriptions[name]
		if !ok {
			as = SubscriptionStats{Consumers: []ConsumerStats{},
				ConsumersAfterMarkDeletePosition: map[string]string{}, SubscriptionProperties: map[string]string{}}
		}
		addSubscription(&as, ss)
		a.Subscriptions[name] = as
	}
	for cluster, rs := range st.Replication {
		ar, ok := a.Replication[cluster]
		if !ok {
			ar.Connected = true
		}
		ar.MsgRateIn += rs.MsgRateIn
		ar.MsgThroughputIn += rs.MsgThroughputIn
		ar.MsgRateOut += rs.MsgRateOut
		ar.MsgThroughputOut += rs.MsgThroughputOut
		ar.MsgRateExpired += rs.MsgRateExpired
		ar.ReplicationBacklog += rs.ReplicationBacklog
		ar.Connected = ar.Connected && rs.Connected
		ar.ReplicationDelayInSeconds = max(ar.ReplicationDelayInSeconds, rs.ReplicationDelayInSeconds)
		ar.MsgInCount += rs.MsgInCount
		ar.BytesInCount += rs.BytesInCount
		ar.MsgOutCount += rs.MsgOutCount
		ar.BytesOutCount += rs.BytesOutCount
		ar.MsgExpiredCount += rs.MsgExpiredCount
		a.Replication[cluster] = ar
	}
	a.EarliestMsgPublishTimeInBacklogs = earliest(a.EarliestMsgPublishTimeInBacklogs, st.EarliestMsgPublishTimeInBacklogs)
	// Magnetar's PIP-431 times: the partitioned topic was created with
	// its first partition and last published to with its latest.
	a.TopicCreationTimeStamp = earliest(a.TopicCreationTimeStamp, st.TopicCreationTimeStamp)
	a.LastPublishTimeStamp = max(a.LastPublishTimeStamp, st.LastPublishTimeStamp)
}

// addSubscription is Pulsar's SubscriptionStatsImpl.add.
func addSubscription(a *SubscriptionStats, s SubscriptionStats) {
	a.MsgRateOut += s.MsgRateOut
	a.MsgThroughputOut += s.MsgThroughputOut
	a.BytesOutCounter += s.BytesOutCounter
	a.MsgOutCounter += s.MsgOutCounter
	a.MsgRateRedeliver += s.MsgRateRedeliver
	a.MessageAckRate += s.MessageAckRate
	a.ChunkedMessageRate += s.ChunkedMessageRate
	a.MsgBacklog += s.MsgBacklog
	a.BacklogSize += s.BacklogSize
	a.MsgBacklogNoDelayed += s.MsgBacklogNoDelayed
	a.MsgDelayed += s.MsgDelayed
	a.UnackedMessages += s.UnackedMessages
	a.Type = s.Type
	a.MsgRateExpired += s.MsgRateExpired
	a.TotalMsgExpired += s.TotalMsgExpired
	a.IsReplicated = a.IsReplicated || s.IsReplicated
	a.IsReplicatedSubscription = a.IsReplicatedSubscription || s.IsReplicatedSubscription
	a.IsDurable = a.IsDurable || s.IsDurable
	if len(a.Consumers) != len(s.Consumers) {
		for _, c := range s.Consumers {
			var n ConsumerStats
			addConsumer(&n, c)
			a.Consumers = append(a.Consumers, n)
		}
	} else {
		for i, c := range s.Consumers {
			addConsumer(&a.Consumers[i], c)
		}
	}
	a.AllowOutOfOrderDelivery = a.AllowOutOfOrderDelivery || s.AllowOutOfOrderDelivery
	maps.Copy(a.ConsumersAfterMarkDeletePosition, s.ConsumersAfterMarkDeletePosition)
	a.NonContiguousDeletedMessagesRanges += s.NonContiguousDeletedMessagesRanges
	a.NonContiguousDeletedMessagesRangesSerializedSize += s.NonContiguousDeletedMessagesRangesSerializedSize
	a.EarliestMsgPublishTimeInBacklog = earliest(a.EarliestMsgPublishTimeInBacklog, s.EarliestMsgPublishTimeInBacklog)
	a.DelayedMessageIndexSizeInBytes += s.DelayedMessageIndexSizeInBytes
	maps.Copy(a.SubscriptionProperties, s.SubscriptionProperties)
}

// addConsumer is Pulsar's ConsumerStatsImpl.add.
func addConsumer(a *ConsumerStats, c ConsumerStats) {
	a.MsgRateOut += c.MsgRateOut
	a.MessageAckRate += c.MessageAckRate
	a.MsgThroughputOut += c.MsgThroughputOut
	a.BytesOutCounter += c.BytesOutCounter
	a.MsgOutCounter += c.MsgOutCounter
	a.MsgRateRedeliver += c.MsgRateRedeliver
	a.AvailablePermits += c.AvailablePermits
	a.UnackedMessages += c.UnackedMessages
	a.BlockedConsumerOnUnackedMsgs = c.BlockedConsumerOnUnackedMsgs
	a.ReadPositionWhenJoining = c.ReadPositionWhenJoining
	a.KeyHashRanges = c.KeyHashRanges
}
