package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/magnetar-mq/magnetar/internal/shrink"
	"github.com/magnetar-mq/magnetar/metadata"
)

// TopicPoliciesPath is the metadata node under which topic-level
// policies live: TopicPoliciesPath/<tenant>/<ns>/<domain>/<local name>,
// one TopicPolicies JSON document per topic (a partitioned topic's
// document, under its base name, applies to every partition).
const TopicPoliciesPath = "/admin/topic-policies"

// TopicPolicies overrides a namespace's policies for one topic, with the
// field names of Pulsar's TopicPolicies. Unset (nil) fields fall back to
// the namespace, then the broker.
type TopicPolicies struct {
	BacklogQuotaMap          map[string]BacklogQuota `json:"backLogQuotaMap,omitempty"`
	RetentionPolicies        *RetentionPolicies      `json:"retentionPolicies,omitempty"`
	DeduplicationEnabled     *bool                   `json:"deduplicationEnabled,omitempty"`
	MessageTTLInSeconds      *int                    `json:"messageTTLInSeconds,omitempty"`
	MaxProducerPerTopic      *int                    `json:"maxProducerPerTopic,omitempty"`
	MaxConsumerPerTopic      *int                    `json:"maxConsumerPerTopic,omitempty"`
	InactiveTopicPolicies    *InactiveTopicPolicies  `json:"inactiveTopicPolicies,omitempty"`
	DispatchRate             *DispatchRate           `json:"dispatchRate,omitempty"`
	SubscriptionDispatchRate *DispatchRate           `json:"subscriptionDispatchRate,omitempty"`
	PublishRate              *PublishRate            `json:"publishRate,omitempty"`
	SubscribeRate            *SubscribeRate          `json:"subscribeRate,omitempty"`
	ReplicatorDispatchRate   *DispatchRate           `json:"replicatorDispatchRate,omitempty"`
	// ReplicationClusters narrows or widens the namespace's replication
	// clusters for this topic (geo-replication).
	ReplicationClusters []string `json:"replicationClusters,omitempty"`
	// OffloadPolicies overrides the namespace's tiered-storage settings
	// for this topic (checked against OffloadAllowed like the
	// namespace's).
	OffloadPolicies *OffloadPolicies `json:"offloadPolicies,omitempty"`
	// Persistence and consumers per subscription (persistence.go).
	TopicExtras
	// Delayed delivery, message size, subscriptions, schema validation,
	// compaction threshold (delivery.go).
	TopicDelivery
}

// Empty reports whether tp sets nothing.
func (tp *TopicPolicies) Empty() bool {
	if tp == nil {
		return true
	}
	return len(tp.BacklogQuotaMap) == 0 && tp.RetentionPolicies == nil && tp.DeduplicationEnabled == nil &&
		tp.MessageTTLInSeconds == nil && tp.MaxProducerPerTopic == nil && tp.MaxConsumerPerTopic == nil &&
		tp.InactiveTopicPolicies == nil && tp.DispatchRate == nil && tp.SubscriptionDispatchRate == nil &&
		tp.PublishRate == nil && tp.SubscribeRate == nil && len(tp.ReplicationClusters) == 0 &&
		tp.ReplicatorDispatchRate == nil && tp.OffloadPolicies == nil && tp.TopicExtras.empty() &&
		tp.TopicDelivery.empty()
}

// Layer returns tp as a Policies layer for Resolve (rates under
// cluster); nil for a nil tp.
func (tp *TopicPolicies) Layer(cluster string) *Policies {
	if tp == nil {
		return nil
	}
	p := &Policies{
		RetentionPolicies:     tp.RetentionPolicies,
		MessageTTLInSeconds:   tp.MessageTTLInSeconds,
		BacklogQuotaMap:       maps.Clone(tp.BacklogQuotaMap),
		DeduplicationEnabled:  tp.DeduplicationEnabled,
		MaxProducersPerTopic:  tp.MaxProducerPerTopic,
		MaxConsumersPerTopic:  tp.MaxConsumerPerTopic,
		InactiveTopicPolicies: tp.InactiveTopicPolicies,
		ReplicationClusters:   tp.ReplicationClusters,
		OffloadPolicies:       tp.OffloadPolicies,
		NamespaceExtras:       tp.TopicExtras.layer(),
		// The topic's unacked limits stand where the namespace's do.
		MaxUnackedMessagesPerConsumer:     tp.MaxUnackedMessagesOnConsumer,
		MaxUnackedMessagesPerSubscription: tp.MaxUnackedMessagesOnSubscription,
	}
	p.NamespaceDelivery, p.MessagingPolicies = tp.TopicDelivery.layer()
	if tp.PublishRate != nil {
		p.PublishMaxMessageRate = map[string]PublishRate{cluster: *tp.PublishRate}
	}
	if tp.DispatchRate != nil {
		p.TopicDispatchRate = map[string]DispatchRate{cluster: *tp.DispatchRate}
	}
	if tp.SubscriptionDispatchRate != nil {
		p.SubscriptionDispatchRate = map[string]DispatchRate{cluster: *tp.SubscriptionDispatchRate}
	}
	if tp.SubscribeRate != nil {
		p.ClusterSubscribeRate = map[string]SubscribeRate{cluster: *tp.SubscribeRate}
	}
	if tp.ReplicatorDispatchRate != nil {
		p.ReplicatorDispatchRate = map[string]DispatchRate{cluster: *tp.ReplicatorDispatchRate}
	}
	return p
}

