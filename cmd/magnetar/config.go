package main

// Configuration files: --config FILE for standalone, broker and bookie,
// reading Pulsar's conf/standalone.conf, conf/broker.conf and
// BookKeeper's conf/bookkeeper.conf with Pulsar's key names, with
// PULSAR_PREFIX_<key> and MAGNETAR_<FLAG> environment overrides; flags
// win (internal/conf has the rules). `magnetar config dump ROLE [flags]`
// prints the effective configuration.

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/dedupsnap"
	"github.com/magnetar-mq/magnetar/dynconfig"
	"github.com/magnetar-mq/magnetar/entrymeta"
	"github.com/magnetar-mq/magnetar/internal/cliflags"
	"github.com/magnetar-mq/magnetar/internal/conf"
	"github.com/magnetar-mq/magnetar/internal/conf/convert"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/txn/server"
)

// serviceFlags are the broker settings standalone and broker share beyond
// listen addresses and message size.
type serviceFlags struct {
	clusterName       string
	autoTopicCreation bool
	keepAlive         time.Duration
	dispatchBatch     int
	maxUnackedC       int
	maxUnackedS       int
	maxPartitions     int
	// configURL is the configuration store shared by the clusters of a
	// geo-replicated instance ("" = the cluster's own store).
	configURL       string
	entryMeta       []string
	exposeEntryMeta bool

	// Rate limit defaults, inactivity, stats and Key_Shared settings
	// (brokerconf.Config fields of the same meaning).
	pubRateMsgs, dispTopicMsgs, dispSubMsgs, dispReplMsgs, subscribeRate, subscribePeriod int
	pubRateBytes, dispTopicBytes, dispSubBytes, dispReplBytes                             int64
	deleteInactive                                                                        bool
	inactiveFreq, inactiveMax, subExpiryCheck, statsInterval                              time.Duration
	inactiveMode                                                                          string
	subExpiryMinutes                                                                      int
	consistentHashing                                                                     bool
	storage                                                                               cliflags.Storage
	schemaStrategy                                                                        string
	retainNullKey                                                                         bool
	schemaEnforced                                                                        bool
	console                                                                               bool
	historyInterval                                                                       time.Duration
	idleUnload                                                                            time.Duration
	topicMetrics, dedup                                                                   bool
	dedupMaxProducers                                                                     int
	txnEnabled                                                                            bool
	txnCoordinators, txnMaxActive                                                         int
	statusFile                                                                            string
	versionCheck                                                                          bool
	// runtime and internal are what /admin/v2/brokers/configuration/
	// runtime and internal-configuration answer (runtime_config.go),
	// filled once the configuration is applied.
	runtime          map[string]string
	internal         dynconfig.InternalData
	packagesEnabled  bool
	packagesReplicas int
	// delivery are the broker's delayed-delivery, subscription and topic
	// policy values (brokerconf.Config.Delivery).
	delivery        policy.DeliveryDefaults
	delayedDelivery bool
	autoSubCreation bool
	// keySharedEnable is subscriptionKeySharedEnable, autoTopicType
	// allowAutoTopicCreationType (policy.DeliveryDefaults).
	keySharedEnable bool
	autoTopicType   string
	// subTypes is subscriptionTypesEnabled.
	subTypes string
}

