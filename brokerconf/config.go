package brokerconf

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/policy"
)

// ErrInvalid is Validate's refusal of a configuration that cannot work
// (package broker's New reports it wrapped in broker.ErrBadConfig).
var ErrInvalid = errors.New("brokerconf: invalid configuration")

// Defaults of the history sampler (package topichistory;
// Config.HistoryInterval and HistoryLength): a sample every 5 s, 15 minutes kept.
const (
	DefaultHistoryInterval = 5 * time.Second
	DefaultHistoryWindow   = 15 * time.Minute
	// MinHistoryInterval bounds the sampler's cost (one stats pass over
	// every loaded topic per interval); MaxHistoryLength its memory.
	MinHistoryInterval = time.Second
	MaxHistoryLength   = 900
)

// Config configures a broker (package broker's New). The zero value plus EnsureDefaults is a
// usable single-node configuration listening on the Pulsar default ports.
type Config struct {
	// ServiceAddr is the binary-protocol listen address (default ":6650";
	// "127.0.0.1:0" picks a free port). "-" disables the plaintext port.
	ServiceAddr string
	// TLSServiceAddr and TLSHTTPAddr are the pulsar+ssl and https listen
	// addresses ("" = none); they need Security's TLS settings.
	TLSServiceAddr string
	TLSHTTPAddr    string
	// Security holds the TLS, authentication and authorization settings
	// (nil: none). See package auth.
	Security *auth.Config
	// HTTPAddr is the admin/lookup HTTP listen address (default ":8080").
	// "-" disables the HTTP listener.
	HTTPAddr string
	// HTTPLimits are the timeouts and caps of the HTTP and HTTPS
	// listeners (zero fields: defaults; see httpapi.Limits).
	HTTPLimits httpapi.Limits
	// AdvertisedHost is the host put into lookup answers (default
	// "localhost"). The port is always the actual service port.
	AdvertisedHost string
	// ClusterName is reported by the admin API (default "standalone").
	ClusterName string
	// MaxMessageSize is advertised in CONNECTED and bounds inbound frames
	// (default 5 MiB; the Go client's test suite expects 1 MiB).
	MaxMessageSize int
	// KeepAliveInterval is how often the broker pings an idle client
	// (default 30s). A connection that sends nothing for IdleTimeout is
	// closed (default 2.5x KeepAliveInterval). Negative: no pings and no
	// idle timeout (Pulsar's keepAliveIntervalSeconds=0).
	KeepAliveInterval time.Duration
	IdleTimeout       time.Duration
	// ConnectTimeout closes a connection that has not completed CONNECT
	// within it (default 10s).
	ConnectTimeout time.Duration
	// MaxOutboundBytes bounds a connection's unsent output (default 64
	// MiB): dispatch to a connection pauses above half of it, and the
	// connection is closed if it is exceeded anyway.
	MaxOutboundBytes int
	// WriteTimeout disconnects a client that accepts no bytes for this
	// long while the broker has output for it (default 30s).
	WriteTimeout time.Duration
	// DisableAutoTopicCreation makes unknown topics an error instead of
	// creating them on first use.
	DisableAutoTopicCreation bool
	// Deduplication drops re-sent messages by (producer name, sequence id).
	Deduplication bool
	// Delivery are the broker's delayed-delivery, subscription, topic,
	// schema-validation and compaction-threshold policy values (the last
	// layer of every topic's; zero values are Pulsar's meaning: delayed
	// delivery enabled with no tick, no limits). MaxMessageSize is taken
	// from the field above.
	Delivery policy.DeliveryDefaults
	// DedupRecoveryEntries is how many of a topic's last entries are read
	// at load to rebuild deduplication state (default 1000); producers
	// whose last entry is older than that start afresh.
	DedupRecoveryEntries int
	// DispatchBatch is the maximum number of entries one dispatcher read
	// fetches (default 100).
	DispatchBatch int
	// MaxUnackedPerConsumer is Pulsar's maxUnackedMessagesPerConsumer:
	// dispatch to a Shared or Key_Shared consumer holding that many
	// unacknowledged messages stops until acks bring it to half (default
	// 50,000; negative: unlimited). MaxUnackedPerSubscription is the same
	// for a whole subscription (default 200,000; negative: unlimited).
	// Namespace policies override both.
	MaxUnackedPerConsumer     int
	MaxUnackedPerSubscription int
	// MaxPartitionsPerTopic is Pulsar's
	// maxNumPartitionsPerPartitionedTopic: creating or growing a
	// partitioned topic beyond it is refused (default 10,000; negative:
	// only the int32 range applies).
	MaxPartitionsPerTopic int
	// Rate limit defaults for topics whose policies set none (0:
	// unlimited), with Pulsar's broker.conf meaning:
	// maxPublishRatePerTopicInMessages/InBytes (per second),
	// dispatchThrottlingRatePerTopicInMsg/InByte,
	// dispatchThrottlingRatePerSubscriptionInMsg/InByte (per second),
	// dispatchThrottlingRatePerReplicatorInMsg/InByte (per second, each
	// replicator on its own),
	// subscribeThrottlingRatePerConsumer per
	// subscribeRatePeriodPerConsumerInSecond (default 30).
	MaxPublishRatePerTopicInMessages            int
	MaxPublishRatePerTopicInBytes               int64
	DispatchThrottlingRatePerTopicInMsg         int
	DispatchThrottlingRatePerTopicInByte        int64
	DispatchThrottlingRatePerSubscriptionInMsg  int
	DispatchThrottlingRatePerSubscriptionInByte int64
	DispatchThrottlingRatePerReplicatorInMsg    int
	DispatchThrottlingRatePerReplicatorInByte   int64
	SubscribeThrottlingRatePerConsumer          int
	SubscribeRatePeriodPerConsumerInSecond      int
	// DisableDeleteInactiveTopics is !brokerDeleteInactiveTopicsEnabled:
	// by default a topic without producers, consumers and (in the
	// default mode) subscriptions is deleted after
	// DeleteInactiveTopicsMaxInactiveDuration (default: the frequency;
	// negative: none, the first check that finds it inactive deletes it,
	// Pulsar's brokerDeleteInactiveTopicsMaxInactiveDurationSeconds=0).
	// The check runs every DeleteInactiveTopicsFrequency (default 60s,
	// brokerDeleteInactiveTopicsFrequencySeconds).
	// DeleteInactiveTopicsMode is brokerDeleteInactiveTopicsMode
	// (policy.DeleteWhenNoSubscriptions by default).
	DisableDeleteInactiveTopics             bool
	DeleteInactiveTopicsFrequency           time.Duration
	DeleteInactiveTopicsMode                string
	DeleteInactiveTopicsMaxInactiveDuration time.Duration
	// SubscriptionExpirationTimeMinutes deletes subscriptions without
	// consumers idle this long (0: never), checked every
	// SubscriptionExpiryCheckInterval (default 5m).
	SubscriptionExpirationTimeMinutes int
	SubscriptionExpiryCheckInterval   time.Duration
	// StatsUpdateInterval is how often the rates of topics, producers,
	// subscriptions and consumers are recomputed over the last window
	// (Pulsar's statsUpdateFrequencyInSecs; default 5s here, 60s there).
	StatsUpdateInterval time.Duration
	// KeySharedUseConsistentHashing selects the consistent-hash ring for
	// Key_Shared AUTO_SPLIT subscriptions instead of splitting hash
	// ranges (subscriptionKeySharedUseConsistentHashing, default false).
	KeySharedUseConsistentHashing bool
	// Cluster, when set, makes the broker one of a cluster sharing the
	// metadata store (see ClusterConfig; broker.Deps.JoinCluster joins it); nil
	// is a single node that owns every topic.
	Cluster *ClusterConfig
	// ExposeBrokerEntryMetadata (Pulsar's
	// exposingBrokerEntryMetadataToClientEnabled) sends the broker entry
	// metadata stored in front of entries (package entrymeta) to consumers
	// whose client announced supports_broker_entry_metadata; otherwise it
	// is stripped on dispatch.
	ExposeBrokerEntryMetadata bool
	// Offload holds the broker-wide tiered-storage settings (nil:
	// policy.DefaultOffload, no driver).
	Offload *policy.OffloadDefaults
	// HistoryInterval is how often the history sampler records every
	// loaded topic's rates, backlog and storage size (package
	// topichistory; default
	// 5s, at least MinHistoryInterval; negative: no sampler).
	// HistoryLength samples are kept per topic (default: 15 minutes'
	// worth, at most MaxHistoryLength); a sample is 56 bytes, but an
	// idle stretch is kept as one run, so an idle topic
	// costs about 100 bytes.
	HistoryInterval time.Duration
	HistoryLength   int
	// IdleTopicUnloadTime unloads a persistent topic from memory once it
	// has had no producer, connected consumer, replicator or compaction
	// for this long; the next use loads it again (package enforcement,
	// which does the unloading). Zero or negative: never
	// (the magnetar key topicUnloadIdleSeconds).
	IdleTopicUnloadTime time.Duration
	// HideTopicLevelMetrics is !exposeTopicLevelMetricsInPrometheus:
	// /metrics then has no per-topic or per-subscription series, only
	// their sums per namespace (package brokermetrics).
	HideTopicLevelMetrics bool
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
}

