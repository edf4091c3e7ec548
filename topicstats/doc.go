// Package topicstats builds Pulsar's topic statistics from what the broker
// core counts: the admin API's stats and internal-stats JSON, the
// partitioned-stats aggregate, and the per-namespace sums that the admin
// API's broker-stats/metrics and /metrics (package brokermetrics) report.
// The core (package broker) builds no stats shape; it exposes a read-only
// seam, broker.Topic.Snapshot, and this package imports broker, never the
// other way round.
//
// # Usage
//
//	r := topicstats.For(b)          // b's features that are Sources
//	st := r.Full(t)                 // admin: with the storage reads
//	st = r.Light(t)                 // /metrics: none
//	is := r.Internal(ctx, t)        // internal stats (persistent: mledger)
//	agg := topicstats.NewPartitioned(); agg.Add(&st) ...
//	var ns topicstats.Sums; ns.Add(&st) ...
//
// # Formats
//
// TopicStats, PublisherStats, SubscriptionStats, ConsumerStats,
// ReplicatorStats, CompactionStats and InternalStats are Pulsar's JSON
// shapes: Pulsar's field names, in the order Magnetar has always written
// them (stats_test.go holds the lists), counters JSON integers, rates
// floats, connection times RFC 3339 in UTC, empty lists and maps as []
// and {} (never null), fields of what Magnetar does not have with their
// idle values (backlog quota limits -1 when unset; lastOffloadLedgerId -1
// when storage does not offload).
//
// What is derived here from a snapshot: the topic's msgRateOut,
// msgThroughputOut, msgOutCounter, bytesOutCounter and msgBacklog are its
// subscriptions' sums (a Source may add to them: geo-replication adds its
// replicators' rates); backlogSize is the largest subscription's, which is
// its backlog entries times the topic's average entry size; the oldest
// backlog message is the earliest of the subscriptions' first
// unacknowledged messages (Full only: a storage read per subscription with
// a backlog); averageMsgSize is bytes in over messages in.
//
// # Sources
//
// A broker feature (broker.Broker.Use) that implements Source or
// InternalSource adds its part: For finds them among Broker.Features.
// Sources run on the caller's goroutine with no core lock held, after the
// publishers are filled in and before the subscriptions; they must not
// change the topic. geo-replication fills Replication, deduplication
// snapshots report "Recovering", compaction fills the compaction fields
// of internal stats.
//
// The rates themselves are the core's: one timer rolls a fixed window over
// every loaded topic, producer, subscription and consumer
// (brokerconf.Config.StatsUpdateInterval, Pulsar's statsUpdateFrequencyInSecs),
// so every reader sees the same rates until the next tick.
package topicstats