// apply copies the settings shared by standalone and broker into c (a
// limit of 0 is Pulsar's "unlimited", a negative value in Config).
func (s *serviceFlags) apply(c *brokerconf.Config) {
	c.ClusterName = s.clusterName
	c.DisableAutoTopicCreation = !s.autoTopicCreation
	c.KeepAliveInterval = s.keepAlive
	c.Deduplication = s.dedup
	c.DispatchBatch = s.dispatchBatch
	unlimited := func(n int) int {
		if n <= 0 {
			return -1
		}
		return n
	}
	c.MaxUnackedPerConsumer = unlimited(s.maxUnackedC)
	c.MaxUnackedPerSubscription = unlimited(s.maxUnackedS)
	c.MaxPartitionsPerTopic = unlimited(s.maxPartitions)
	c.ExposeBrokerEntryMetadata = s.exposeEntryMeta
	c.MaxPublishRatePerTopicInMessages = s.pubRateMsgs
	c.MaxPublishRatePerTopicInBytes = s.pubRateBytes
	c.DispatchThrottlingRatePerTopicInMsg = s.dispTopicMsgs
	c.DispatchThrottlingRatePerTopicInByte = s.dispTopicBytes
	c.DispatchThrottlingRatePerSubscriptionInMsg = s.dispSubMsgs
	c.DispatchThrottlingRatePerSubscriptionInByte = s.dispSubBytes
	c.DispatchThrottlingRatePerReplicatorInMsg = s.dispReplMsgs
	c.DispatchThrottlingRatePerReplicatorInByte = s.dispReplBytes
	c.SubscribeThrottlingRatePerConsumer = s.subscribeRate
	c.SubscribeRatePeriodPerConsumerInSecond = s.subscribePeriod
	c.DisableDeleteInactiveTopics = !s.deleteInactive
	c.DeleteInactiveTopicsFrequency = s.inactiveFreq
	c.DeleteInactiveTopicsMaxInactiveDuration = s.inactiveMax
	c.DeleteInactiveTopicsMode = s.inactiveMode
	c.SubscriptionExpirationTimeMinutes = s.subExpiryMinutes
	c.SubscriptionExpiryCheckInterval = s.subExpiryCheck
	c.StatsUpdateInterval = s.statsInterval
	c.KeySharedUseConsistentHashing = s.consistentHashing
	c.HistoryInterval = s.historyInterval
	c.IdleTopicUnloadTime = s.idleUnload
	c.HideTopicLevelMetrics = !s.topicMetrics
	c.Delivery = s.delivery
	c.Delivery.DelayedDeliveryDisabled = !s.delayedDelivery
	c.Delivery.DisableAutoSubscriptionCreation = !s.autoSubCreation
	c.Delivery.SchemaValidationEnforced = s.schemaEnforced
	c.Delivery.KeySharedDisabled = !s.keySharedEnable
	c.Delivery.SubscriptionTypesOff = policy.SubscriptionTypesOff(s.subTypes)
	c.Delivery.AutoTopicPartitioned = strings.EqualFold(s.autoTopicType, "partitioned")
	if !s.console {
		c.HistoryInterval = -1 // nothing shows the samples
	}
}

