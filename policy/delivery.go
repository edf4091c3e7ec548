package policy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Delivery and admission policies: delayed delivery, the maximum
// message size, subscriptions per topic, auto subscription creation,
// and (namespace only) topics per namespace. Each is set at topic level (TopicDelivery, under Pulsar's
// TopicPolicies names) and, except the message size, at namespace level
// (NamespaceDelivery, under Pulsar's Policies names); Resolve takes the
// most specific layer, else the broker's Defaults.

// DelayedDeliveryPolicies is Pulsar's DelayedDeliveryPolicies: whether
// messages with a deliverAt time are held until then (active), the
// tick of the delayed-delivery timer in milliseconds, and the longest
// delay a producer may ask for (0: no limit).
type DelayedDeliveryPolicies struct {
	TickTime                 int64 `json:"tickTime"`
	Active                   bool  `json:"active"`
	MaxDeliveryDelayInMillis int64 `json:"maxDeliveryDelayInMillis"`
}

// delayedDeliveryJSON is DelayedDeliveryPolicies on the wire: Pulsar's
// maxDeliveryDelayInMillis, and maxDelayInMillis, the name pulsaradmin
// (pulsar-client-go) sends and reads for the same value.
type delayedDeliveryJSON struct {
	TickTime                 int64  `json:"tickTime"`
	Active                   bool   `json:"active"`
	MaxDeliveryDelayInMillis int64  `json:"maxDeliveryDelayInMillis"`
	MaxDelayInMillis         *int64 `json:"maxDelayInMillis,omitempty"`
}

// MarshalJSON writes both names of the maximum delay.
func (d DelayedDeliveryPolicies) MarshalJSON() ([]byte, error) {
	v := d.MaxDeliveryDelayInMillis
	return json.Marshal(delayedDeliveryJSON{TickTime: d.TickTime, Active: d.Active, MaxDeliveryDelayInMillis: v, MaxDelayInMillis: &v})
}

// UnmarshalJSON reads the maximum delay under either name (Pulsar's
// when both are given and differ, unless it is 0).
func (d *DelayedDeliveryPolicies) UnmarshalJSON(b []byte) error {
	var w delayedDeliveryJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*d = DelayedDeliveryPolicies{TickTime: w.TickTime, Active: w.Active, MaxDeliveryDelayInMillis: w.MaxDeliveryDelayInMillis}
	if d.MaxDeliveryDelayInMillis == 0 && w.MaxDelayInMillis != nil {
		d.MaxDeliveryDelayInMillis = *w.MaxDelayInMillis
	}
	return nil
}

// Validate refuses a negative tick or maximum delay.
func (d *DelayedDeliveryPolicies) Validate() error {
	if d.TickTime < 0 {
		return fmt.Errorf("tickTime %d must be >= 0", d.TickTime)
	}
	if d.MaxDeliveryDelayInMillis < 0 {
		return fmt.Errorf("maxDeliveryDelayInMillis %d must be >= 0", d.MaxDeliveryDelayInMillis)
	}
	return nil
}

// AutoSubscriptionCreation is Pulsar's AutoSubscriptionCreationOverride.
type AutoSubscriptionCreation struct {
	Allow bool `json:"allowAutoSubscriptionCreation"`
}

// NamespaceDelivery are the namespace's delivery and admission
// policies, embedded (flattened) into Policies.
type NamespaceDelivery struct {
	DelayedDelivery          *DelayedDeliveryPolicies  `json:"delayed_delivery_policies,omitempty"`
	AutoSubscriptionCreation *AutoSubscriptionCreation `json:"autoSubscriptionCreationOverride,omitempty"`
	MaxSubscriptionsPerTopic *int                      `json:"max_subscriptions_per_topic,omitempty"`
	// MaxTopicsPerNamespace bounds the topics of the namespace, a
	// partitioned topic counting its partitions (0: unlimited).
	MaxTopicsPerNamespace *int `json:"max_topics_per_namespace,omitempty"`
	// DeduplicationSnapshotIntervalSeconds is how often a deduplicating
	// topic snapshots its producers' sequence ids (0 or less: no timed
	// snapshots).
	DeduplicationSnapshotIntervalSeconds *int `json:"deduplicationSnapshotIntervalSeconds,omitempty"`
	// maxMessageSize carries a topic layer's maxMessageSize through
	// Resolve (never stored: Pulsar has no namespace value).
	maxMessageSize *int
}

