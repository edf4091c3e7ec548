package admin

import (
	"context"
	"log/slog"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/bookieinfo"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/brokeradmin"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/isolation"
	"github.com/magnetar-mq/magnetar/ledgerinfo"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/schema"
	"github.com/magnetar-mq/magnetar/tiered"
	"github.com/magnetar-mq/magnetar/topicreg"
	"github.com/magnetar-mq/magnetar/topicstats"
)

// The API reaches the broker only through the small role interfaces
// below, each declared here for what its routes need (package
// brokeradmin implements them over the broker core: BrokerDeps). Topic names are
// anything broker.ParseTopicName accepts; a method on one topic acts on
// a non-partitioned topic or one partition (the handlers fan out over
// partitions). Errors wrap the
// broker's and policy's sentinels (statusOf maps them); their text is
// the reason given to the client, except for internal errors.

// Node is the serving broker and its cluster as the API reports them.
type Node interface {
	// ClusterName is the cluster this broker belongs to.
	ClusterName() string
	// ServiceURL and WebURL are the advertised pulsar:// and http:// URLs.
	ServiceURL() string
	WebURL() string
	// Clusters lists the registered clusters.
	Clusters(ctx context.Context) ([]string, error)
	// Policies is the tenant, namespace and policy store the broker
	// enforces; writes through it apply to loaded topics at once.
	Policies() *policy.Store
	// PolicyDefaults are the broker-wide policy values (the last layer
	// of a topic's applied policies).
	PolicyDefaults() policy.Defaults
	// MaxPartitionsPerTopic is maxNumPartitionsPerPartitionedTopic (0:
	// only the int32 range).
	MaxPartitionsPerTopic() int
}

// Topics creates, lists and deletes topics.
type Topics interface {
	// TopicsOfNamespace lists created topics (partitions expanded) of ns
	// ("tenant/ns") in the given domains.
	TopicsOfNamespace(ctx context.Context, ns string, persistent, nonPersistent bool) ([]string, error)
	// PartitionedTopics lists the partitioned topics of ns in domain.
	PartitionedTopics(ctx context.Context, ns, domain string) ([]string, error)
	// Partitions returns a partitioned topic's partition count (0: not
	// partitioned).
	Partitions(ctx context.Context, topic string) (int, error)
	// AutoCreatePartitioned creates topic as partitioned if its
	// namespace's auto-creation policy asks for it and returns the
	// partition count (0: not created).
	AutoCreatePartitioned(ctx context.Context, topic string) int
	CreatePartitionedTopic(ctx context.Context, topic string, m topicreg.PartitionedMetadata) error
	// UpdatePartitionedTopic raises the partition count (never lowers).
	UpdatePartitionedTopic(ctx context.Context, topic string, partitions int) error
	// DeletePartitionedTopic deletes every partition, the partitioned
	// metadata and the schema.
	DeletePartitionedTopic(ctx context.Context, topic string) error
	// TopicExists reports whether topic is created (persistent) or
	// loaded (non-persistent).
	TopicExists(ctx context.Context, topic string) (bool, error)
	// DeleteTopic deletes a topic; without force it refuses one with
	// producers or consumers.
	DeleteTopic(ctx context.Context, topic string, force bool) error
}

// TopicProperties creates topics with properties and edits them.
type TopicProperties interface {
	// CreateTopicWithProperties creates a non-partitioned topic
	// (ErrAlreadyExists) with props (none for non-persistent topics).
	CreateTopicWithProperties(ctx context.Context, topic string, props map[string]string) error
	TopicProperties(ctx context.Context, topic string) (map[string]string, error)
	// UpdateTopicProperties merges set into the properties, then removes
	// the keys of del.
	UpdateTopicProperties(ctx context.Context, topic string, set map[string]string, del []string) error
}

// TopicReads reads a topic's state and entries.
type TopicReads interface {
	TopicStats(ctx context.Context, topic string) (topicstats.TopicStats, error)
	InternalStats(ctx context.Context, topic string) (topicstats.InternalStats, error)
	LastMessageID(ctx context.Context, topic string) (broker.MessageID, error)
	// ReadEntry returns the stored entry (a Pulsar batch) at id.
	ReadEntry(ctx context.Context, topic string, id broker.MessageID) ([]byte, error)
	// MessageIDByIndex returns the entry holding the message whose broker
	// entry metadata index is idx.
	MessageIDByIndex(ctx context.Context, topic string, idx int64) (broker.MessageID, error)
}

// TopicLifecycle unloads and terminates topics.
type TopicLifecycle interface {
	// UnloadTopic closes a loaded topic; clients reconnect.
	UnloadTopic(topic string) (bool, error)
	// Terminate refuses further publishes and returns the last message id.
	Terminate(ctx context.Context, topic string) (broker.MessageID, error)
}

// Offloads triggers and reports topics' offloads to tiered storage
// (*tiered.Tiering, the broker's tiered-storage feature).
type Offloads interface {
	// OffloadTopic starts offloading the closed ledgers before id's
	// ledger (ErrAlreadyExists while an offload runs).
	OffloadTopic(ctx context.Context, topic string, id broker.MessageID) error
	TopicOffloadStatus(ctx context.Context, topic string) (tiered.OffloadStatus, error)
}