// register adds the flags; cluster is the --cluster-name default, ""
// when the command registers --cluster-name itself.
func (s *serviceFlags) register(fl *pflag.FlagSet, cluster string) {
	if cluster != "" {
		fl.StringVar(&s.clusterName, "cluster-name", cluster, "cluster name reported by the admin API")
	}
	fl.BoolVar(&s.autoTopicCreation, "allow-auto-topic-creation", true, "create topics on first use by a producer or consumer")
	fl.DurationVar(&s.keepAlive, "keep-alive-interval", 30*time.Second, "ping idle clients this often; close them after 2.5 intervals of silence")
	fl.IntVar(&s.dispatchBatch, "dispatch-batch", 100, "most entries one dispatcher read fetches")
	fl.IntVar(&s.maxUnackedC, "max-unacked-messages-per-consumer", brokerconf.DefaultMaxUnackedPerConsumer, "Shared/Key_Shared: stop dispatching to a consumer holding this many unacked messages until half are acked (0: unlimited)")
	fl.IntVar(&s.maxUnackedS, "max-unacked-messages-per-subscription", brokerconf.DefaultMaxUnackedPerSubscription, "Shared/Key_Shared: the same for a whole subscription (0: unlimited)")
	fl.IntVar(&s.maxPartitions, "max-partitions-per-topic", brokerconf.DefaultMaxPartitionsPerTopic, "most partitions a partitioned topic may have (0: up to 2^31-1)")
	fl.StringVar(&s.configURL, "configuration-metadata-url", "", "configuration store shared by geo-replicated clusters (clusters, tenants, policies): zk://host:port[,host:port]/chroot; default: this cluster's own metadata store")
	fl.StringSliceVar(&s.entryMeta, "broker-entry-metadata-interceptors", nil,
		"broker entry metadata stored with every entry, by Pulsar class name ("+entrymeta.InterceptorBrokerTimestamp+", "+entrymeta.InterceptorIndex+")")
	fl.BoolVar(&s.exposeEntryMeta, "expose-broker-entry-metadata", false, "send broker entry metadata to clients that support it")
	fl.IntVar(&s.pubRateMsgs, "max-publish-rate-msgs", 0, "default publish rate limit per topic, messages/s (0: none)")
	fl.Int64Var(&s.pubRateBytes, "max-publish-rate-bytes", 0, "default publish rate limit per topic, bytes/s (0: none)")
	fl.IntVar(&s.dispTopicMsgs, "dispatch-rate-topic-msgs", 0, "default dispatch rate limit per topic, messages/s (0: none)")
	fl.Int64Var(&s.dispTopicBytes, "dispatch-rate-topic-bytes", 0, "default dispatch rate limit per topic, bytes/s (0: none)")
	fl.IntVar(&s.dispSubMsgs, "dispatch-rate-subscription-msgs", 0, "default dispatch rate limit per subscription, messages/s (0: none)")
	fl.Int64Var(&s.dispSubBytes, "dispatch-rate-subscription-bytes", 0, "default dispatch rate limit per subscription, bytes/s (0: none)")
	fl.IntVar(&s.dispReplMsgs, "dispatch-rate-replicator-msgs", 0, "default rate limit per geo-replicator, messages/s (0: none)")
	fl.Int64Var(&s.dispReplBytes, "dispatch-rate-replicator-bytes", 0, "default rate limit per geo-replicator, bytes/s (0: none)")
	fl.IntVar(&s.subscribeRate, "subscribe-rate-per-consumer", 0, "default subscribes per consumer per period (0: none)")
	fl.IntVar(&s.subscribePeriod, "subscribe-rate-period", 30, "subscribe rate period in seconds")
	fl.BoolVar(&s.deleteInactive, "delete-inactive-topics", true, "delete topics without producers, consumers and subscriptions")
	fl.DurationVar(&s.inactiveFreq, "delete-inactive-topics-frequency", 60*time.Second, "how often inactive topics are looked for")
	fl.DurationVar(&s.inactiveMax, "delete-inactive-topics-max-inactive", 0, "inactivity before deletion (0: the frequency)")
	fl.StringVar(&s.inactiveMode, "delete-inactive-topics-mode", "delete_when_no_subscriptions", "delete_when_no_subscriptions or delete_when_subscriptions_caught_up")
	fl.IntVar(&s.subExpiryMinutes, "subscription-expiration-minutes", 0, "delete subscriptions idle without consumers this long (0: never)")
	fl.DurationVar(&s.subExpiryCheck, "subscription-expiry-check-interval", 5*time.Minute, "how often expired subscriptions are looked for")
	fl.DurationVar(&s.statsInterval, "stats-interval", 5*time.Second, "window of the stats rates")
	fl.BoolVar(&s.consistentHashing, "key-shared-consistent-hashing", false, "Key_Shared AUTO_SPLIT uses a consistent-hash ring instead of splitting hash ranges")
	s.storage.Register(fl)
	fl.StringVar(&s.schemaStrategy, "schema-compatibility-strategy", "FULL", "default schema compatibility strategy under namespace and topic policies")
	fl.BoolVar(&s.retainNullKey, "topic-compaction-retain-null-key", false, "keep messages without a key in compacted views (Pulsar's default since 3.2: leave them out)")
	fl.BoolVar(&s.schemaEnforced, "schema-validation-enforced", false, "refuse producers without a schema on topics that have one (namespace policy overrides)")
	s.registerDelivery(fl)
	fl.BoolVar(&s.dedup, "dedup", false, "drop re-sent messages by producer name and sequence id")
	fl.IntVar(&s.dedupMaxProducers, "dedup-max-producers", dedupsnap.DefaultMaxProducers, "most producers a topic's deduplication snapshot keeps (brokerDeduplicationMaxNumberOfProducers; 0 or less: none, as in Pulsar)")
	fl.IntVar(&s.delivery.DedupEntriesInterval, "dedup-entries-interval", 1000, "stored entries between deduplication snapshots of a topic (brokerDeduplicationEntriesInterval; 0 or less: after every entry)")
	fl.IntVar(&s.delivery.DedupSnapshotIntervalSeconds, "dedup-snapshot-interval", 120, "seconds between deduplication snapshots of a topic, unless its namespace or topic policy deduplicationSnapshotInterval says otherwise (brokerDeduplicationSnapshotIntervalSeconds; 0 or less: no timed snapshots)")
	fl.Int64Var(&s.delivery.CompactionThreshold, "compaction-threshold", 0, "compact a topic once its backlog not yet compacted passes this many bytes (brokerServiceCompactionThresholdInBytes; 0: never)")
	fl.BoolVar(&s.versionCheck, "client-library-version-check", false, "GET .../partitions of a topic of several partitions refuses (405) HTTP clients without a User-Agent and C++ clients older than 1.21, as Pulsar's clientLibraryVersionCheckEnabled")
	fl.StringVar(&s.statusFile, "status-file", "", "GET /status.html answers OK only while this file exists (Pulsar's statusFilePath; empty: the page is always 404, as in Pulsar)")
	fl.BoolVar(&s.packagesEnabled, "packages-management", true, "serve package management, /admin/v3/packages, with package contents in ledgers (Pulsar's enablePackagesManagement; false: every route answers 503)")
	fl.IntVar(&s.packagesReplicas, "packages-replicas", 1, "ensemble, write and ack quorum of package ledgers (Pulsar's packagesReplicas)")
	fl.BoolVar(&s.console, "console", true, "serve the web console under /console on the HTTP port (--console=false turns it off)")
	fl.DurationVar(&s.idleUnload, "topic-unload-idle", 5*time.Minute, "unload a persistent topic from memory after this long without producers, connected consumers, replicators or compaction; the next use reloads it (0: never)")
	fl.BoolVar(&s.topicMetrics, "expose-topic-level-metrics", true, "per-topic and per-subscription series on /metrics (false: sums per namespace only)")
	fl.BoolVar(&s.txnEnabled, "transaction-coordinator-enabled", false, "serve transactions: transaction coordinators with their logs (docs/transactions.md)")
	fl.IntVar(&s.txnCoordinators, "transaction-coordinators", server.DefaultCoordinators, "partitions of the transaction coordinator assign topic when it is created (one coordinator each)")
	fl.IntVar(&s.txnMaxActive, "max-active-transactions-per-coordinator", 0, "most open transactions per coordinator (0: unlimited)")
	fl.DurationVar(&s.historyInterval, "console-sample-interval", brokerconf.DefaultHistoryInterval, "how often topic rates, backlog and storage size are sampled for the console's charts (at least 1s; 15 minutes are kept, up to 900 samples)")
}

