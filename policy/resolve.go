package policy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Defaults are the broker-wide values a policy falls back to.
type Defaults struct {
	// Deduplication is the broker's brokerDeduplicationEnabled.
	Deduplication bool
	// AutoTopicCreation is the broker's allowAutoTopicCreation.
	AutoTopicCreation bool
	// MaxUnackedPerConsumer and MaxUnackedPerSubscription are the
	// broker's maxUnackedMessagesPerConsumer / ...PerSubscription (0:
	// unlimited).
	MaxUnackedPerConsumer, MaxUnackedPerSubscription int
	// Cluster selects the per-cluster rate values of a namespace.
	Cluster string
	// PublishRate is maxPublishRatePerTopicInMessages/InBytes.
	PublishRate PublishRate
	// DispatchRate is dispatchThrottlingRatePerTopicInMsg/InByte,
	// SubscriptionDispatchRate dispatchThrottlingRatePerSubscriptionInMsg/
	// InByte.
	DispatchRate, SubscriptionDispatchRate DispatchRate
	// ReplicatorDispatchRate is dispatchThrottlingRatePerReplicatorInMsg/
	// InByte.
	ReplicatorDispatchRate DispatchRate
	// SubscribeRate is subscribeThrottlingRatePerConsumer and
	// subscribeRatePeriodPerConsumerInSecond.
	SubscribeRate SubscribeRate
	// InactiveTopic is brokerDeleteInactiveTopicsEnabled, ...Mode and
	// ...MaxInactiveDurationSeconds.
	InactiveTopic InactiveTopicPolicies
	// SubscriptionExpirationMinutes is subscriptionExpirationTimeMinutes.
	SubscriptionExpirationMinutes int
	// OffloadAllowed limits where namespace and topic offload policies
	// may point (OffloadPolicies.CheckAllowed).
	OffloadAllowed OffloadAllowed
	// Delayed delivery, subscriptions, topics, message size (delivery.go).
	DeliveryDefaults
}

// Resolved is the effective policy of one topic: for every field the most
// specific layer that sets it (topic, then namespace), else the broker
// default. A topic holds its Resolved as a value it swaps whole; it is
// never modified after Resolve returns it.
type Resolved struct {
	// MessageTTLSeconds expires messages older than this (0: never).
	MessageTTLSeconds int64
	// Retention overrides the managed ledger's retention (nil: broker
	// default).
	Retention *RetentionPolicies
	// BacklogQuotas by quota type (QuotaStorage, QuotaMessageAge); nil:
	// none.
	BacklogQuotas map[string]BacklogQuota
	// Deduplication: re-sent (producer name, sequence id) are dropped.
	Deduplication bool
	// MaxProducers and MaxConsumers per topic (0: unlimited).
	MaxProducers, MaxConsumers int
	// AutoCreate allows creating the topic on first use; AutoPartitions >
	// 0 asks for a partitioned topic of that many partitions (the
	// namespace's autoTopicCreationOverride, else the broker's
	// allowAutoTopicCreationType and defaultNumPartitions).
	AutoCreate     bool
	AutoPartitions int
	// MaxUnackedPerConsumer and MaxUnackedPerSubscription stop dispatch
	// on Shared and Key_Shared subscriptions to a consumer (subscription)
	// holding that many unacknowledged messages, until acks bring it to
	// half (0: unlimited).
	MaxUnackedPerConsumer, MaxUnackedPerSubscription int
	// ReplicationClusters are the clusters the topic's messages go to
	// (the local one included); nil: only the local cluster.
	ReplicationClusters []string
	// Rate limits (zero fields: unlimited).
	PublishRate              PublishRate
	DispatchRate             DispatchRate
	SubscriptionDispatchRate DispatchRate
	SubscribeRate            SubscribeRate
	// ReplicatorDispatchRate limits each replicator (one per remote
	// cluster) on its own.
	ReplicatorDispatchRate DispatchRate
	// InactiveTopic says when the topic is deleted for inactivity.
	InactiveTopic InactiveTopicPolicies
	// SubscriptionExpirationMinutes expires idle subscriptions (0: never).
	SubscriptionExpirationMinutes int
	// Offload is the most specific offload policy with the older
	// separate fields folded into its unset thresholds and lag (nil:
	// broker defaults).
	Offload *OffloadPolicies
	// Persistence, consumers per subscription, encryption (persistence.go).
	ResolvedExtras
	// Delayed delivery, subscriptions, topics, message size (delivery.go).
	ResolvedDelivery
}

