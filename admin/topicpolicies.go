package admin

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/topicreg"
)

// registerTopicPolicyRoutes installs the topic-level policy endpoints
// (/admin/v2/{domain}/{tenant}/{ns}/{topic}/<name>): GET answers the
// topic's own value (204 No Content when unset) or, with ?applied=true, the value
// in force (topic, else namespace, else broker default); POST sets it;
// DELETE removes it. A partition's policies are its partitioned topic's.
func (a *API) registerTopicPolicyRoutes(rt routeTable) {
	policyRoutes(rt, "/admin/v2/{domain}/{tenant}/{ns}/{topic}/", a.topicPolicies(), a.getTopicPolicy, a.updateTopicPolicy)
}

// topicPolicies are the topic-level policy values, each with its value
// in force; messageTTL also takes its value as ?messageTTL=N, as the
// admin clients send it.
func (a *API) topicPolicies() []policyField[policy.TopicPolicies] {
	type T = policy.TopicPolicies
	type R = policy.Resolved
	return slices.Concat([]policyField[T]{
		optional("retention", func(t *T) **policy.RetentionPolicies { return &t.RetentionPolicies }, retentionValue).inForce(func(r *R) any {
			if r.Retention == nil {
				return policy.RetentionPolicies{}
			}
			return r.Retention
		}),
		optional("messageTTL", func(t *T) **int { return &t.MessageTTLInSeconds }, count("messageTTL")).inForce(func(r *R) any { return r.MessageTTLSeconds }),
		optional("deduplicationEnabled", func(t *T) **bool { return &t.DeduplicationEnabled }, boolean).inForce(func(r *R) any { return r.Deduplication }),
		optional("deduplicationSnapshotInterval", func(t *T) **int { return &t.DeduplicationSnapshotIntervalSeconds }, countOr("interval must be 0 or more")).inForce(func(r *R) any { return r.DedupSnapshotIntervalSeconds }),
		// Producers and consumers.
		optional("maxProducers", func(t *T) **int { return &t.MaxProducerPerTopic }, count("")).inForce(func(r *R) any { return r.MaxProducers }),
		optional("maxConsumers", func(t *T) **int { return &t.MaxConsumerPerTopic }, count("")).inForce(func(r *R) any { return r.MaxConsumers }),
		optional("maxConsumersPerSubscription", func(t *T) **int { return &t.MaxConsumersPerSubscription }, count("")).inForce(func(r *R) any { return r.MaxConsumersPerSubscription }),
		optional("maxUnackedMessagesOnConsumer", func(t *T) **int { return &t.MaxUnackedMessagesOnConsumer }, count("")).inForce(func(r *R) any { return r.MaxUnackedPerConsumer }),
		optional("maxUnackedMessagesOnSubscription", func(t *T) **int { return &t.MaxUnackedMessagesOnSubscription }, count("")).inForce(func(r *R) any { return r.MaxUnackedPerSubscription }),
		// Rates.
		optional("publishRate", func(t *T) **policy.PublishRate { return &t.PublishRate }, publishRate).inForce(func(r *R) any { return r.PublishRate }),
		optional("dispatchRate", func(t *T) **policy.DispatchRate { return &t.DispatchRate }, dispatchRate).inForce(func(r *R) any { return r.DispatchRate }),
		optional("subscriptionDispatchRate", func(t *T) **policy.DispatchRate { return &t.SubscriptionDispatchRate }, dispatchRate).inForce(func(r *R) any { return r.SubscriptionDispatchRate }),
		optional("replicatorDispatchRate", func(t *T) **policy.DispatchRate { return &t.ReplicatorDispatchRate }, dispatchRate).inForce(func(r *R) any { return r.ReplicatorDispatchRate }),
		optional("subscribeRate", func(t *T) **policy.SubscribeRate { return &t.SubscribeRate }, subscribeRate).inForce(func(r *R) any { return r.SubscribeRate }),
		// Storage: null persistence in force means the broker's
		// managedLedgerDefault* values apply; offload policies take the
		// namespace's checks.
		optional("persistence", func(t *T) **policy.PersistencePolicies { return &t.Persistence }, a.persistenceValue).inForce(func(r *R) any { return r.Persistence }),
		optional("offloadPolicies", func(t *T) **policy.OffloadPolicies { return &t.OffloadPolicies }, a.offloadValue).inForce(func(r *R) any { return r.Offload }),
		optional("inactiveTopicPolicies", func(t *T) **policy.InactiveTopicPolicies { return &t.InactiveTopicPolicies }, inactiveTopics).inForce(func(r *R) any { return r.InactiveTopic }),
		// Delivery and admission (policy/delivery.go; enforced by
		// package enforcement, the schema registry and the compactor).
		optional("delayedDelivery", func(t *T) **policy.DelayedDeliveryPolicies { return &t.DelayedDelivery }, delayedDelivery).inForce(func(r *R) any { return r.DelayedDelivery }),
		optional("maxMessageSize", func(t *T) **int { return &t.MaxMessageSize }, a.maxMessageSize).inForce(func(r *R) any { return r.MaxMessageSizeApplied }),
		optional("maxSubscriptionsPerTopic", func(t *T) **int { return &t.MaxSubscriptionsPerTopic }, count("")).inForce(func(r *R) any { return r.MaxSubscriptionsPerTopic }),
		optional("autoSubscriptionCreation", func(t *T) **policy.AutoSubscriptionCreation { return &t.AutoSubscriptionCreation }, autoSubscriptionCreation).inForce(func(r *R) any {
			return policy.AutoSubscriptionCreation{Allow: r.AutoSubscriptionCreation}
		}),
		optional("schemaValidationEnforced", func(t *T) **bool { return &t.SchemaValidationEnforced }, boolean).inForce(func(r *R) any { return r.SchemaValidationEnforced }),
		optional("compactionThreshold", func(t *T) **int64 { return &t.CompactionThreshold }, atLeast("compactionThreshold", 0)).inForce(func(r *R) any { return r.CompactionThreshold }),
	}, backlogQuotas(func(t *T) *map[string]policy.BacklogQuota { return &t.BacklogQuotaMap }))
}