// Compaction compacts topics (*compact.Compactor, the broker's
// compaction feature).
type Compaction interface {
	// Compact starts compacting a topic (ErrAlreadyExists while one runs).
	Compact(ctx context.Context, topic string) error
	// CompactionStatus reports the last compaction: NOT_RUN, RUNNING,
	// SUCCESS or ERROR, with the error.
	CompactionStatus(ctx context.Context, topic string) (status, lastError string, err error)
}

// Subscriptions manages a topic's subscriptions.
type Subscriptions interface {
	Subscriptions(ctx context.Context, topic string) ([]string, error)
	// CreateSubscription adds a durable subscription positioned at id
	// (Earliest, Latest or the entry to read first).
	CreateSubscription(ctx context.Context, topic, sub string, id broker.MessageID) error
	// SetReplicatedSubscription turns a durable subscription's replicated
	// state on or off.
	SetReplicatedSubscription(ctx context.Context, topic, sub string, replicated bool) error
	DeleteSubscription(ctx context.Context, topic, sub string, force bool) error
	// SkipMessages skips n entries of the backlog (n < 0: all of it).
	SkipMessages(ctx context.Context, topic, sub string, n int64) error
	// ExpireMessages acknowledges the messages published more than secs
	// ago, on sub or (sub == "") every subscription.
	ExpireMessages(ctx context.Context, topic, sub string, secs int64) error
	// ResetCursor moves the subscription to id (or, byTime, to the first
	// message published at or after tsMillis).
	ResetCursor(ctx context.Context, topic, sub string, id broker.MessageID, byTime bool, tsMillis int64) error
	// PeekMessage returns the n-th (1-based) unacknowledged entry.
	PeekMessage(ctx context.Context, topic, sub string, n int64) (broker.MessageID, []byte, error)
}

// Schemas is the schema registry (package schemareg). Errors wrapping
// schema.ErrIncompatible are refusals (409), schema.ErrInvalid a
// malformed schema (422).
type Schemas interface {
	// Schema returns version (latest if < 0) of a topic's schema.
	Schema(ctx context.Context, topic string, version int64) (schema.Version, bool, error)
	// Schemas returns the live versions, oldest first.
	Schemas(ctx context.Context, topic string) ([]schema.Version, error)
	// CreateSchema registers s (or finds an equal live version) under the
	// topic's compatibility strategy and returns its version.
	CreateSchema(ctx context.Context, topic string, s schema.Info) (int64, error)
	// TestSchema reports whether s would be accepted, and the strategy.
	TestSchema(ctx context.Context, topic string, s schema.Info) (string, error)
	// SchemaVersion returns the live version equal to s.
	SchemaVersion(ctx context.Context, topic string, s schema.Info) (int64, bool, error)
	// DeleteSchema deletes the topic's schema and returns the deletion
	// marker's version.
	DeleteSchema(ctx context.Context, topic string) (int64, error)
	// TopicSchemaStrategy returns the topic's compatibility strategy
	// override ("" if none) and the strategy in effect.
	TopicSchemaStrategy(ctx context.Context, topic string) (override, effective string, err error)
	// SetTopicSchemaStrategy sets the override ("" removes it).
	SetTopicSchemaStrategy(ctx context.Context, topic, strategy string) error
}

// TopicLedgers reads a persistent topic's managed ledger
// (*ledgerinfo.Reader).
type TopicLedgers interface {
	// ManagedLedgerInfo is Pulsar's ManagedLedgerInfo of a topic (one
	// partition); broker.ErrNotAllowed for a non-persistent topic.
	ManagedLedgerInfo(ctx context.Context, topic string) (ledgerinfo.Info, error)
	// MessageIDByTimestamp returns the first entry written at or after
	// ts (Unix ms), as Pulsar finds it; found false when the topic has
	// no ledgers.
	MessageIDByTimestamp(ctx context.Context, topic string, ts int64) (id broker.MessageID, found bool, err error)
}

// Ownership is the serving broker in its cluster: lookups, bundles,
// health (cluster.go).
type Ownership interface {
	// Cluster is the broker's cluster membership (nil on a single node).
	Cluster() *cluster.Service
	// BrokerID is the broker's id: its web service host:port.
	BrokerID() string
	// WebURLTLS is the advertised https:// URL ("" without HTTPS).
	WebURLTLS() string
	// Ready reports whether the broker is started and not closing.
	Ready() bool
	// HealthCheck writes and reads back a message through the bookies.
	HealthCheck(ctx context.Context) error
	// LoadedTopicsOf lists the loaded topics of a bundle (its cluster
	// key).
	LoadedTopicsOf(bundleKey string) []string
	// LookupTopic answers an HTTP lookup (redirect != "": ask there).
	LookupTopic(ctx context.Context, topic string, authoritative bool) (data brokeradmin.LookupData, redirect string, err error)
}