// Resolve merges layers, most specific first (nil layers are skipped),
// over d.
func Resolve(d Defaults, layers ...*Policies) *Resolved {
	r := &Resolved{Deduplication: d.Deduplication, AutoCreate: d.AutoTopicCreation,
		MaxUnackedPerConsumer: d.MaxUnackedPerConsumer, MaxUnackedPerSubscription: d.MaxUnackedPerSubscription,
		PublishRate: d.PublishRate, DispatchRate: d.DispatchRate, SubscriptionDispatchRate: d.SubscriptionDispatchRate,
		SubscribeRate: d.SubscribeRate, ReplicatorDispatchRate: d.ReplicatorDispatchRate, InactiveTopic: d.InactiveTopic, SubscriptionExpirationMinutes: d.SubscriptionExpirationMinutes}
	if d.AutoTopicPartitioned {
		r.AutoPartitions = max(d.DefaultNumPartitions, 1)
	}
	var ttl, maxP, maxC, ret, quotas, dedup, auto, unC, unS, repl, pub, disp, subDisp, replDisp, subRate, inactive, subExp, off bool
	for _, p := range layers {
		if p == nil {
			continue
		}
		if !repl && p.ReplicationClusters != nil {
			repl, r.ReplicationClusters = true, slices.Clone(p.ReplicationClusters)
		}
		if !ttl && p.MessageTTLInSeconds != nil {
			ttl, r.MessageTTLSeconds = true, int64(*p.MessageTTLInSeconds)
		}
		if !maxP && p.MaxProducersPerTopic != nil {
			maxP, r.MaxProducers = true, *p.MaxProducersPerTopic
		}
		if !maxC && p.MaxConsumersPerTopic != nil {
			maxC, r.MaxConsumers = true, *p.MaxConsumersPerTopic
		}
		if !unC && p.MaxUnackedMessagesPerConsumer != nil {
			unC, r.MaxUnackedPerConsumer = true, *p.MaxUnackedMessagesPerConsumer
		}
		if !unS && p.MaxUnackedMessagesPerSubscription != nil {
			unS, r.MaxUnackedPerSubscription = true, *p.MaxUnackedMessagesPerSubscription
		}
		if !ret && p.RetentionPolicies != nil {
			rp := *p.RetentionPolicies
			ret, r.Retention = true, &rp
		}
		if !quotas && len(p.BacklogQuotaMap) > 0 {
			quotas, r.BacklogQuotas = true, maps.Clone(p.BacklogQuotaMap)
		}
		if !dedup && p.DeduplicationEnabled != nil {
			dedup, r.Deduplication = true, *p.DeduplicationEnabled
		}
		if v, ok := clusterValue(p.PublishMaxMessageRate, d.Cluster); ok && !pub {
			pub, r.PublishRate = true, v
		}
		if v, ok := clusterValue(p.TopicDispatchRate, d.Cluster); ok && !disp {
			disp, r.DispatchRate = true, v
		}
		if v, ok := clusterValue(p.SubscriptionDispatchRate, d.Cluster); ok && !subDisp {
			subDisp, r.SubscriptionDispatchRate = true, v
		}
		if v, ok := clusterValue(p.ReplicatorDispatchRate, d.Cluster); ok && !replDisp {
			replDisp, r.ReplicatorDispatchRate = true, v
		}
		if v, ok := clusterValue(p.ClusterSubscribeRate, d.Cluster); ok && !subRate {
			subRate, r.SubscribeRate = true, v
		}
		if !inactive && p.InactiveTopicPolicies != nil {
			inactive, r.InactiveTopic = true, *p.InactiveTopicPolicies
		}
		if !subExp && p.SubscriptionExpirationTimeMinutes != nil {
			subExp, r.SubscriptionExpirationMinutes = true, *p.SubscriptionExpirationTimeMinutes
		}
		if !off && (p.OffloadPolicies != nil || p.OffloadThreshold != nil || p.OffloadThresholdInSeconds != nil || p.OffloadDeletionLagMs != nil) {
			off, r.Offload = true, foldOffload(p)
		}
		if !auto && p.AutoTopicCreationOverride != nil {
			a := p.AutoTopicCreationOverride
			auto, r.AutoCreate, r.AutoPartitions = true, a.Allow, 0
			if a.Allow && a.TopicType == "partitioned" && a.DefaultNumPartitions != nil {
				r.AutoPartitions = *a.DefaultNumPartitions
			}
		}
	}
	resolveExtras(r, layers)
	resolveDelivery(r, d, layers)
	return r
}

// SameRetention reports whether a and b retain the same data (a change
// requires reopening the topic's managed ledger).
func SameRetention(a, b *Resolved) bool {
	switch {
	case a.Retention == nil || b.Retention == nil:
		return a.Retention == b.Retention
	}
	return *a.Retention == *b.Retention
}

// foldOffload copies p's offload policies, filling unset thresholds and
// lag from the older separate fields.
func foldOffload(p *Policies) *OffloadPolicies {
	o := &OffloadPolicies{}
	if p.OffloadPolicies != nil {
		*o = *p.OffloadPolicies
	}
	if o.ThresholdBytes() == nil && p.OffloadThreshold != nil {
		v := *p.OffloadThreshold
		o.ManagedLedgerOffloadThresholdInBytes = &v
	}
	if o.ManagedLedgerOffloadThresholdInSeconds == nil && p.OffloadThresholdInSeconds != nil {
		v := *p.OffloadThresholdInSeconds
		o.ManagedLedgerOffloadThresholdInSeconds = &v
	}
	if o.ManagedLedgerOffloadDeletionLagInMillis == nil && p.OffloadDeletionLagMs != nil {
		v := *p.OffloadDeletionLagMs
		o.ManagedLedgerOffloadDeletionLagInMillis = &v
	}
	return o
}

