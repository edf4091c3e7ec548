// Package topicreg is the topic registry: the layout of tenants,
// namespaces, clusters, partitioned topics and created topics in the
// metadata stores, and the operations that read and change them. It
// holds no state of its own (every call goes to the stores, which are
// safe for concurrent use) and knows nothing of loaded topics: the
// broker core (package broker) builds on it, adding what needs loaded
// topics or the features (admissions, deletion observers, the
// non-persistent topics that exist while loaded) in broker.Registry,
// which embeds a *Registry. Packages that only read or write the
// metadata may use it directly; it never imports broker.
//
// # Layout
//
// All values are JSON. In the configuration store, shared by every
// cluster of an instance (the broker's Deps.ConfigStore; the cluster's
// own store when there is no separate one):
//
//	/admin/clusters/<cluster>                                 ClusterData (package policy)
//	/admin/policies/<tenant>                                  TenantInfo (package policy)
//	/admin/policies/<tenant>/<ns>                             Policies (package policy)
//	/admin/topic-policies/<tenant>/<ns>/<domain>/<topic>      Policies (topic overrides)
//	/admin/partitioned-topics/<tenant>/<ns>/<domain>/<topic>  PartitionedMetadata: {"partitions":N,"properties":{...}}
//
// In the cluster's own metadata store:
//
//	/admin/topics/<tenant>/<ns>/<domain>/<topic>              TopicNode: {"properties":{...},"created":<unix ms>}
//	/schemas/<tenant>/<ns>/<domain>/<topic>                   schema versions (package schemareg)
//	/managed-ledgers/...                                      the topics' managed ledgers
//
// Domain is "persistent" or "non-persistent"; a local topic name is
// escaped (EscapeLocal: '%' becomes "%25"; a local name never contains
// '/'). Clusters, tenants and namespaces are package policy's (a Store
// over the configuration store); the registry reads them through it.
//
// # Invariants
//
//   - A created persistent topic (or partition) has a node under
//     /admin/topics; an empty node value is a topic created before
//     nodes kept their creation time (TopicNode's zero value).
//     Non-persistent topics have no node: they exist while loaded.
//   - A partitioned topic is its node under /admin/partitioned-topics;
//     a partition is never registered there (CreatePartitioned refuses
//     one), and partition i of a partitioned topic with N partitions
//     exists with it for i < N (PartitionOfPartitioned).
//   - Updates of a node (UpdatePartitioned, UpdateTopicNode) are
//     compare-and-sets on the node's version, retried on conflict; the
//     update function may run more than once.
//   - Listings (AppendTopics) never build more than MaxListedTopics
//     names.
//
// # Errors
//
// Errors wrap ErrTopicNotFound, ErrAlreadyExists, ErrInvalidTopicName,
// ErrPreconditionFailed or the policy store's (policy.ErrNamespaceNotFound
// ...); their text is Pulsar's reason to give a client where the admin
// API shows it ("Topic not found", "Partitioned topic does not exist",
// "This topic already exists"). The broker's sentinels of the same names
// are these values.
package topicreg