// TopicDelivery are the topic-level counterparts, embedded into
// TopicPolicies; SchemaValidationEnforced and CompactionThreshold stand
// for the namespace's MessagingPolicies values.
type TopicDelivery struct {
	DelayedDelivery          *DelayedDeliveryPolicies  `json:"delayedDelivery,omitempty"`
	AutoSubscriptionCreation *AutoSubscriptionCreation `json:"autoSubscriptionCreationOverride,omitempty"`
	MaxSubscriptionsPerTopic *int                      `json:"maxSubscriptionsPerTopic,omitempty"`
	// MaxMessageSize refuses larger messages on publish (0: the broker's
	// maxMessageSize only); Pulsar has no namespace value.
	MaxMessageSize           *int   `json:"maxMessageSize,omitempty"`
	SchemaValidationEnforced *bool  `json:"schemaValidationEnforced,omitempty"`
	CompactionThreshold      *int64 `json:"compactionThreshold,omitempty"`
	// DeduplicationSnapshotIntervalSeconds overrides the namespace's.
	DeduplicationSnapshotIntervalSeconds *int `json:"deduplicationSnapshotIntervalSeconds,omitempty"`
}

func (d TopicDelivery) empty() bool { return d == TopicDelivery{} }

// DeliveryDefaults are the broker's values of these policies, embedded
// into Defaults. The zero value is Pulsar's default except where a field
// says otherwise.
type DeliveryDefaults struct {
	// DelayedDelivery: delayedDeliveryEnabled (DelayedDeliveryDisabled
	// inverts it, so the zero value is enabled), ...TickTimeMillis,
	// ...MaxDelayInMillis.
	DelayedDeliveryDisabled bool
	DelayedDeliveryTick     int64
	DelayedDeliveryMaxDelay int64
	// DisableAutoSubscriptionCreation is !allowAutoSubscriptionCreation.
	DisableAutoSubscriptionCreation bool
	// MaxSubscriptionsPerTopic, MaxTopicsPerNamespace (0: unlimited).
	MaxSubscriptionsPerTopic, MaxTopicsPerNamespace int
	// SchemaValidationEnforced is isSchemaValidationEnforced.
	SchemaValidationEnforced bool
	// CompactionThreshold is brokerServiceCompactionThresholdInBytes.
	CompactionThreshold int64
	// MaxMessageSize is the broker's maxMessageSize (the applied value
	// of a topic that sets none).
	MaxMessageSize int
	// DedupSnapshotIntervalSeconds is
	// brokerDeduplicationSnapshotIntervalSeconds (0 or less: no timed
	// snapshots; Pulsar's default is 120, the zero value is not).
	DedupSnapshotIntervalSeconds int
	// DedupEntriesInterval is brokerDeduplicationEntriesInterval: a
	// deduplication snapshot every this many stored entries (0 or less:
	// after every entry; Pulsar's default is 1000). Not a policy: the
	// broker's value only (package dedupsnap).
	DedupEntriesInterval int
	// AutoTopicPartitioned is allowAutoTopicCreationType partitioned
	// (the zero value is Pulsar's default, non-partitioned): topics
	// auto-created where no namespace override applies are partitioned,
	// with DefaultNumPartitions (defaultNumPartitions; less than 1: 1,
	// Pulsar's default, which refuses such values) partitions.
	AutoTopicPartitioned bool
	DefaultNumPartitions int
	// KeySharedDisabled is !subscriptionKeySharedEnable: a Key_Shared
	// SUBSCRIBE is refused (package enforcement). Not a policy: the
	// broker's value only.
	KeySharedDisabled bool
	// SubscriptionTypesOff are the subscription types missing from
	// subscriptionTypesEnabled (SubscriptionTypesOff parses it), so the
	// zero value is Pulsar's default: every type. Not a policy: the
	// broker's value only.
	SubscriptionTypesOff SubscriptionTypes
}

// SubscriptionTypes is a set of subscription types, a bit per type
// numbered as the protocol numbers them (1<<0 Exclusive, 1<<1 Shared,
// 1<<2 Failover, 1<<3 Key_Shared).
type SubscriptionTypes uint8

// subscriptionTypeNames are the types by protocol number, spelt as
// Pulsar's SubType enum.
var subscriptionTypeNames = [...]string{"Exclusive", "Shared", "Failover", "Key_Shared"}

// AllSubscriptionTypes is every type.
const AllSubscriptionTypes SubscriptionTypes = 1<<len(subscriptionTypeNames) - 1

// SubscriptionTypesOff reads subscriptionTypesEnabled (a comma-separated
// list) as Pulsar does and returns the types it leaves out: each name
// spelt exactly as the SubType enum (surrounding spaces aside), other
// names ignored. A list naming no valid type is Pulsar's null set of
// enabled types, which admits no subscribe at all.
func SubscriptionTypesOff(list string) SubscriptionTypes {
	var on SubscriptionTypes
	for _, name := range strings.Split(list, ",") {
		if i := slices.Index(subscriptionTypeNames[:], strings.TrimSpace(name)); i >= 0 {
			on |= 1 << i
		}
	}
	return AllSubscriptionTypes &^ on
}

// Has reports whether the protocol's subscription type typ is in s.
func (s SubscriptionTypes) Has(typ int32) bool {
	return typ >= 0 && int(typ) < len(subscriptionTypeNames) && s&(1<<typ) != 0
}