// ResolveTopic returns the effective policy of the topic whose
// topic-level policies are under key (TopicKey) in namespace ns: its
// topic layer (rates of d.Cluster) over the namespace's over d, both
// read through the cache. A layer that cannot be read is skipped and its
// error returned beside the result, which is never nil.
func (s *Store) ResolveTopic(ctx context.Context, d Defaults, ns, key string) (*Resolved, error) {
	p, nsErr := s.Get(ctx, ns)
	if nsErr != nil {
		p, nsErr = nil, fmt.Errorf("policy: namespace %s: %w", ns, nsErr)
	}
	tp, tpErr := s.GetTopic(ctx, key)
	if tpErr != nil {
		tp, tpErr = nil, fmt.Errorf("policy: topic %s: %w", key, tpErr)
	}
	if tp == nil && nsErr == nil && tpErr == nil {
		return s.resolveShared(d, ns, p), nil
	}
	return Resolve(d, tp.Layer(d.Cluster), p), errors.Join(nsErr, tpErr)
}

// sharedResolved is what a namespace's topics without topic-level
// policies resolve to, from p and d.
type sharedResolved struct {
	p *Policies
	d Defaults
	r *Resolved
}

// sameDefaults reports whether a and b are equal, field by field
// (reflect.DeepEqual copied both into interfaces: ~3 KiB of garbage a
// topic load). TestSameDefaultsSeesEveryField fails when a field is
// added to Defaults and not here.
func sameDefaults(a, b *Defaults) bool {
	return a.Deduplication == b.Deduplication && a.AutoTopicCreation == b.AutoTopicCreation &&
		a.MaxUnackedPerConsumer == b.MaxUnackedPerConsumer &&
		a.MaxUnackedPerSubscription == b.MaxUnackedPerSubscription &&
		a.Cluster == b.Cluster && a.PublishRate == b.PublishRate &&
		a.DispatchRate == b.DispatchRate && a.SubscriptionDispatchRate == b.SubscriptionDispatchRate &&
		a.ReplicatorDispatchRate == b.ReplicatorDispatchRate && a.SubscribeRate == b.SubscribeRate &&
		a.InactiveTopic == b.InactiveTopic &&
		a.SubscriptionExpirationMinutes == b.SubscriptionExpirationMinutes &&
		slices.Equal(a.OffloadAllowed.FileSystemRoots, b.OffloadAllowed.FileSystemRoots) &&
		slices.Equal(a.OffloadAllowed.ServiceEndpoints, b.OffloadAllowed.ServiceEndpoints) &&
		slices.Equal(a.OffloadAllowed.ProfilePaths, b.OffloadAllowed.ProfilePaths) &&
		a.DeliveryDefaults == b.DeliveryDefaults
}

// maxShared bounds Store.mu.shared (namespaces); beyond it, it starts
// over.
const maxShared = 4096

// resolveShared returns Resolve(d, nil, p), the same *Resolved for every
// topic of ns while its policies (the cached document p) and d stay the
// same: a Resolved is ~400 B a loaded topic otherwise, and nobody changes
// one after Resolve.
func (s *Store) resolveShared(d Defaults, ns string, p *Policies) *Resolved {
	s.mu.Lock()
	e, ok := s.mu.shared[ns]
	s.mu.Unlock()
	if ok && e.p == p && sameDefaults(&e.d, &d) {
		return e.r
	}
	r := Resolve(d, nil, p)
	s.mu.Lock()
	if s.mu.shared == nil || len(s.mu.shared) >= maxShared {
		s.mu.shared = make(map[string]sharedResolved)
	}
	s.mu.shared[ns] = sharedResolved{p: p, d: d, r: r}
	s.mu.Unlock()
	return r
}

// SetDefaultsOverlay installs fn over the broker defaults a topic's
// policy falls back to: the broker's dynamic configuration (package
// dynconfig) changes them at run time. fn gets a copy to change; nil
// removes the overlay. Call Refresh after the overlay's values change so
// that loaded topics resolve again.
func (s *Store) SetDefaultsOverlay(fn func(*Defaults)) {
	s.mu.Lock()
	s.mu.overlay = fn
	s.mu.Unlock()
}

// OverlayDefaults returns d with the overlay (SetDefaultsOverlay)
// applied.
func (s *Store) OverlayDefaults(d Defaults) Defaults {
	s.mu.Lock()
	fn := s.mu.overlay
	s.mu.Unlock()
	if fn != nil {
		fn(&d)
	}
	return d
}