// registerDelivery adds the flags of the delivery, subscription and
// topic defaults (policy.DeliveryDefaults).
func (s *serviceFlags) registerDelivery(fl *pflag.FlagSet) {
	fl.BoolVar(&s.delayedDelivery, "delayed-delivery", true, "hold messages with a deliverAt time until then on Shared and Key_Shared subscriptions (delayedDeliveryEnabled; the delayedDelivery policy overrides)")
	fl.Int64Var(&s.delivery.DelayedDeliveryTick, "delayed-delivery-tick-ms", 1000, "delayed delivery tick: a message due within it goes at once (delayedDeliveryTickTimeMillis; 0: exact)")
	fl.Int64Var(&s.delivery.DelayedDeliveryMaxDelay, "delayed-delivery-max-delay-ms", 0, "refuse messages delayed further past their publish time (delayedDeliveryMaxDelayInMillis; 0: no limit)")
	fl.BoolVar(&s.autoSubCreation, "allow-auto-subscription-creation", true, "create durable subscriptions on first subscribe (allowAutoSubscriptionCreation; the autoSubscriptionCreation policy overrides)")
	fl.BoolVar(&s.keySharedEnable, "key-shared-enable", true, "admit Key_Shared subscriptions (subscriptionKeySharedEnable; false: a Key_Shared subscribe is refused, consumers already attached stay)")
	fl.StringVar(&s.subTypes, "subscription-types-enabled", "Exclusive,Shared,Failover,Key_Shared", "subscription types a subscribe may ask for, comma-separated (subscriptionTypesEnabled; other names are ignored; naming no valid type admits no subscribe, as in Pulsar)")
	fl.StringVar(&s.autoTopicType, "auto-topic-creation-type", "non-partitioned", "type of auto-created topics where no namespace autoTopicCreation policy applies: non-partitioned or partitioned (allowAutoTopicCreationType)")
	fl.IntVar(&s.delivery.DefaultNumPartitions, "default-num-partitions", 1, "partitions of a topic auto-created as partitioned (defaultNumPartitions; at least 1)")
	fl.IntVar(&s.delivery.MaxSubscriptionsPerTopic, "max-subscriptions-per-topic", 0, "most subscriptions per topic (maxSubscriptionsPerTopic; 0: unlimited)")
	fl.IntVar(&s.delivery.MaxTopicsPerNamespace, "max-topics-per-namespace", 0, "most topics per namespace, partitions counted (maxTopicsPerNamespace; 0: unlimited)")
}

func addConfigFlag(c *cobra.Command) {
	c.Flags().String("config", "", "configuration file with Pulsar's keys (conf/"+confFile[c.Name()]+"); flags and MAGNETAR_*/PULSAR_PREFIX_* variables override it")
}

// confFile is the shipped configuration file of each role.
var confFile = map[string]string{"standalone": "standalone.conf", "broker": "broker.conf", "bookie": "bookkeeper.conf",
	"proxy": "proxy.conf", "functions-worker": "functions_worker.yml"}

// applyConfig loads --config (if given) and the environment into cmd's
// flags (role's schema), reporting unknown keys on stderr (one line).
func applyConfig(cmd *cobra.Command, role string) error {
	_, err := loadConfig(cmd, role, cmd.ErrOrStderr())
	return err
}

func loadConfig(cmd *cobra.Command, role string, warn io.Writer) (conf.Result, error) {
	path, _ := cmd.Flags().GetString("config")
	var file *conf.File
	if path != "" {
		var err error
		if strings.HasSuffix(path, ".yml") || strings.HasSuffix(path, ".yaml") {
			file, err = conf.ReadYAMLFile(path) // functions_worker.yml
		} else {
			file, err = conf.ReadFile(path)
		}
		if err != nil {
			return conf.Result{}, fmt.Errorf("--config: %w", err)
		}
	}
	res, err := schemas[role].Apply(cmd.Flags(), file, os.Environ(), "config")
	if err != nil {
		return res, fmt.Errorf("configuration: %w", err)
	}
	if len(res.Unknown) > 0 {
		// One report for all of them, at start.
		fmt.Fprintf(warn, "magnetar %s: ignoring %d configuration keys Magnetar does not support: %s\n",
			role, len(res.Unknown), strings.Join(res.Unknown, ", "))
	}
	return res, nil
}