// Isolation is a cluster's failure domains and namespace isolation
// policies in the configuration store (*isolation.Store). Errors wrap
// isolation.ErrNotFound, ErrConflict, ErrNotEmpty or are an
// *isolation.InvalidError.
type Isolation interface {
	FailureDomains(ctx context.Context, cluster string) (map[string]isolation.FailureDomain, error)
	FailureDomain(ctx context.Context, cluster, name string) (isolation.FailureDomain, error)
	// SetFailureDomain creates or replaces a domain (ErrConflict: a
	// broker another domain lists).
	SetFailureDomain(ctx context.Context, cluster, name string, d isolation.FailureDomain) error
	DeleteFailureDomain(ctx context.Context, cluster, name string) error
	// Policies returns the isolation policies by name (ErrNotFound:
	// never set).
	Policies(ctx context.Context, cluster string) (map[string]isolation.Policy, error)
	SetPolicy(ctx context.Context, cluster, name string, p isolation.Policy) error
	DeletePolicy(ctx context.Context, cluster, name string) error
	// DeleteCluster removes the cluster's domains and empty policies
	// before the cluster is deleted (ErrNotEmpty while it has policies).
	DeleteCluster(ctx context.Context, cluster string) error
}

// Deps are the API's dependencies: one value per role (a broker fills
// them all, see BrokerDeps) and the optional ones.
type Deps struct {
	Node            Node
	Topics          Topics
	TopicProperties TopicProperties
	Reads           TopicReads
	Lifecycle       TopicLifecycle
	Subscriptions   Subscriptions
	// Schemas serves /admin/v2/schemas and the topics' strategy
	// overrides: the broker's schema registry (*schemareg.Registry). Nil:
	// those routes answer 503.
	Schemas   Schemas
	Ownership Ownership
	// Ledgers serves internal-info and messageid/{timestamp} (nil: they
	// answer 503).
	Ledgers TopicLedgers
	// Compaction serves the topics' compaction endpoints (nil: they
	// answer 405).
	Compaction Compaction
	// Offloads serves the topics' offload trigger and status (nil: those
	// routes are not declared).
	Offloads Offloads
	// Coordinators and Participants serve /admin/v3/transactions: the
	// broker's transaction feature (*txn/server.Server). Nil: they answer
	// 503, as Pulsar's do without transactionCoordinatorEnabled.
	Coordinators TxnCoordinators
	Participants TxnParticipants
	// Metrics serves /admin/v2/broker-stats/metrics (nil: not
	// declared).
	Metrics BrokerMetrics
	// Bookies lists the storage nodes for /admin/v2/bookies/all and the
	// persistence policies' ensemble check (nil: none known; the list
	// is empty and the check skipped).
	Bookies bookieinfo.Source
	// Quotas serve /admin/v2/resource-quotas (*cluster.Quotas over the
	// broker's metadata store; nil: those routes are not declared).
	Quotas ResourceQuotas
	// Config serves the broker's configuration and dynamic configuration
	// (*dynconfig.Config; nil: those routes are not declared).
	Config BrokerConfig
	// Security is the broker's security layer: with authorization on,
	// the permission endpoints store grants through its authorizer.
	Security *auth.Security
	// Metadata is the store holding the namespaces' policies: with
	// authorization off the permission endpoints store grants there, in
	// the same auth_policies an authorizer reads when it is turned on
	// (nil with authorization off: they answer 501).
	Metadata metadata.Store
	// Isolation serves the clusters' failureDomains and
	// namespaceIsolationPolicies (nil: they answer 503).
	Isolation Isolation
	// StatusFile is Pulsar's statusFilePath: /status.html answers OK
	// only while this file exists ("": never, as in Pulsar).
	StatusFile string
	// ClientLibraryVersionCheck is the configuration file's
	// clientLibraryVersionCheckEnabled: GET .../partitions of a topic of
	// more than one partition refuses clients without a User-Agent and
	// C++ clients older than 1.21, as Pulsar's does (client_version.go).
	// A dynamic override of the key (Config.Watch) applies at once.
	ClientLibraryVersionCheck bool
	// Log receives the details of internal errors, which clients see
	// only as a generic 500.
	Log *slog.Logger
}

// BrokerDeps fills every role of the core with b's (package
// brokeradmin; the schema, compaction, offload and transaction roles are
// those features': set them when they are on).
func BrokerDeps(b *broker.Broker) Deps {
	// Before b.Start, as documented; after it (broker.ErrStarted) the
	// health check answers that it is not enabled.
	_ = brokeradmin.EnableHealth(b)
	r := brokeradmin.For(b)
	return Deps{Node: r.Node, Topics: r.Topics, TopicProperties: r.Topics, Reads: r.Reads,
		Lifecycle: r.Lifecycle, Subscriptions: r.Subscriptions,
		Ownership: r.Ownership, Metrics: metricsSource{r.Ownership, r.Reads}, Security: b.Security(), Metadata: b.Metadata(), Ledgers: ledgerinfo.New(b)}
}

// metricsSource is a broker as BrokerMetrics: its ownership and its
// topic reads.
type metricsSource struct {
	brokeradmin.Ownership
	brokeradmin.Reads
}