// ResolvedDelivery are the resolved values, embedded into Resolved.
type ResolvedDelivery struct {
	DelayedDelivery DelayedDeliveryPolicies
	// AutoSubscriptionCreation: SUBSCRIBE may create a durable
	// subscription that does not exist.
	AutoSubscriptionCreation bool
	// MaxSubscriptionsPerTopic (0: unlimited).
	MaxSubscriptionsPerTopic int
	// MaxMessageSize is the topic's own limit (0: none but the
	// broker's); MaxMessageSizeApplied is what ?applied answers: the
	// topic's value when it sets one, else the broker's.
	MaxMessageSize, MaxMessageSizeApplied int
	// SchemaValidationEnforced (SchemaValidationSet: a topic or
	// namespace layer set it) and CompactionThreshold (0: never).
	SchemaValidationEnforced, SchemaValidationSet bool
	CompactionThreshold                           int64
	// MaxTopicsPerNamespace (0: unlimited).
	MaxTopicsPerNamespace int
	// DedupSnapshotIntervalSeconds: topic, else namespace, else broker
	// (0 or less: no timed snapshots).
	DedupSnapshotIntervalSeconds int
	// KeySharedDisabled is the broker's DeliveryDefaults.KeySharedDisabled.
	KeySharedDisabled bool
	// SubscriptionTypesOff is the broker's
	// DeliveryDefaults.SubscriptionTypesOff.
	SubscriptionTypesOff SubscriptionTypes
}

// layer is d as namespace values (for TopicPolicies.Layer).
func (d TopicDelivery) layer() (NamespaceDelivery, MessagingPolicies) {
	return NamespaceDelivery{DelayedDelivery: d.DelayedDelivery, AutoSubscriptionCreation: d.AutoSubscriptionCreation,
			MaxSubscriptionsPerTopic:             d.MaxSubscriptionsPerTopic,
			DeduplicationSnapshotIntervalSeconds: d.DeduplicationSnapshotIntervalSeconds,
			maxMessageSize:                       d.MaxMessageSize},
		MessagingPolicies{SchemaValidationEnforced: d.SchemaValidationEnforced, CompactionThreshold: d.CompactionThreshold}
}

// resolveDelivery fills r's delivery values from layers (most specific
// first) over d.
func resolveDelivery(r *Resolved, d Defaults, layers []*Policies) {
	r.DelayedDelivery = DelayedDeliveryPolicies{Active: !d.DelayedDeliveryDisabled, TickTime: d.DelayedDeliveryTick,
		MaxDeliveryDelayInMillis: d.DelayedDeliveryMaxDelay}
	r.AutoSubscriptionCreation = !d.DisableAutoSubscriptionCreation
	r.MaxSubscriptionsPerTopic = d.MaxSubscriptionsPerTopic
	r.SchemaValidationEnforced = d.SchemaValidationEnforced
	r.CompactionThreshold = d.CompactionThreshold
	r.MaxTopicsPerNamespace = d.MaxTopicsPerNamespace
	r.MaxMessageSizeApplied = d.MaxMessageSize
	r.DedupSnapshotIntervalSeconds = d.DedupSnapshotIntervalSeconds
	r.KeySharedDisabled = d.KeySharedDisabled
	r.SubscriptionTypesOff = d.SubscriptionTypesOff
	var topicSize *int
	for _, p := range layers {
		if p != nil && p.maxMessageSize != nil {
			topicSize = p.maxMessageSize
			break
		}
	}
	if topicSize != nil {
		r.MaxMessageSize, r.MaxMessageSizeApplied = *topicSize, *topicSize
	}
	var dd, asc, maxS, sv, ct, maxT, dsi bool
	for _, p := range layers {
		if p == nil {
			continue
		}
		if v := p.DelayedDelivery; !dd && v != nil {
			dd, r.DelayedDelivery = true, *v
		}
		if v := p.AutoSubscriptionCreation; !asc && v != nil {
			asc, r.AutoSubscriptionCreation = true, v.Allow
		}
		if v := p.MaxSubscriptionsPerTopic; !maxS && v != nil {
			maxS, r.MaxSubscriptionsPerTopic = true, *v
		}
		if v := p.SchemaValidationEnforced; !sv && v != nil {
			sv, r.SchemaValidationEnforced, r.SchemaValidationSet = true, *v, true
		}
		if v := p.CompactionThreshold; !ct && v != nil {
			ct, r.CompactionThreshold = true, *v
		}
		if v := p.MaxTopicsPerNamespace; !maxT && v != nil {
			maxT, r.MaxTopicsPerNamespace = true, *v
		}
		if v := p.DeduplicationSnapshotIntervalSeconds; !dsi && v != nil {
			dsi, r.DedupSnapshotIntervalSeconds = true, *v
		}
	}
}
