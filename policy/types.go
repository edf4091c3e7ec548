package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/magnetar-mq/magnetar/bundle"
)

// Policies is a namespace's policy document, stored as JSON at
// /admin/policies/<tenant>/<ns> with Apache Pulsar's field names. Unset
// (nil) fields mean "broker default".
type Policies struct {
	ReplicationClusters []string        `json:"replication_clusters"`
	Bundles             *BundlesData    `json:"bundles,omitempty"`
	AuthPolicies        json.RawMessage `json:"auth_policies,omitempty"`
	// SubscriptionAuthMode is "None" or "Prefix"; package auth reads and
	// writes it with AuthPolicies (kept here so policy updates keep it).
	SubscriptionAuthMode string                  `json:"subscription_auth_mode,omitempty"`
	RetentionPolicies    *RetentionPolicies      `json:"retention_policies,omitempty"`
	MessageTTLInSeconds  *int                    `json:"message_ttl_in_seconds,omitempty"`
	BacklogQuotaMap      map[string]BacklogQuota `json:"backlog_quota_map,omitempty"`
	DeduplicationEnabled *bool                   `json:"deduplicationEnabled,omitempty"`
	MaxProducersPerTopic *int                    `json:"max_producers_per_topic,omitempty"`
	MaxConsumersPerTopic *int                    `json:"max_consumers_per_topic,omitempty"`
	// MaxUnackedMessagesPerConsumer / ...PerSubscription override the
	// broker's limits (0: unlimited).
	MaxUnackedMessagesPerConsumer     *int               `json:"max_unacked_messages_per_consumer,omitempty"`
	MaxUnackedMessagesPerSubscription *int               `json:"max_unacked_messages_per_subscription,omitempty"`
	AutoTopicCreationOverride         *AutoTopicCreation `json:"autoTopicCreationOverride,omitempty"`
	// Rates by cluster name (Pulsar keeps one value per cluster; the
	// broker reads its own cluster's).
	PublishMaxMessageRate    map[string]PublishRate   `json:"publishMaxMessageRate,omitempty"`
	TopicDispatchRate        map[string]DispatchRate  `json:"topicDispatchRate,omitempty"`
	SubscriptionDispatchRate map[string]DispatchRate  `json:"subscriptionDispatchRate,omitempty"`
	ClusterSubscribeRate     map[string]SubscribeRate `json:"clusterSubscribeRate,omitempty"`
	// ReplicatorDispatchRate limits what each geo-replicator of a topic
	// sends to one remote cluster.
	ReplicatorDispatchRate map[string]DispatchRate `json:"replicatorDispatchRate,omitempty"`
	InactiveTopicPolicies  *InactiveTopicPolicies  `json:"inactive_topic_policies,omitempty"`
	// SubscriptionExpirationTimeMinutes deletes subscriptions without
	// consumers that were inactive this long (0: never).
	SubscriptionExpirationTimeMinutes *int `json:"subscription_expiration_time_minutes,omitempty"`
	// Tiered storage: the offload policies and Pulsar's older separate
	// fields (bytes, seconds, milliseconds; -1 disables a threshold, a
	// negative lag never deletes the bookie copy).
	OffloadPolicies           *OffloadPolicies `json:"offload_policies,omitempty"`
	OffloadThreshold          *int64           `json:"offload_threshold,omitempty"`
	OffloadThresholdInSeconds *int64           `json:"offload_threshold_in_seconds,omitempty"`
	OffloadDeletionLagMs      *int64           `json:"offload_deletion_lag_ms,omitempty"`
	// Schema and compaction policies (messaging.go), flattened into the
	// document under Pulsar's names.
	MessagingPolicies
	// Persistence, anti-affinity group, consumers per subscription and
	// encryption (persistence.go), flattened likewise.
	NamespaceExtras
	// Delayed delivery, subscriptions and topics limits (delivery.go).
	NamespaceDelivery
}

// BundlesData is a namespace's bundle split (Magnetar keeps one bundle
// covering the whole hash range).
type BundlesData struct {
	Boundaries []string `json:"boundaries"`
	NumBundles int      `json:"numBundles"`
}

// DefaultBundles is the single full-range bundle.
func DefaultBundles() *BundlesData {
	b, _ := NormalizeBundles(nil)
	return b
}

// NormalizeBundles completes a new namespace's "bundles": boundaries as
// given (validated), or numBundles even bundles, or bundle.DefaultCount
// (4, Pulsar's defaultNumberOfNamespaceBundles) when unset. A bad value
// is ErrInvalidName's sibling: an error wrapping bundle.ErrInvalid.
func NormalizeBundles(in *BundlesData) (*BundlesData, error) {
	var bs bundle.Bundles
	var err error
	if in == nil {
		bs, err = bundle.Even(bundle.DefaultCount)
	} else {
		bs, err = bundle.FromData(in.Boundaries, in.NumBundles)
	}
	if err != nil {
		return nil, err
	}
	js, _ := json.Marshal(bs)
	out := &BundlesData{}
	err = json.Unmarshal(js, out)
	return out, err
}

// RetentionPolicies keeps acknowledged data for a time and/or size
// (-1: unlimited, 0: none).
type RetentionPolicies struct {
	RetentionTimeInMinutes int   `json:"retentionTimeInMinutes"`
	RetentionSizeInMB      int64 `json:"retentionSizeInMB"`
}