// brokerKeys are the keys standalone.conf and broker.conf share.
var brokerKeys = append([]conf.Key{
	{Names: []string{"bindAddress", "brokerServicePort"}, Flag: "listen", Convert: convert.HostPort, Doc: "binary protocol address", Empty: map[string]string{"brokerServicePort": "-"}},
	{Names: []string{"bindAddress", "webServicePort"}, Flag: "http", Convert: convert.HostPort, Doc: "admin/lookup HTTP address", Empty: map[string]string{"webServicePort": "-"}},
	{Names: []string{"advertisedAddress"}, Flag: "advertised-host", Doc: "host given to clients in lookups"},
	{Names: []string{"clusterName"}, Flag: "cluster-name"},
	{Names: []string{"configurationMetadataStoreUrl", "configurationStoreServers"}, Flag: "configuration-metadata-url", Convert: convert.PulsarMetadataURL, Doc: "shared configuration store (geo-replication)"},
	{Names: []string{"maxMessageSize"}, Flag: "max-message-size", Convert: convert.MessageSize, Doc: "bytes"},
	{Names: []string{"brokerDeduplicationEnabled"}, Flag: "dedup"},
	{Names: []string{"brokerDeduplicationSnapshotIntervalSeconds"}, Flag: "dedup-snapshot-interval"},
	{Names: []string{"brokerDeduplicationEntriesInterval"}, Flag: "dedup-entries-interval"},
	{Names: []string{"brokerDeduplicationMaxNumberOfProducers"}, Flag: "dedup-max-producers"},
	{Names: []string{"allowAutoTopicCreation"}, Flag: "allow-auto-topic-creation"},
	{Names: []string{"allowAutoSubscriptionCreation"}, Flag: "allow-auto-subscription-creation"},
	{Names: []string{"maxSubscriptionsPerTopic"}, Flag: "max-subscriptions-per-topic", Convert: convert.NegativeIsZero},
	{Names: []string{"maxTopicsPerNamespace"}, Flag: "max-topics-per-namespace", Convert: convert.NegativeIsZero},
	{Names: []string{"delayedDeliveryEnabled"}, Flag: "delayed-delivery"},
	{Names: []string{"delayedDeliveryTickTimeMillis"}, Flag: "delayed-delivery-tick-ms", Convert: convert.NonNegative},
	{Names: []string{"delayedDeliveryMaxDelayInMillis"}, Flag: "delayed-delivery-max-delay-ms", Convert: convert.NegativeIsZero},
	{Names: []string{"brokerServiceCompactionThresholdInBytes"}, Flag: "compaction-threshold", Convert: convert.NegativeIsZero},
	{Names: []string{"keepAliveIntervalSeconds"}, Flag: "keep-alive-interval", Convert: convert.OrOff(time.Second)},
	{Names: []string{"dispatcherMaxReadBatchSize"}, Flag: "dispatch-batch", Convert: convert.Positive},
	{Names: []string{"maxUnackedMessagesPerConsumer"}, Flag: "max-unacked-messages-per-consumer"},
	{Names: []string{"maxUnackedMessagesPerSubscription"}, Flag: "max-unacked-messages-per-subscription"},
	{Names: []string{"maxNumPartitionsPerPartitionedTopic"}, Flag: "max-partitions-per-topic"},
	{Names: []string{"brokerEntryMetadataInterceptors"}, Flag: "broker-entry-metadata-interceptors"},
	{Names: []string{"exposingBrokerEntryMetadataToClientEnabled"}, Flag: "expose-broker-entry-metadata"},
	{Names: []string{"maxPublishRatePerTopicInMessages"}, Flag: "max-publish-rate-msgs", Convert: convert.NegativeIsZero},
	{Names: []string{"maxPublishRatePerTopicInBytes"}, Flag: "max-publish-rate-bytes", Convert: convert.NegativeIsZero},
	{Names: []string{"dispatchThrottlingRatePerTopicInMsg"}, Flag: "dispatch-rate-topic-msgs", Convert: convert.NegativeIsZero},
	{Names: []string{"dispatchThrottlingRatePerTopicInByte"}, Flag: "dispatch-rate-topic-bytes", Convert: convert.NegativeIsZero},
	{Names: []string{"dispatchThrottlingRatePerSubscriptionInMsg"}, Flag: "dispatch-rate-subscription-msgs", Convert: convert.NegativeIsZero},
	{Names: []string{"dispatchThrottlingRatePerSubscriptionInByte"}, Flag: "dispatch-rate-subscription-bytes", Convert: convert.NegativeIsZero},
	{Names: []string{"dispatchThrottlingRatePerReplicatorInMsg"}, Flag: "dispatch-rate-replicator-msgs", Convert: convert.NegativeIsZero},
	{Names: []string{"dispatchThrottlingRatePerReplicatorInByte"}, Flag: "dispatch-rate-replicator-bytes", Convert: convert.NegativeIsZero},
	{Names: []string{"subscribeThrottlingRatePerConsumer"}, Flag: "subscribe-rate-per-consumer", Convert: convert.NegativeIsZero},
	{Names: []string{"subscribeRatePeriodPerConsumerInSecond"}, Flag: "subscribe-rate-period", Convert: convert.Positive},
	{Names: []string{"brokerDeleteInactiveTopicsEnabled"}, Flag: "delete-inactive-topics"},
	{Names: []string{"brokerDeleteInactiveTopicsFrequencySeconds"}, Flag: "delete-inactive-topics-frequency", Convert: convert.AtLeastOne(time.Second)},
	{Names: []string{"brokerDeleteInactiveTopicsMaxInactiveDurationSeconds"}, Flag: "delete-inactive-topics-max-inactive", Convert: convert.OrOff(time.Second)},
	{Names: []string{"brokerDeleteInactiveTopicsMode"}, Flag: "delete-inactive-topics-mode"},
	{Names: []string{"subscriptionExpirationTimeMinutes"}, Flag: "subscription-expiration-minutes", Convert: convert.NegativeIsZero},
	{Names: []string{"subscriptionExpiryCheckIntervalInMinutes"}, Flag: "subscription-expiry-check-interval", Convert: convert.AtLeastOne(time.Minute)},
	{Names: []string{"statsUpdateFrequencyInSecs"}, Flag: "stats-interval", Convert: convert.AtLeastOne(time.Second)},
	{Names: []string{"subscriptionKeySharedUseConsistentHashing"}, Flag: "key-shared-consistent-hashing"},
	{Names: []string{"subscriptionKeySharedEnable"}, Flag: "key-shared-enable"},
	{Names: []string{"subscriptionTypesEnabled"}, Flag: "subscription-types-enabled"},
	{Names: []string{"allowAutoTopicCreationType"}, Flag: "auto-topic-creation-type", Convert: autoTopicType},
	{Names: []string{"defaultNumPartitions"}, Flag: "default-num-partitions", Convert: convert.Positive},
	{Names: []string{"schemaCompatibilityStrategy"}, Flag: "schema-compatibility-strategy"},
	{Names: []string{"isSchemaValidationEnforced"}, Flag: "schema-validation-enforced"},
	{Names: []string{"topicCompactionRetainNullKey"}, Flag: "topic-compaction-retain-null-key"},
	{Names: []string{"statusFilePath"}, Flag: "status-file", Doc: "/status.html answers OK while this file exists"},
	{Names: []string{"clientLibraryVersionCheckEnabled"}, Flag: "client-library-version-check"},
	{Names: []string{"enablePackagesManagement"}, Flag: "packages-management", Doc: "package management (/admin/v3/packages); Magnetar's default is on"},
	{Names: []string{"packagesReplicas"}, Flag: "packages-replicas", Convert: convert.Positive},
	{Names: []string{"consoleEnabled"}, Flag: "console", Doc: "Magnetar's web console under /console"},
	{Names: []string{"consoleSampleIntervalSeconds"}, Flag: "console-sample-interval", Convert: convert.AtLeastOne(time.Second)},
	{Names: []string{"exposeTopicLevelMetricsInPrometheus"}, Flag: "expose-topic-level-metrics"},
	{Names: []string{"topicUnloadIdleSeconds"}, Flag: "topic-unload-idle", Convert: convert.Seconds, Doc: "Magnetar's own key: unload idle topics from memory"},
	{Names: []string{"transactionCoordinatorEnabled"}, Flag: "transaction-coordinator-enabled"},
	{Names: []string{"maxActiveTransactionsPerCoordinator"}, Flag: "max-active-transactions-per-coordinator", Convert: convert.NonNegative},
}, cliflags.StorageKeys...)

