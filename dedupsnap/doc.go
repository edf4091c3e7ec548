// Package dedupsnap snapshots the deduplication state of persistent
// topics, as Pulsar's MessageDeduplication does, so that a topic's
// recovery at load replays only the entries written after the last
// snapshot instead of guessing from the log's tail.
//
// The state is the highest stored sequence id per producer name. Every
// deduplicating topic has a durable cursor named CursorName
// ("pulsar.dedup", Pulsar's): a snapshot stores the map in the cursor's
// properties (producer name → decimal sequence id) and then moves the
// cursor's mark-delete position to the entry the map covers. A snapshot
// is taken every brokerDeduplicationEntriesInterval stored entries (0
// or less: after every entry, as Pulsar's counter compares with >=),
// every deduplicationSnapshotInterval seconds while entries arrived since
// the last one (the topic's applied policy: topic, namespace, then the
// broker's brokerDeduplicationSnapshotIntervalSeconds; 0 or less: no
// timed snapshots; checked on the broker's stats tick), and when the
// topic closes.
//
// At load (broker.DedupRecovery) the map is read from the cursor and the
// entries after its mark-delete position are replayed into it. A topic
// without the cursor (deduplication was off, or the topic predates this
// package) is rebuilt from its last DedupRecoveryEntries entries, and
// the cursor is created at the end with that map as its first snapshot.
// Properties are written before the mark-delete moves, so a crash
// between the two replays a few entries too many, never too few.
//
// A snapshot keeps at most Options.MaxProducers producers (Pulsar's
// brokerDeduplicationMaxNumberOfProducers; the first in name order).
// When deduplication is turned on for a loaded topic (PolicyApplied),
// its state is recovered as at load, in the background, and raises the
// core's map (broker.Topic.RaiseDedup); until then its stats say
// "Recovering".
//
// Wiring: Enable(b) or EnableWith(b, o) before b.Start. The feature
// implements broker.DedupRecovery, PublishInterceptor (it sees each
// stored entry in order), TopicTicker, TopicHook, PolicyObserver and
// topicstats.Source; each topic's snapshots are written
// by one goroutine of its own, so the publish path never waits for
// storage.
package dedupsnap
