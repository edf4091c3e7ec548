// Package georep is geo-replication (docs/geo-replication.md): for each
// persistent topic (each partition of a partitioned one) and each remote
// cluster in the topic's effective replication clusters, a replicator
// reads the topic's managed ledger through a durable cursor and
// re-publishes every entry on the same topic in the remote cluster; and
// replicated subscriptions (Pulsar's PIP-33) carry their mark-delete
// positions to the other clusters through marker entries.
//
// It is a feature of the broker core (broker/doc.go, "Extension
// points"), wired in cmd/magnetar after the features that bound reads
// (transactions):
//
//	if _, err := georep.Enable(b); err != nil { ... }
//
// and uses these extension points:
//
//   - TopicHook: at load a persistent topic gets its topicState (a
//     broker.TopicSlot), the cursors of clusters it no longer replicates
//     to are deleted, and its replicators start; at close they stop (the
//     cursors stay).
//   - StoreObserver: every stored entry wakes the topic's replicators;
//     data entries (not markers) count towards the next snapshot.
//   - PolicyObserver: replicators start and stop as the replication
//     clusters change; the namespace's (and, while replicated, the
//     topic's) policies are watched so that writes made in other
//     clusters apply at once.
//   - topicstats.Source: TopicStats.Replication, one entry per remote
//     replicated to (the replicator) or from (its producer here), and
//     the replicators' rates added to the topic's msgRateOut.
//   - TopicPinner: a topic with replicators is not idle-unloaded.
//   - ReplicatedSubscriptions: on a replicated subscription's loop, the
//     SNAPSHOT markers read are cached (a broker.SubSlot) and an UPDATE
//     is written when the mark-delete position passes one.
//   - Lifecycle: a single-node broker loads the topics of the
//     namespaces replicated from its cluster at start and every 10 s, so
//     that their replicators drain a backlog without waiting for a
//     client.
//
// Names (broker.ReplicatorPrefix = "pulsar.repl"): the replicator towards
// remote R reads cursor pulsar.repl.R and publishes with producer
// pulsar.repl.<local>--><R>. Each entry is sent unchanged but for
// replicated_from (the local cluster); one that came in by replication,
// whose replicate_to leaves R out, that expired under the topic's message
// TTL, or a transaction marker, is acknowledged without being sent.
// Entries in flight are bounded (1000 entries, 64 MiB) and acknowledged
// on the cursor in order as receipts arrive, so the cursor's backlog is
// the replication backlog and survives restarts; the topic's
// replicatorDispatchRate limits each replicator.
//
// Marker payloads are PulsarMarkers.proto messages (replsub.go): a
// REQUEST (snapshot id, source cluster), a RESPONSE (id, cluster and its
// last position), a SNAPSHOT (id, local position, per-cluster
// positions), an UPDATE (subscription, per-cluster positions); marker
// types 10 to 13 in MessageMetadata.marker_type.
//
// # In the core
//
// The core (broker/doc.go) keeps only what its own paths need for
// geo-replication: the configuration store (Deps.ConfigStore: clusters,
// tenants, policies, partitioned metadata); the reserved prefix
// broker.ReplicatorPrefix (cursors named pulsar.repl.<remote> are
// replicators', never loaded as subscriptions, and no subscription may
// take such a name); the deduplication of a replicator producer's
// (pulsar.repl.<from>--><to>) sends by the original producer name in the
// entry, and its exemption from required encryption
// (broker.ReplicatorOrigin); the replicated flag of a subscription
// (replicate_subscription_state or the admin API, persisted as the cursor
// property pulsar.replicated.subscription, reported in stats); and
// markers (marker_type), which dispatch acknowledges and never delivers.
//
// Locking: topicState.mu is taken only in the hooks that run with no
// topic lock held; under it cursors are opened and deleted and
// replicator loops are waited for, and those loops never take it (they
// read the lock-free copies).
package georep