// Validate refuses limits below -1, minutes above an int32 (Pulsar's
// type) and sizes whose bytes overflow an int64.
func (r RetentionPolicies) Validate() error {
	if r.RetentionTimeInMinutes < -1 || r.RetentionSizeInMB < -1 {
		return errors.New("retention limits must be >= -1")
	}
	if r.RetentionTimeInMinutes > MaxInt32Value {
		return fmt.Errorf("retentionTimeInMinutes %d is above %d", r.RetentionTimeInMinutes, MaxInt32Value)
	}
	if r.RetentionSizeInMB > math.MaxInt64>>20 {
		return fmt.Errorf("retentionSizeInMB %d overflows a byte count", r.RetentionSizeInMB)
	}
	return nil
}

// Backlog quota policies (what happens when a quota is exceeded).
const (
	// QuotaHold keeps new sends until the backlog is under the limit and
	// refuses new producers.
	QuotaHold = "producer_request_hold"
	// QuotaException disconnects the producer and refuses it.
	QuotaException = "producer_exception"
	// QuotaEviction skips entries of the slowest subscription.
	QuotaEviction = "consumer_backlog_eviction"
)

// Backlog quota types (the keys of Policies.BacklogQuotaMap).
const (
	// QuotaStorage bounds the backlog in bytes (LimitSize).
	QuotaStorage = "destination_storage"
	// QuotaMessageAge bounds the age of the oldest unacknowledged message
	// in seconds (LimitTime).
	QuotaMessageAge = "message_age"
)

// BacklogQuota bounds a topic's backlog (the largest subscription
// backlog) by size in bytes and/or age in seconds.
type BacklogQuota struct {
	LimitSize int64  `json:"limitSize"`
	LimitTime int64  `json:"limitTime"`
	Policy    string `json:"policy"`
}

// ParseBacklogQuota accepts pulsaradmin's {"limitSize","limitTime",
// "policy"} and the older {"limit":"N","policy"} (limit as a number or a
// quoted string).
func ParseBacklogQuota(body []byte) (BacklogQuota, error) {
	var raw struct {
		Limit     json.RawMessage `json:"limit"`
		LimitSize json.RawMessage `json:"limitSize"`
		LimitTime json.RawMessage `json:"limitTime"`
		Policy    string          `json:"policy"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return BacklogQuota{}, err
	}
	num := func(m json.RawMessage) (int64, error) {
		s := strings.Trim(strings.TrimSpace(string(m)), `"`)
		if s == "" || s == "null" {
			return 0, nil
		}
		return strconv.ParseInt(s, 10, 64)
	}
	var q BacklogQuota
	var err error
	if q.LimitSize, err = num(raw.LimitSize); err != nil {
		return q, err
	}
	if q.LimitSize == 0 {
		if q.LimitSize, err = num(raw.Limit); err != nil {
			return q, err
		}
	}
	if q.LimitTime, err = num(raw.LimitTime); err != nil {
		return q, err
	}
	if q.LimitSize < -1 {
		return q, fmt.Errorf("limitSize %d must be >= -1", q.LimitSize)
	}
	if q.LimitTime < -1 || q.LimitTime > MaxInt32Value {
		return q, fmt.Errorf("limitTime %d must be between -1 and %d seconds", q.LimitTime, MaxInt32Value)
	}
	switch raw.Policy {
	case QuotaHold, QuotaException, QuotaEviction:
		q.Policy = raw.Policy
	default:
		return q, errors.New("unknown backlog quota policy " + strconv.Quote(raw.Policy))
	}
	return q, nil
}

// AutoTopicCreation overrides the broker's auto topic creation for a
// namespace.
type AutoTopicCreation struct {
	Allow                bool   `json:"allowAutoTopicCreation"`
	TopicType            string `json:"topicType"`
	DefaultNumPartitions *int   `json:"defaultNumPartitions,omitempty"`
}

// Normalize checks the override as Pulsar's validateOverride does (an
// override that disallows creation is not checked) and fills the default
// topic type. An error's text is Pulsar's detail.
func (a *AutoTopicCreation) Normalize() error {
	if a.TopicType == "" {
		a.TopicType = "non-partitioned" // Magnetar's default for an absent type
	}
	if !a.Allow {
		return nil
	}
	switch a.TopicType {
	case "non-partitioned":
		if a.DefaultNumPartitions != nil {
			//lint:ignore ST1005 Pulsar's wording, shown to admin clients
			return errors.New("[defaultNumPartitions] is not allowed to be set when the type is non-partition.")
		}
	case "partitioned":
		if a.DefaultNumPartitions == nil {
			//lint:ignore ST1005 Pulsar's wording, shown to admin clients
			return errors.New("[defaultNumPartitions] cannot be null when the type is partitioned.")
		}
		if *a.DefaultNumPartitions < 1 {
			//lint:ignore ST1005 Pulsar's wording, shown to admin clients
			return errors.New("[defaultNumPartitions] cannot be less than 1 for partition type.")
		}
	default:
		//lint:ignore ST1005 Pulsar's wording, shown to admin clients
		return fmt.Errorf("Unknown topic type [%s]", a.TopicType)
	}
	return nil
}

// TenantInfo is a tenant's registered configuration, as in Pulsar's REST
// API.
type TenantInfo struct {
	AdminRoles      []string `json:"adminRoles"`
	AllowedClusters []string `json:"allowedClusters"`
}

// ValidName reports whether s is a legal tenant or namespace name.
func ValidName(s string) bool {
	if s == "" || len(s) > 255 || s == "." || s == ".." {
		return false
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '_', c == '.', c == '=', c == ':':
		default:
			return false
		}
	}
	return true
}