// topicNode is the node of a topic's policies; topic is
// "<domain>/<tenant>/<ns>/<local>" with the local name escaped by the
// caller.
func topicNode(topic string) string { return TopicPoliciesPath + "/" + topic }

// TopicKey builds the key Store's topic-policy methods take.
func TopicKey(domain, tenant, ns, local string) string {
	return tenant + "/" + ns + "/" + domain + "/" + local
}

// namespaceOfKey returns "tenant/ns" of a TopicKey.
func namespaceOfKey(key string) string {
	n := 0
	for i := range len(key) {
		if key[i] == '/' {
			n++
			if n == 2 {
				return key[:i]
			}
		}
	}
	return key
}

// GetTopic returns the topic-level policies of key (a TopicKey), nil
// when the topic has none; cached like namespace policies. The result is
// shared: do not modify it.
func (s *Store) GetTopic(ctx context.Context, key string) (*TopicPolicies, error) {
	s.mu.Lock()
	tp, ok := s.mu.topics[key]
	gen := s.mu.gen
	s.mu.Unlock()
	if ok {
		return tp, nil
	}
	data, _, err := s.meta.Get(ctx, topicNode(key))
	if err != nil && !errors.Is(err, metadata.ErrNotFound) {
		return nil, err
	}
	if err == nil && len(data) > 0 {
		tp = &TopicPolicies{}
		if err := json.Unmarshal(data, tp); err != nil {
			return nil, fmt.Errorf("policy: topic policies of %s: %w", key, err)
		}
	}
	s.mu.Lock()
	if s.mu.gen == gen { // see Store.mu.gen
		s.mu.topics[key] = tp
	}
	s.mu.Unlock()
	return tp, nil
}

// CachedTopic returns the cached topic policies of key and whether they
// are cached (a cached nil: the topic has none).
func (s *Store) CachedTopic(key string) (*TopicPolicies, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tp, ok := s.mu.topics[key]
	return tp, ok
}

// UpdateTopic applies mutate to the topic-level policies of key with a
// compare-and-set (retried on conflict), then notifies the subscribers
// with the topic's namespace. A document left empty is deleted. A
// mutate error is returned as a *BadValueError.
func (s *Store) UpdateTopic(ctx context.Context, key string, mutate func(*TopicPolicies) error) error {
	node := topicNode(key)
	for range 10 {
		data, v, err := s.meta.Get(ctx, node)
		switch {
		case errors.Is(err, metadata.ErrNotFound):
			v = metadata.NotExists
		case err != nil:
			return err
		}
		tp := &TopicPolicies{}
		if len(data) > 0 {
			if err := json.Unmarshal(data, tp); err != nil {
				return err
			}
		}
		if err := mutate(tp); err != nil {
			return &BadValueError{err}
		}
		if tp.Empty() {
			if v != metadata.NotExists {
				err = s.meta.Delete(ctx, node, v)
			}
		} else {
			out, _ := json.Marshal(tp)
			_, err = s.meta.Put(ctx, node, out, v)
		}
		if errors.Is(err, metadata.ErrBadVersion) || errors.Is(err, metadata.ErrExists) {
			continue
		}
		if err != nil && !errors.Is(err, metadata.ErrNotFound) {
			return err
		}
		s.mu.Lock()
		s.forgetLocked(key)
		s.mu.gen++
		s.mu.Unlock()
		s.notify(namespaceOfKey(key))
		return nil
	}
	return errors.New("policy: topic policies update kept conflicting")
}

// ForgetTopic drops the cached topic-level policies of key (a topic this
// broker no longer has loaded); the next GetTopic reads them again.
func (s *Store) ForgetTopic(key string) {
	s.mu.Lock()
	s.forgetLocked(key)
	s.mu.Unlock()
}

// forgetLocked drops key from the topic cache (s.mu held), rebuilding
// the map once most of it was dropped (internal/shrink).
func (s *Store) forgetLocked(key string) {
	if _, ok := s.mu.topics[key]; !ok {
		return // not cached (a refresh emptied the cache): nothing deleted
	}
	delete(s.mu.topics, key)
	if s.mu.shrink.Deleted(len(s.mu.topics)) {
		s.mu.topics = shrink.Rebuild(s.mu.topics)
	}
}

// dropTopicsLocked empties the topic cache (s.mu held) with a new map:
// clear would keep the room of the largest set of topics cached between
// two refreshes.
func (s *Store) dropTopicsLocked() {
	s.mu.topics = make(map[string]*TopicPolicies)
	s.mu.shrink = shrink.Tracker{}
}

// DeleteTopic removes the topic-level policies of key (a deleted topic).
func (s *Store) DeleteTopic(ctx context.Context, key string) error {
	err := s.meta.Delete(ctx, topicNode(key), metadata.AnyVersion)
	if err != nil && !errors.Is(err, metadata.ErrNotFound) {
		return err
	}
	s.mu.Lock()
	s.forgetLocked(key)
	s.mu.gen++
	s.mu.Unlock()
	return nil
}