// maxMessageSize reads a topic's maxMessageSize: 0 up to the broker's
// maxMessageSize, as Pulsar checks it.
func (a *API) maxMessageSize(r *http.Request, body []byte) (int, error) {
	n, err := count("")(r, body)
	if err == nil && n > a.node.PolicyDefaults().MaxMessageSize {
		err = fmt.Errorf("topic-level maxMessageSize must be greater than or equal to 0 and must be smaller than that in the broker-level (%d)", a.node.PolicyDefaults().MaxMessageSize)
	}
	return n, err
}

// topicPolicyKey checks the topic of a topic-policy request (its
// namespace and the topic, or a partitioned topic of its name, must
// exist) and returns the key its policies are kept under.
func (a *API) topicPolicyKey(w http.ResponseWriter, r *http.Request, p params) (string, bool) {
	name, ok := a.topicFromParams(w, r, p)
	if !ok {
		return "", false
	}
	exists, err := a.topics.TopicExists(r.Context(), name)
	if err == nil && !exists {
		var n int
		n, err = a.topics.Partitions(r.Context(), name)
		exists = n > 0
	}
	if err == nil && !exists {
		err = fmt.Errorf("%w: %s", broker.ErrTopicNotFound, name)
	}
	var key string
	if err == nil {
		key, err = topicreg.TopicPolicyKey(name)
	}
	if err != nil {
		a.serviceError(w, err)
		return "", false
	}
	return key, true
}

func (a *API) getTopicPolicy(f policyField[policy.TopicPolicies]) handler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		key, ok := a.topicPolicyKey(w, r, p)
		if !ok {
			return
		}
		applied, _ := strconv.ParseBool(r.URL.Query().Get("applied"))
		if v, err := a.topicPolicyValue(r.Context(), f, key, nsOf(p), applied); err != nil {
			a.internalError(w, err)
		} else {
			writePolicyValue(w, v)
		}
	}
}

// topicPolicyValue is f's value in the topic's policies (kept under
// key), or, applied, the value that applies to the topic: topic >
// namespace ns > broker default.
func (a *API) topicPolicyValue(ctx context.Context, f policyField[policy.TopicPolicies], key, ns string, applied bool) (any, error) {
	tp, err := a.pol.GetTopic(ctx, key)
	if err != nil {
		return nil, err
	}
	if applied && f.applied != nil {
		np, err := a.pol.Get(ctx, ns)
		if err != nil {
			return nil, err
		}
		return f.applied(policy.Resolve(a.node.PolicyDefaults(), tp.Layer(a.node.ClusterName()), np)), nil
	}
	if tp == nil {
		tp = &policy.TopicPolicies{}
	}
	return f.get(tp), nil
}

func (a *API) updateTopicPolicy(set func(*policy.TopicPolicies, *http.Request, []byte) error) handler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		key, ok := a.topicPolicyKey(w, r, p)
		if !ok {
			return
		}
		a.updatePolicy(w, r, func(body []byte) error {
			return a.pol.UpdateTopic(r.Context(), key, func(tp *policy.TopicPolicies) error { return set(tp, r, body) })
		})
	}
}
