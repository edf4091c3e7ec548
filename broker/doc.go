// Package broker serves the Pulsar binary protocol (for unmodified Pulsar
// clients) over topics stored in managed ledgers: protocol handling,
// topics, subscriptions, dispatch, policy enforcement on the topics it
// owns, and the HTTP topic lookup and /metrics. The admin REST API lives
// in package admin and reaches the broker only through Service; tenants,
// namespaces and their policies live in package policy, whose Store the
// broker subscribes to (each topic holds its resolved policy).
//
// # Usage
//
//	b, err := broker.New(broker.Config{ServiceAddr: ":6650", HTTPAddr: ":8080"},
//		broker.Deps{Metadata: store, OpenLedger: broker.LedgerOpener(factory, mledger.Config{})})
//	err = b.Start(ctx)        // binds both listeners; b.ServiceAddr(), b.HTTPAddr()
//	...
//	err = b.Close()           // graceful: stop accepting, answer in-flight sends,
//	                          // flush connections, close managed ledgers
//
// Other packages add HTTP endpoints with b.Router().Handle(method, pattern,
// handler) before Start (see Router for the pattern syntax); the binary
// wires the admin API with admin.Register(b.Router(), b).
//
// # Model
//
//	Broker ── topics (loaded on first use; auto-created unless disabled)
//	  topic ── producers (by name; access modes) ── subscriptions (by name)
//	    subscription ── cursor (durable or not) ── consumers
//	conn ── producers and consumers by client-assigned id
//
// A persistent topic is one managed ledger; one SEND (a Pulsar batch) is
// one entry, stored exactly as received from the 0x0e01 magic to the end,
// and sent to consumers unchanged. The entry is the broker's from the SEND
// on and never modified: a SEND frame above pulsarproto.OwnedFrameThreshold
// was read straight into a buffer of its own, which becomes the entry
// as is; a smaller one is copied out of the connection's reused frame
// buffer. Either way the entry has free room in front (entryBuf), which
// the ledger uses to write its entry header without copying the entry
// again (mledger.AddEntryHeadroom). Non-persistent topics have no storage:
// an entry goes to the subscriptions whose consumers have permits at
// publish time and is dropped by the others.
//
// Metadata (tenants, namespaces, partitioned topics, created topics,
// schemas) lives in a metadata.Store; see registry.go for the layout.
// public/default, pulsar/system and the cluster are created at Start.
//
// # Goroutines and ownership
//
//   - Per connection: a reader (decodes frames, runs handlers in order) and
//     a writer (drains the outbound queue, coalescing every frame queued
//     during the previous write into one writev; entries of 4 KiB and more
//     are queued by reference, not copied). Handlers never wait for
//     storage on the SEND path: AddEntry is asynchronous and receipts are
//     queued from its callback, in add order, so receipts of one producer
//     are in send order. A closing connection first answers its in-flight
//     SENDs (bounded wait), then flushes its queue. SENDs held by a
//     producer_request_hold quota are dropped unanswered when their
//     producer closes or is detached, or its connection closes (a
//     SEND_ERROR would close the client's whole connection; the client
//     re-sends them after reconnecting); they are never published.
//   - Per subscription: one loop goroutine owns the dispatch state (the
//     cursor, consumers, permits, pending acks, replay and delayed sets).
//     Everything else submits closures with do (async) or call (sync) and
//     never touches that state (docs/architecture.md, Design rules).
//   - Per replicator (topic or partition, remote cluster): one loop that
//     owns its cursor reads, its pending queue and its connection to the
//     remote (replicator.go, replclient.go: a pulsarclient.EntryProducer
//     on a client of its own, whose connection has its reader and writer
//     goroutines). Per replicated topic, one snapshot
//     controller for replicated subscriptions (replsub.go). Both stop
//     with the topic.
//   - The accept loop and HTTP server. Close waits for all of them.
//
// # Geo-replication
//
// docs/geo-replication.md has the model. The configuration store
// (Deps.ConfigStore) holds clusters, tenants, policies and partitioned
// metadata; a topic's effective replication clusters come from its
// resolved policy. Replicators read the ledger through durable cursors
// named pulsar.repl.<remote> (never loaded as subscriptions) and publish
// on the remote with a producer named pulsar.repl.<local>--><remote>; a
// broker deduplicates such a producer's sends by the original producer
// name in the entry. Marker entries (marker_type) are never dispatched
// to consumers.
//
// # Dispatch
//
// Permits are counted in messages: an entry of an N-message batch uses N
// (the count may go negative; dispatch stops at <= 0). A consumer whose
// connection's outbound queue is above half of MaxOutboundBytes is treated
// as having no permits until the writer drains it (backpressure); a client
// that accepts nothing for WriteTimeout is disconnected. Entries go to the
// replay set (redelivered first, in position order) when they are nacked,
// when their consumer leaves, or when the consumer they are routed to
// cannot take them (Key_Shared keeps per-key order this way). Except for
// Key_Shared, a read fetches no more entries than the consumers have
// permits for. Redelivery counts are kept per entry per subscription.
//
// Pending (delivered, unacked) and delayed entries keep their position,
// message count and key, not their bytes; redeliveries re-read them from
// the managed ledger, one read per dispatch batch (cursor.ReadAt).
// Shared and Key_Shared dispatch stops for a consumer (subscription)
// holding MaxUnackedPerConsumer (...PerSubscription) unacked messages
// and resumes at half (docs/limits.md).
//
// Selection: Exclusive (one consumer), Failover (active = index
// partition % n of consumers sorted by priority, name, arrival; told with
// ACTIVE_CONSUMER_CHANGE to every consumer when the choice changes, and to
// a new consumer 100 ms after its SUCCESS, since the Go client drops the
// command until it has processed SUCCESS), Shared (round-robin over
// consumers with permits), Key_Shared (Murmur3 of ordering key / partition key
// mod 65536: split hash ranges in AUTO_SPLIT mode, or a consistent-hash
// ring with Config.KeySharedUseConsistentHashing, declared ranges in
// STICKY; a consumer joining late is held to the entries read before it
// joined until they are acknowledged; keyshared.go, docs/policies.md).
//
// # Transactions
//
// With TransactionCoordinatorEnabled the broker serves the coordinators
// of the assign topic partitions it owns (txn_coordinator.go, package
// txn/coordinator) and is the participant of the transactions that touch
// its topics: a topic's transaction buffer (txn_buffer.go: entries stored
// at once, cursors bounded by the first entry of the oldest open
// transaction, commit/abort markers, a snapshot in the metadata store) and
// a subscription's pending acks (txn_pendingack.go: held acks, a
// pending-ack managed ledger per subscription). A coordinator ends a
// transaction on the broker's own topics directly and on other brokers'
// with END_TXN_ON_PARTITION / END_TXN_ON_SUBSCRIPTION (txn_remote.go).
// Off, a txn SEND or ACK is refused and the plain paths only test a nil
// pointer. docs/transactions.md has the formats and invariants.
//
// # Policies, rate limits, stats
//
// A topic's effective policy (policy.Resolved) is its topic-level
// policies over its namespace's over the broker defaults
// (policy_enforce.go). Rate limits (ratelimit.go) are token buckets that
// go into debt: publish pauses the connection's reads, dispatch stops a
// subscription until a timer, subscribe refuses with TooManyRequests.
// Rates in stats are per fixed window rolled by one timer
// (Config.StatsUpdateInterval, stats.go); counters count stored messages
// only. Inactive topics and idle subscriptions are deleted by
// inactive.go. docs/policies.md has the rules.
//
// # Many topics
//
// A subscription's loop goroutine runs only while it has consumers,
// timers or queued work: idle, it exits, do starts it again and call runs
// its function inline (the caller owns the loop state meanwhile; the
// handover goes through subscription.run, a leaf lock), so an idle
// subscription holds no goroutine. Persistent topics idle (no producer,
// connected consumer, replicator, compaction or held send) for
// Config.IdleTopicUnloadTime are unloaded and reloaded on the next use
// with nothing lost (idleunload.go), their cached topic-level policies
// dropped; a sweep that unloaded 10,000 or more returns the freed memory
// to the operating system at once. The console history keeps an idle
// stretch as one run and samples counters without building stats
// (history.go). With
// HideTopicLevelMetrics, /metrics sums topic metrics per namespace
// (nsmetrics.go). docs/scale.md has the per-topic memory accounting.
//
// # Locking
//
// Lock order (docs/locking.md has the full table): topic.held (held
// sends, policy dedup) > topic.mu > topic.limitsMu, producer.mu; topic.repl (the
// replicators) is never taken under another topic lock: under it the
// broker opens and deletes cursors and waits for replicator loops to
// stop, and those loops never take topic.repl (they read topic.replList
// and topic.replCtl) but may take topic.mu. Broker.mu, conn.mu,
// the outbound queue lock, topic.last, subscription.run and the policy
// cache lock are leaves (nothing is taken and no topic or subscription method is called
// while holding them). The subscription loop never takes topic.held,
// topic.mu or Broker.mu, so code holding those may call a subscription
// (call/do). call returns only once f ran, or once the loop exited
// without running it. Managed-ledger callbacks take only leaf locks
// (producer.mu, topic.last and the outbound queue lock).
//
// # Deviations and limits
//
//   - Deduplication state (last sequence id per producer name) is kept in
//     memory and rebuilt at topic load from the last DedupRecoveryEntries
//     entries only (Pulsar snapshots it; Magnetar does not yet).
//   - Topic compaction and read_compacted: compaction.go,
//     compactedcursor.go, docs/compaction.md. Schemas: schema.go and
//     package schema, docs/schema.md.
//   - Chunked messages are kept whole per consumer on
//     Shared and Key_Shared subscriptions (chunk.go, docs/chunking.md).
package broker