// brokerFixed: Pulsar keys whose value is fixed in Magnetar (none left).
var brokerFixed []conf.Fixed

// autoTopicType reads allowAutoTopicCreationType: one of Pulsar's two
// types, in any case.
func autoTopicType(vals []string, _ string) (string, error) {
	v := strings.ToLower(strings.TrimSpace(vals[0]))
	if v != "partitioned" && v != "non-partitioned" {
		return "", fmt.Errorf("%q: want partitioned or non-partitioned", vals[0])
	}
	return v, nil
}

// brokerIgnored: Pulsar keys whose behaviour Magnetar has built in.
var brokerIgnored = []string{
	"acknowledgmentAtBatchIndexLevelEnabled",  // batch-index acks are always honoured
	"managedLedgerDefaultMarkDeleteRateLimit", // mark-deletes are batched by the cursor
	"loadBalancerEnabled",                     // a cluster's load manager always runs
	"packagesManagementStorageProvider",       // package contents are always in ledgers on the bookies
	"packagesManagementLedgerRootPath",        // package ledgers are the cluster's ledgers
}

// schemas are the keys of each role's file: its own, then the security
// keys it does not already have, the HTTP limits (not on bookies) and the
// function worker's (standalone and functions-worker).
var schemas = roleSchemas()

func roleSchemas() map[string]*conf.Schema {
	m := baseSchemas()
	for _, role := range []string{"standalone", "broker", "bookie"} {
		s := m[role]
		s.Keys = append(s.Keys, cliflags.SecurityKeys(s.Keys)...)
		if role != "bookie" {
			s.Keys = append(s.Keys, cliflags.HTTPKeys()...)
		}
	}
	m["standalone"].Keys = append(m["standalone"].Keys, cliflags.FunctionsKeys...)
	w := workerSchema
	w.Keys = append(w.Keys, cliflags.FunctionsKeys...)
	w.Keys = append(w.Keys, cliflags.SecurityKeys(w.Keys)...)
	w.Keys = append(w.Keys, cliflags.HTTPKeys()...)
	m["functions-worker"] = w
	proxySchema.Keys = append(proxySchema.Keys, cliflags.SecurityKeys(proxySchema.Keys)...)
	m["proxy"] = proxySchema
	return m
}

