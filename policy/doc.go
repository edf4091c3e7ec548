// Package policy holds tenants, namespaces and their policies: the
// Pulsar policy types (with Apache Pulsar's JSON field names), their
// store in a metadata.Store, and their resolution into the effective
// policy of one topic. It knows nothing about brokers: a broker
// subscribes to a Store's changes and applies them to the topics it owns.
//
// # Storage
//
//	/admin/clusters/<cluster>       ClusterData JSON (clusters.go)
//	/admin/policies/<tenant>        TenantInfo JSON
//	/admin/policies/<tenant>/<ns>   Policies JSON
//	/admin/topic-policies/<tenant>/<ns>/<domain>/<local>   TopicPolicies JSON
//
// A topic-policies document exists only while it sets something (an
// emptied document is deleted); a partition uses its partitioned topic's.
// Rates in a namespace document are maps by cluster name, as in Pulsar.
// (replicationClusters there is the topic-level override of geo-replication).
//
// The store is the configuration store of an instance: with
// geo-replication, every cluster's brokers use the same one
// (docs/geo-replication.md).
//
// A namespace exists exactly when its node exists; the node's value is
// its Policies (unset fields mean "broker default"). Writes are
// compare-and-set on the node's version, retried on conflict.
//
// # Cache and notifications
//
// Store caches each namespace's Policies. A write through the Store
// invalidates its entry, then calls every subscriber with the namespace
// name, synchronously, before the write returns (so an admin request
// answers after the broker applied the change). Writes made by other
// processes are seen after Refresh, which drops the cache and calls the
// subscribers with "" (the broker calls it periodically), or at once for
// the namespaces and topics watched with WatchNamespace / WatchTopic
// when the metadata store supports watches (watch.go).
//
// # Resolution
//
// Resolve merges policy layers, most specific first (topic, then
// namespace), over the broker defaults: for each field the first layer
// that sets it wins. A TopicPolicies becomes a layer with Layer(cluster).
// The result is immutable; a topic swaps it whole. Writes to a topic's
// policies notify the subscribers with the topic's namespace.
package policy