// Defaults of the limits (Pulsar's, except MaxPartitionsPerTopic, which
// Pulsar leaves unlimited: see docs/limits.md).
const (
	DefaultMaxUnackedPerConsumer     = 50000
	DefaultMaxUnackedPerSubscription = 200000
	DefaultMaxPartitionsPerTopic     = 10000
)

// EnsureDefaults fills unset fields with their defaults.
func (c *Config) EnsureDefaults() {
	if c.ServiceAddr == "" {
		c.ServiceAddr = ":6650"
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = ":8080"
	}
	if c.HistoryInterval == 0 {
		c.HistoryInterval = DefaultHistoryInterval
	}
	if c.HistoryLength <= 0 && c.HistoryInterval > 0 {
		c.HistoryLength = min(max(int(DefaultHistoryWindow/c.HistoryInterval), 2), MaxHistoryLength)
	}
	if c.AdvertisedHost == "" {
		c.AdvertisedHost = "localhost"
	}
	if c.ClusterName == "" {
		c.ClusterName = "standalone"
	}
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = 5 << 20
	}
	if c.KeepAliveInterval == 0 {
		c.KeepAliveInterval = 30 * time.Second
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	if c.IdleTimeout == 0 && c.KeepAliveInterval > 0 {
		c.IdleTimeout = c.KeepAliveInterval * 5 / 2
	}
	if c.MaxOutboundBytes == 0 {
		c.MaxOutboundBytes = 64 << 20
	}
	if c.DedupRecoveryEntries == 0 {
		c.DedupRecoveryEntries = 1000
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 30 * time.Second
	}
	if c.DispatchBatch == 0 {
		c.DispatchBatch = 100
	}
	if c.MaxUnackedPerConsumer == 0 {
		c.MaxUnackedPerConsumer = DefaultMaxUnackedPerConsumer
	}
	if c.MaxUnackedPerSubscription == 0 {
		c.MaxUnackedPerSubscription = DefaultMaxUnackedPerSubscription
	}
	if c.MaxPartitionsPerTopic == 0 {
		c.MaxPartitionsPerTopic = DefaultMaxPartitionsPerTopic
	}
	if c.SubscribeRatePeriodPerConsumerInSecond == 0 {
		c.SubscribeRatePeriodPerConsumerInSecond = 30
	}
	if c.DeleteInactiveTopicsFrequency == 0 {
		c.DeleteInactiveTopicsFrequency = 60 * time.Second
	}
	if c.DeleteInactiveTopicsMaxInactiveDuration == 0 {
		c.DeleteInactiveTopicsMaxInactiveDuration = c.DeleteInactiveTopicsFrequency
	}
	if c.DeleteInactiveTopicsMode == "" {
		c.DeleteInactiveTopicsMode = "delete_when_no_subscriptions"
	}
	if c.SubscriptionExpiryCheckInterval == 0 {
		c.SubscriptionExpiryCheckInterval = 5 * time.Minute
	}
	if c.StatsUpdateInterval == 0 {
		c.StatsUpdateInterval = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// PolicyDefaults returns the broker-wide policy values the configuration
// sets: the last layer of every topic's effective policy (the broker lays
// the dynamic configuration over them). Negative unacked limits
// (unlimited) are 0 there, policy's "no limit".
func (c *Config) PolicyDefaults() policy.Defaults {
	d := policy.Defaults{
		Deduplication:     c.Deduplication,
		AutoTopicCreation: !c.DisableAutoTopicCreation,
		Cluster:           c.ClusterName,
		PublishRate: policy.PublishRate{PublishThrottlingRateInMsg: c.MaxPublishRatePerTopicInMessages,
			PublishThrottlingRateInByte: c.MaxPublishRatePerTopicInBytes},
		DispatchRate: policy.DispatchRate{DispatchThrottlingRateInMsg: c.DispatchThrottlingRatePerTopicInMsg,
			DispatchThrottlingRateInByte: c.DispatchThrottlingRatePerTopicInByte, RatePeriodInSecond: 1},
		SubscriptionDispatchRate: policy.DispatchRate{DispatchThrottlingRateInMsg: c.DispatchThrottlingRatePerSubscriptionInMsg,
			DispatchThrottlingRateInByte: c.DispatchThrottlingRatePerSubscriptionInByte, RatePeriodInSecond: 1},
		ReplicatorDispatchRate: policy.DispatchRate{DispatchThrottlingRateInMsg: c.DispatchThrottlingRatePerReplicatorInMsg,
			DispatchThrottlingRateInByte: c.DispatchThrottlingRatePerReplicatorInByte, RatePeriodInSecond: 1},
		SubscribeRate: policy.SubscribeRate{SubscribeThrottlingRatePerConsumer: c.SubscribeThrottlingRatePerConsumer,
			RatePeriodInSecond: c.SubscribeRatePeriodPerConsumerInSecond},
		InactiveTopic: policy.InactiveTopicPolicies{DeleteWhileInactive: !c.DisableDeleteInactiveTopics,
			InactiveTopicDeleteMode:    c.DeleteInactiveTopicsMode,
			MaxInactiveDurationSeconds: int(max(c.DeleteInactiveTopicsMaxInactiveDuration, 0) / time.Second)},
		SubscriptionExpirationMinutes: c.SubscriptionExpirationTimeMinutes,
		MaxUnackedPerConsumer:         max(c.MaxUnackedPerConsumer, 0),
		MaxUnackedPerSubscription:     max(c.MaxUnackedPerSubscription, 0),
		OffloadAllowed:                c.Offload.Allowed(),
		DeliveryDefaults:              c.Delivery,
	}
	d.MaxMessageSize = c.MaxMessageSize
	return d
}

// Validate reports a configuration that cannot work.
func (c *Config) Validate() error {
	switch {
	case c.HistoryInterval > 0 && c.HistoryInterval < MinHistoryInterval:
		return fmt.Errorf("%w: history sample interval %s below %s", ErrInvalid, c.HistoryInterval, MinHistoryInterval)
	case c.HistoryLength > MaxHistoryLength:
		return fmt.Errorf("%w: history length %d above %d", ErrInvalid, c.HistoryLength, MaxHistoryLength)
	case c.MaxMessageSize < 1024:
		return fmt.Errorf("%w: MaxMessageSize %d too small", ErrInvalid, c.MaxMessageSize)
	case c.IdleTimeout < 0 || c.ConnectTimeout < 0:
		return fmt.Errorf("%w: negative keep-alive", ErrInvalid)
	case c.MaxOutboundBytes < c.MaxMessageSize:
		return fmt.Errorf("%w: MaxOutboundBytes below MaxMessageSize", ErrInvalid)
	case c.DispatchBatch < 1:
		return fmt.Errorf("%w: DispatchBatch < 1", ErrInvalid)
	case c.MaxPublishRatePerTopicInMessages < 0 || c.MaxPublishRatePerTopicInBytes < 0 ||
		c.DispatchThrottlingRatePerTopicInMsg < 0 || c.DispatchThrottlingRatePerTopicInByte < 0 ||
		c.DispatchThrottlingRatePerSubscriptionInMsg < 0 || c.DispatchThrottlingRatePerSubscriptionInByte < 0 ||
		c.DispatchThrottlingRatePerReplicatorInMsg < 0 || c.DispatchThrottlingRatePerReplicatorInByte < 0 ||
		c.SubscribeThrottlingRatePerConsumer < 0 || c.SubscribeRatePeriodPerConsumerInSecond < 0:
		return fmt.Errorf("%w: negative rate limit", ErrInvalid)
	case c.DeleteInactiveTopicsMode != "delete_when_no_subscriptions" && c.DeleteInactiveTopicsMode != "delete_when_subscriptions_caught_up":
		return fmt.Errorf("%w: brokerDeleteInactiveTopicsMode %q", ErrInvalid, c.DeleteInactiveTopicsMode)
	case c.DeleteInactiveTopicsFrequency < 0 || c.SubscriptionExpiryCheckInterval < 0 || c.StatsUpdateInterval < 0 ||
		c.SubscriptionExpirationTimeMinutes < 0:
		return fmt.Errorf("%w: negative interval", ErrInvalid)
	}
	return nil
}

// ClusterConfig turns on multi-broker operation: the broker serves only
// the topics of the namespace bundles it owns, answers lookups with the
// owner, registers itself with a load report and takes part in leader
// election. The broker core hands it to broker.Deps.JoinCluster (package brokercluster
// runs package cluster); the zero value of each field is the
// membership's default.
type ClusterConfig struct {
	ReportInterval time.Duration
	ShedInterval   time.Duration
	ShedThreshold  float64
	ShedGrace      time.Duration
	// UnloadTimeout bounds a bundle's unload, and the core's wait for a
	// topic's writes in flight when it unloads one.
	UnloadTimeout time.Duration
	// Automatic bundle split thresholds.
	SplitMaxTopics, SplitMaxSessions   int
	SplitMaxMsgRate, SplitMaxBytesRate float64
	DisableAutoSplit                   bool
	// FailureDomainsEnabled is Pulsar's failureDomainsEnabled.
	FailureDomainsEnabled bool
	// Standalone marks the only broker of a standalone: it takes a
	// bundle when one of its topics is used.
	Standalone bool
}