// baseSchemas are the server roles' own keys.
func baseSchemas() map[string]*conf.Schema {
	return map[string]*conf.Schema{
		"standalone": {
			Keys: brokerKeys,
			Fixed: append([]conf.Fixed{
				{Name: "managedLedgerDefaultEnsembleSize", Value: "1", Why: "the standalone has one bookie"},
				{Name: "managedLedgerDefaultWriteQuorum", Value: "1", Why: "the standalone has one bookie"},
				{Name: "managedLedgerDefaultAckQuorum", Value: "1", Why: "the standalone has one bookie"},
			}, brokerFixed...),
			// The standalone's metadata store is embedded: no ZooKeeper keys.
			Ignored: append([]string{"metadataStoreUrl", "zookeeperServers", "metadataStoreSessionTimeoutMillis", "zooKeeperSessionTimeoutMillis"}, brokerIgnored...),
		},
		"broker": {
			Keys: append(append([]conf.Key{}, brokerKeys...),
				conf.Key{Names: []string{"metadataStoreUrl", "zookeeperServers"}, Flag: "metadata-url", Convert: convert.PulsarMetadataURL},
				conf.Key{Names: []string{"metadataStoreSessionTimeoutMillis", "zooKeeperSessionTimeoutMillis"}, Flag: "zk-session-timeout", Convert: convert.SessionTimeout},
				conf.Key{Names: []string{"managedLedgerDefaultEnsembleSize"}, Flag: "ensemble"},
				conf.Key{Names: []string{"managedLedgerDefaultWriteQuorum"}, Flag: "write-quorum"},
				conf.Key{Names: []string{"managedLedgerDefaultAckQuorum"}, Flag: "ack-quorum"},
				conf.Key{Names: []string{"loadBalancerSheddingIntervalMinutes"}, Flag: "load-shedding-interval", Convert: convert.AtLeastOne(time.Minute)},
				conf.Key{Names: []string{"loadBalancerSheddingGracePeriodMinutes"}, Flag: "load-shedding-grace", Convert: convert.OrOff(time.Minute)},
				conf.Key{Names: []string{"loadBalancerNamespaceBundleMaxTopics"}, Flag: "bundle-split-max-topics", Convert: convert.SplitTopics},
				conf.Key{Names: []string{"loadBalancerNamespaceBundleMaxSessions"}, Flag: "bundle-split-max-sessions", Convert: convert.SplitSessions},
				conf.Key{Names: []string{"loadBalancerNamespaceBundleMaxMsgRate"}, Flag: "bundle-split-max-msg-rate", Convert: convert.SplitRate(1)},
				conf.Key{Names: []string{"loadBalancerNamespaceBundleMaxBandwidthMbytes"}, Flag: "bundle-split-max-bytes-rate", Convert: convert.SplitRate(1 << 20)},
				conf.Key{Names: []string{"loadBalancerAutoBundleSplitEnabled"}, Flag: "disable-bundle-auto-split", Convert: convert.Not},
				conf.Key{Names: []string{"failureDomainsEnabled"}, Flag: "failure-domains-enabled"},
			),
			Fixed:   brokerFixed,
			Ignored: brokerIgnored,
		},
		"bookie": {
			Keys: []conf.Key{
				{Names: []string{"bookiePort"}, Flag: "listen", Convert: func(v []string, cur string) (string, error) {
					return convert.HostPort([]string{"", v[0]}, cur)
				}},
				{Names: []string{"advertisedAddress", "bookiePort"}, Flag: "advertised-address", Convert: convert.BookieAdvertised},
				{Names: []string{"journalDirectories", "journalDirectory"}, Flag: "journal-dir", Convert: convert.FirstDir},
				{Names: []string{"ledgerDirectories"}, Flag: "ledger-dirs"},
				{Names: []string{"metadataServiceUri", "zkServers", "zkLedgersRootPath"}, Flag: "metadata-url", Convert: convert.BookkeeperMetadataURL},
				{Names: []string{"journalSyncData"}, Flag: "journal-no-sync", Convert: convert.Not},
				{Names: []string{"journalDirectIO"}, Flag: "journal-direct-io"},
				{Names: []string{"journalAlignmentSize"}, Flag: "journal-alignment-size"},
				{Names: []string{"flushEntrylogBytes"}, Flag: "flush-entrylog-bytes", Convert: convert.NegativeIsZero},
				{Names: []string{"journalMaxGroupWaitMSec"}, Flag: "journal-max-group-wait", Convert: convert.MillisOrZero},
				{Names: []string{"flushInterval"}, Flag: "flush-interval", Convert: convert.Millis},
			},
			Ignored: []string{"httpServerEnabled", "journalAdaptiveGroupWrites"},
		},
	}
}

