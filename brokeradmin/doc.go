// Package brokeradmin is the broker's administration surface: the
// implementations of the role interfaces package admin declares
// (admin/roles.go), built on the seams the broker core exports
// (broker/doc.go, Model) and nothing else:
//
//   - the topic registry's primitives (broker.Registry over package
//     topicreg: created and partitioned topics, topic nodes, admissions,
//     deletion), on which
//     Topics builds admin's Topics and TopicProperties roles (topic
//     creation and its checks, partition updates, topic properties);
//   - topic lookup (Broker.Topic: a loaded topic, loading it if it
//     exists) and the primitives on a topic's view (stats, termination,
//     creating, deleting and moving subscriptions); the rest of the
//     subscription operations (resolving a managed-cursor subscription,
//     peeking at its backlog) run on the subscription's loop through
//     Subscription.Call;
//   - the loaded topics' walk (Broker.EachTopic);
//   - policies (Broker.Policies, PolicyDefaults);
//   - ownership (brokercluster.Service, OwnedBundle) and the node's URLs;
//   - the health check (health.go, Pulsar's /admin/v2/brokers/health): a
//     broker feature, registered with EnableHealth before Start
//     (admin.BrokerDeps does), over the metadata store, the ownership's
//     session and a managed ledger of its own (Broker.OpenLedger), which
//     closes with the broker (broker.Lifecycle).
//
// Each role is a small value over a *broker.Broker (Node, Topics,
// Reads, Lifecycle, Subscriptions, Ownership; For returns them all). Topic
// names are anything broker.ParseTopicName accepts; a method on one
// topic acts on a non-partitioned topic or one partition (admin fans
// out over partitions). Errors wrap the broker's sentinels
// (ErrTopicNotFound, ErrNamespaceNotFound, ErrSubscriptionNotFound,
// ErrAlreadyExists, ErrInvalidTopicName, ErrNotAllowed,
// ErrPreconditionFailed) with the reason to give the client. Every
// method is safe for concurrent use.
//
// The core never imports this package (internal/lint checks it): it is
// wired by package admin (admin.BrokerDeps) and the console.
package brokeradmin
