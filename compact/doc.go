// Package compact is topic compaction (docs/compaction.md): the
// compactor keeps, for every key, the latest message (an empty payload
// deletes the key) in a compacted ledger recorded with its horizon in the
// managed ledger's info; read_compacted subscriptions read the compacted
// ledger, then the topic after the horizon.
//
// It is a feature of the broker core (broker/doc.go, "Extension
// points"), wired in cmd/magnetar:
//
//	c, err := compact.Enable(b, compact.Config{RetainNullKey: false})
//	deps.Compaction = c // admin's compaction endpoints
//
// and uses these extension points:
//
//   - CompactedReads: the core asks for the cursor of a read_compacted
//     subscription; compactedCursor serves the compacted ledger's
//     entries at or after the read position (skipping acknowledged ones),
//     then moves the subscription's own cursor to the horizon and reads
//     the tail. It implements LastReadableCursor (GET_LAST_MESSAGE_ID of
//     a compacted reader) and Unwrap (the core finds the durable cursor).
//   - TopicHook (a topic's compactor state, in a broker.TopicSlot),
//     TopicPinner (a topic being compacted is not idle-unloaded),
//     topicstats.InternalSource (the compaction fields of internal stats),
//     SystemSubscriptions (the __compaction cursor, which keeps the data
//     after the horizon, is exempt from TTL and backlog quotas).
//   - Lifecycle: the threshold monitor (every Config.MonitorInterval,
//     topics whose bytes after the horizon exceed their namespace's
//     compaction_threshold are compacted) and the running compactions
//     stop with the broker.
//
// A compaction reads the topic's managed ledger directly
// (broker.Topic.Managed): two passes over the compacted view (the current
// compacted ledger, then the topic up to its last entry), one for the
// latest message of each key, one writing the kept messages (batches
// rebuilt with the entry's codec) to a new ledger, committed with the new
// horizon; then the __compaction cursor moves to the horizon, compacted
// readers reload, and the previous compacted ledger is deleted.
//
// Each compacted-ledger entry is [position u64 ledger][u64 entry][the
// topic's entry]; a compacted reader's cursor belongs to its
// subscription's loop.
package compact