// newConfigCmd builds `magnetar config dump`.
func newConfigCmd() *cobra.Command {
	configCmd := &cobra.Command{
		Use:   "config",
		Short: "Configuration files (Pulsar's key names)",
	}
	dump := &cobra.Command{
		Use:   "dump standalone|broker|bookie|proxy [--show-secrets] [--config FILE] [flags of that command]",
		Short: "Print the effective configuration of a server command and where each value comes from",
		Long: `Applies the role's --config file, the environment (PULSAR_PREFIX_<key>,
MAGNETAR_<FLAG>) and the flags given, as the command itself would, and
prints every setting as flag=value with its origin. Nothing is started.
Values of settings that hold a secret (tokenSecretKey, passwords, client
authentication parameters, offload credentials) print as <redacted>
unless --show-secrets is given; file references (file:///path, /path)
are shown, since they name where a secret is, not the secret.`,
		Args:               cobra.MinimumNArgs(1),
		DisableFlagParsing: true,
		RunE:               runConfigDump,
	}
	configCmd.AddCommand(dump)
	return configCmd
}

// runConfigDump is `config dump ROLE [--show-secrets] [flags of ROLE]`.
func runConfigDump(cmd *cobra.Command, args []string) error {
	show := false
	args = slices.DeleteFunc(args, func(a string) bool {
		if a == "--show-secrets" || a == "--show-secrets=true" {
			show = true
			return true
		}
		return a == "--show-secrets=false"
	})
	if len(args) == 0 {
		return fmt.Errorf("config dump: name a role: standalone, broker, bookie or proxy")
	}
	role := args[0]
	if _, ok := schemas[role]; !ok {
		return fmt.Errorf("config dump %q: want standalone, broker, bookie or proxy", role)
	}
	target, _, err := cmd.Root().Find([]string{role})
	if err != nil {
		return err
	}
	target.Flags().Init(role, pflag.ContinueOnError)
	if err := target.ParseFlags(args[1:]); err != nil {
		return err
	}
	res, err := loadConfig(target, role, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	// One write at the end: the dump (~8 KiB) fits a pipe's buffer, so a
	// reader that stops early (grep -q) does not fail it half-way with a
	// broken pipe.
	w := new(strings.Builder)
	fmt.Fprintf(w, "# magnetar %s: effective configuration\n", role)
	for _, s := range res.Sources {
		if s.Flag == "config" || s.Flag == "help" {
			continue
		}
		v := s.Value
		if !show {
			v = redact(s.Flag, v)
		}
		fmt.Fprintf(w, "%s=%s\t# %s\n", s.Flag, v, s.Origin)
	}
	_, err = io.WriteString(cmd.OutOrStdout(), w.String())
	return err
}

// secretWords mark a setting (by flag name, case-insensitive) whose value
// is a secret: tokenSecretKey, offload-credential-secret, the client
// authentication parameters (tokens, passwords), private keys.
var secretWords = []string{"secret", "password", "authenticationparameters", "auth-params", "authparams", "private"}

// redact hides the value of a secret-holding setting. A file reference
// (file:///path or an absolute path) stays: it says where the secret is.
func redact(flag, value string) string {
	f := strings.ToLower(flag)
	if value == "" || !slices.ContainsFunc(secretWords, func(w string) bool { return strings.Contains(f, w) }) {
		return value
	}
	if strings.HasPrefix(value, "file://") || (strings.HasPrefix(value, "/") && !strings.ContainsAny(value, ",:")) {
		return value
	}
	return "<redacted>"
}
