package topicstats

// Sums are the figures of a set of topics summed from their stats: a
// namespace's (the admin API's broker-stats/metrics, the namespace-level
// /metrics series) or one topic's (the topic-level series).
type Sums struct {
	Topics                           int
	RateIn, ThroughputIn             float64
	RateOut, ThroughputOut           float64
	MsgIn, BytesIn, MsgOut, BytesOut int64
	Storage, Backlog, BacklogSize    int64
	Producers, Subscriptions         int
	Consumers, Replicators           int
	ReplicationBacklog               int64
	MaxReplicationDelaySeconds       int64
	PublishRateLimitedTimes          int64
}

// Add adds one topic's stats.
func (s *Sums) Add(st *TopicStats) {
	s.Topics++
	s.RateIn += st.MsgRateIn
	s.ThroughputIn += st.MsgThroughputIn
	s.RateOut += st.MsgRateOut
	s.ThroughputOut += st.MsgThroughputOut
	s.MsgIn += st.MsgInCounter
	s.BytesIn += st.BytesInCounter
	s.MsgOut += st.MsgOutCounter
	s.BytesOut += st.BytesOutCounter
	s.Storage += st.StorageSize
	s.Backlog += st.MsgBacklog
	s.BacklogSize += st.BacklogSize
	s.PublishRateLimitedTimes += st.PublishRateLimitedTimes
	s.Producers += len(st.Publishers)
	s.Subscriptions += len(st.Subscriptions)
	for _, ss := range st.Subscriptions {
		s.Consumers += len(ss.Consumers)
	}
	s.Replicators += len(st.Replication)
	for _, r := range st.Replication {
		s.ReplicationBacklog += r.ReplicationBacklog
		s.MaxReplicationDelaySeconds = max(s.MaxReplicationDelaySeconds, r.ReplicationDelayInSeconds)
	}
}

// AverageMsgSize is the bytes per message published (0: none).
func (s *Sums) AverageMsgSize() float64 {
	if s.MsgIn == 0 {
		return 0
	}
	return float64(s.BytesIn) / float64(s.MsgIn)
}

// Empty returns the stats of a topic with nothing in it (a partition no
// client created yet), deduplication status dedup.
func Empty(dedup string) TopicStats {
	return TopicStats{Publishers: []PublisherStats{}, Subscriptions: map[string]SubscriptionStats{},
		Replication: map[string]ReplicatorStats{}, DeduplicationStatus: dedup}
}
