package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/schema"
)

// registerPolicyRoutes installs the namespace policy endpoints
// (/admin/v2/namespaces/{tenant}/{ns}/<name>; docs/policies.md). A write
// goes through the policy store, which tells the broker before the
// request is answered: the new policy applies to loaded topics at once
// (a retention change reopens their managed ledgers).
func (a *API) registerPolicyRoutes(rt routeTable) {
	policyRoutes(rt, "/admin/v2/namespaces/{tenant}/{ns}/", a.namespacePolicies(),
		func(f policyField[policy.Policies]) handler { return a.getPolicy(f.get) }, a.setPolicy)
	a.registerAntiAffinityRoutes(rt)
}

// namespacePolicies are the namespace policy values. Rates are kept per
// cluster as in Pulsar; their endpoints read and write this broker's
// cluster's value.
func (a *API) namespacePolicies() []policyField[policy.Policies] {
	type P = policy.Policies
	cluster := a.node.ClusterName()
	put := []string{http.MethodPut, http.MethodPost}
	fields := []policyField[P]{
		optional("retention", func(p *P) **policy.RetentionPolicies { return &p.RetentionPolicies }, retentionValue),
		optional("messageTTL", func(p *P) **int { return &p.MessageTTLInSeconds }, countOr("Invalid value for message TTL")),
		optional("maxProducersPerTopic", func(p *P) **int { return &p.MaxProducersPerTopic }, countOr("maxProducersPerTopic must be 0 or more")),
		optional("maxConsumersPerTopic", func(p *P) **int { return &p.MaxConsumersPerTopic }, countOr("maxConsumersPerTopic must be 0 or more")),
		optional("maxConsumersPerSubscription", func(p *P) **int { return &p.MaxConsumersPerSubscription }, countOr("maxConsumersPerSubscription must be 0 or more")),
		optional("maxUnackedMessagesPerConsumer", func(p *P) **int { return &p.MaxUnackedMessagesPerConsumer }, countOr("maxUnackedMessagesPerConsumer must be 0 or more")),
		optional("maxUnackedMessagesPerSubscription", func(p *P) **int { return &p.MaxUnackedMessagesPerSubscription }, countOr("maxUnackedMessagesPerSubscription must be 0 or more")),
		optional("subscriptionExpirationTime", func(p *P) **int { return &p.SubscriptionExpirationTimeMinutes }, countOr("Invalid value for subscription expiration time")),
		optional("deduplication", func(p *P) **bool { return &p.DeduplicationEnabled }, boolean),
		optional("autoTopicCreation", func(p *P) **policy.AutoTopicCreation { return &p.AutoTopicCreationOverride }, a.autoTopicCreation),
		optional("persistence", func(p *P) **policy.PersistencePolicies { return &p.Persistence }, a.persistenceValue),
		optional("inactiveTopicPolicies", func(p *P) **policy.InactiveTopicPolicies { return &p.InactiveTopicPolicies }, inactiveTopics),
		perCluster("publishRate", cluster, func(p *P) *map[string]policy.PublishRate { return &p.PublishMaxMessageRate }, publishRate),
		perCluster("dispatchRate", cluster, func(p *P) *map[string]policy.DispatchRate { return &p.TopicDispatchRate }, dispatchRate),
		perCluster("subscriptionDispatchRate", cluster, func(p *P) *map[string]policy.DispatchRate { return &p.SubscriptionDispatchRate }, dispatchRate),
		perCluster("replicatorDispatchRate", cluster, func(p *P) *map[string]policy.DispatchRate { return &p.ReplicatorDispatchRate }, dispatchRate),
		perCluster("subscribeRate", cluster, func(p *P) *map[string]policy.SubscribeRate { return &p.ClusterSubscribeRate }, subscribeRate),
		// Schema and compaction policies (Pulsar's paths and bodies).
		strategy("schemaCompatibilityStrategy", func(p *P) *string { return &p.SchemaCompatibilityStrategy }, "UNDEFINED"),
		strategy("schemaAutoUpdateCompatibilityStrategy", func(p *P) *string { return &p.SchemaAutoUpdateCompatibilityStrategy }, "Full"),
		optionalOr("isAllowAutoUpdateSchema", func(p *P) **bool { return &p.IsAllowAutoUpdateSchema }, boolean, true).methods(put...),
		optionalOr("schemaValidationEnforced", func(p *P) **bool { return &p.SchemaValidationEnforced }, boolean, false).methods(put...),
		optional("compactionThreshold", func(p *P) **int64 { return &p.CompactionThreshold }, atLeastOr("compactionThreshold", 0, "compactionThreshold must be 0 or more")).methods(put...),
		// Delivery and admission (policy/delivery.go).
		optional("delayedDelivery", func(p *P) **policy.DelayedDeliveryPolicies { return &p.DelayedDelivery }, delayedDelivery),
		optional("autoSubscriptionCreation", func(p *P) **policy.AutoSubscriptionCreation { return &p.AutoSubscriptionCreation }, autoSubscriptionCreation),
		optional("maxSubscriptionsPerTopic", func(p *P) **int { return &p.MaxSubscriptionsPerTopic }, countOr("maxSubscriptionsPerTopic must be 0 or more")),
		optional("maxTopicsPerNamespace", func(p *P) **int { return &p.MaxTopicsPerNamespace }, countOr("maxTopicsPerNamespace must be 0 or more")),
		// Pulsar's NamespacesBase words the refusal differently from its
		// topic-level one.
		optional("deduplicationSnapshotInterval", func(p *P) **int { return &p.DeduplicationSnapshotIntervalSeconds }, countOr("interval must be greater than or equal to 0")),
		// Tiered storage: the policies object and Pulsar's older separate
		// fields (-1 disables a threshold; a negative lag never deletes
		// the bookie copy).
		func() policyField[P] {
			f := optional("offloadPolicies", func(p *P) **policy.OffloadPolicies { return &p.OffloadPolicies }, a.offloadValue)
			f.deletes = []string{"removeOffloadPolicies"}
			return f
		}(),
		optionalOr("offloadThreshold", func(p *P) **int64 { return &p.OffloadThreshold }, atLeast("offloadThreshold", -1), -1).methods(put...),
		optionalOr("offloadThresholdInSeconds", func(p *P) **int64 { return &p.OffloadThresholdInSeconds }, atLeastOr("offloadThresholdInSeconds", -1, "Invalid value for offloadThresholdInSecond"), -1).methods(put...),
		optional("offloadDeletionLagMs", func(p *P) **int64 { return &p.OffloadDeletionLagMs }, atLeast("offloadDeletionLagMs", -1<<63)).methods(put...),
		// properties: PUT merges the body's keys into the namespace's
		// labels, GET answers them all ({} when none), DELETE removes all.
		{name: "properties", writes: []string{http.MethodPut},
			get: func(p *P) any {
				if p.Properties == nil {
					return map[string]string{}
				}
				return p.Properties
			},
			set: func(p *P, _ *http.Request, body []byte) error {
				var m map[string]string
				if err := decodeRequired(body, &m); err != nil {
					return err
				}
				for k := range m {
					if k == "" {
						return fmt.Errorf("a property needs a key")
					}
				}
				if p.Properties == nil {
					p.Properties = map[string]string{}
				}
				maps.Copy(p.Properties, m)
				return nil
			},
			clear: func(p *P, _ *http.Request) error { p.Properties = nil; return nil }},
		// encryptionRequired has no DELETE in Pulsar: false turns it off.
		{name: "encryptionRequired",
			get: func(p *P) any { return p.EncryptionRequired },
			set: func(p *P, r *http.Request, body []byte) (err error) {
				p.EncryptionRequired, err = boolean(r, body)
				return err
			}},
	}
	return append(fields, backlogQuotas(func(p *P) *map[string]policy.BacklogQuota { return &p.BacklogQuotaMap })...)
}

// strategy is a schema compatibility strategy kept as a name ("":
// unset, GET answers def); PUT and POST set it.
func strategy(name string, field func(*policy.Policies) *string, def string) policyField[policy.Policies] {
	return policyField[policy.Policies]{name: name, writes: []string{http.MethodPut, http.MethodPost},
		get: func(p *policy.Policies) any {
			if v := *field(p); v != "" {
				return v
			}
			return def
		},
		set: func(p *policy.Policies, _ *http.Request, body []byte) error {
			s := bareValue(body)
			if _, err := schema.ParseStrategy(s); err != nil {
				return err
			}
			*field(p) = s
			return nil
		},
		clear: func(p *policy.Policies, _ *http.Request) error { *field(p) = ""; return nil },
	}
}

// autoTopicCreation reads an AutoTopicCreation override: normalized
// (Pulsar's checks and reasons, 412; one that allows creation names its
// topic type, as Pulsar's validateOverride requires), and with no more default partitions
// than maxNumPartitionsPerPartitionedTopic (406, as Pulsar).
func (a *API) autoTopicCreation(r *http.Request, body []byte) (policy.AutoTopicCreation, error) {
	at, err := jsonValue[policy.AutoTopicCreation](nil)(r, body)
	if err != nil {
		return at, err
	}
	if at.Allow && at.TopicType == "" {
		// Pulsar checks the type as sent: absent is Java's null.
		var sent struct {
			TopicType *string `json:"topicType"`
		}
		shown := "null"
		if json.Unmarshal(body, &sent) == nil && sent.TopicType != nil {
			shown = *sent.TopicType
		}
		return at, refuse(http.StatusPreconditionFailed, "Invalid configuration for autoTopicCreationOverride. the detail is Unknown topic type [%s]", shown)
	}
	if err := at.Normalize(); err != nil {
		return at, refuse(http.StatusPreconditionFailed, "Invalid configuration for autoTopicCreationOverride. the detail is %s", err)
	}
	if limit := a.node.MaxPartitionsPerTopic(); limit > 0 && at.Allow && at.TopicType == "partitioned" && *at.DefaultNumPartitions > limit {
		return at, refuse(http.StatusNotAcceptable, "Number of partitions should be less than or equal to %d", limit)
	}
	return at, nil
}

// registerAntiAffinityRoutes installs the namespace's anti-affinity group
// (GET answers the bare name, as Pulsar) and the superusers' listing of a
// group's namespaces across tenants.
func (a *API) registerAntiAffinityRoutes(rt routeTable) {
	const path = "/admin/v2/namespaces/{tenant}/{ns}/antiAffinity"
	rt.Handle("GET", path, auth.AccessTenantAdmin, a.onNamespace(func(w http.ResponseWriter, r *http.Request, ns string) {
		p, err := a.pol.Get(r.Context(), ns)
		if err != nil {
			a.internalError(w, err)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(p.AntiAffinityGroup))
	}))
	rt.Handle("POST", path, auth.AccessTenantAdmin, a.setPolicy(func(p *policy.Policies, _ *http.Request, body []byte) error {
		g := bareValue(body)
		if g == "" {
			return errors.New("anti-affinity group name must not be empty (use DELETE to remove it)")
		}
		if len(g) > 256 || strings.ContainsAny(g, "/\n\r\t") {
			return fmt.Errorf("invalid anti-affinity group name %.100q", g)
		}
		p.AntiAffinityGroup = g
		return nil
	}))
	rt.Handle("DELETE", path, auth.AccessTenantAdmin, a.setPolicy(func(p *policy.Policies, _ *http.Request, _ []byte) error {
		p.AntiAffinityGroup = ""
		return nil
	}))
	rt.Handle("GET", "/admin/v2/namespaces/{cluster}/antiAffinity/{group}", auth.AccessSuperUser, a.httpAntiAffinityNamespaces)
}

// httpAntiAffinityNamespaces lists the namespaces of ?tenant=<tenant>
// (or ?property=, every tenant without either) whose anti-affinity group
// is {group}. The cluster must exist. Only a superuser may call it (its
// route's rule: the path names no tenant).
func (a *API) httpAntiAffinityNamespaces(w http.ResponseWriter, r *http.Request, p params) {
	ctx := r.Context()
	clusters, err := a.node.Clusters(ctx)
	if err != nil {
		a.internalError(w, err)
		return
	}
	if !slices.Contains(clusters, p["cluster"]) {
		writeError(w, http.StatusPreconditionFailed, "Cluster "+p["cluster"]+" does not exist")
		return
	}
	q := r.URL.Query()
	tenants := []string{q.Get("tenant")} // v2's name; pulsaradmin sends v1's "property"
	if tenants[0] == "" {
		tenants[0] = q.Get("property")
	}
	if tenants[0] == "" {
		if tenants, err = a.pol.Tenants(ctx); err != nil {
			a.internalError(w, err)
			return
		}
	}
	out := []string{}
	for _, t := range tenants {
		nss, err := a.pol.Namespaces(ctx, t)
		if err != nil {
			a.serviceError(w, err)
			return
		}
		for _, ns := range nss {
			pol, err := a.pol.Get(ctx, ns)
			if err != nil {
				continue // deleted meanwhile
			}
			if pol.AntiAffinityGroup == p["group"] {
				out = append(out, ns)
			}
		}
	}
	slices.Sort(out)
	writeJSON(w, http.StatusOK, out)
}

func (a *API) getPolicy(get func(*policy.Policies) any) handler {
	return a.onNamespace(func(w http.ResponseWriter, r *http.Request, ns string) {
		p, err := a.pol.Get(r.Context(), ns)
		if err != nil {
			a.internalError(w, err)
			return
		}
		writePolicyValue(w, get(p))
	})
}

func (a *API) setPolicy(set func(*policy.Policies, *http.Request, []byte) error) handler {
	return a.onNamespace(func(w http.ResponseWriter, r *http.Request, ns string) {
		a.updatePolicy(w, r, func(body []byte) error {
			return a.pol.Update(r.Context(), ns, func(p *policy.Policies) error { return set(p, r, body) })
		})
	})
}

// updatePolicy reads the body and applies update to it: 204, 412 for a
// value the update refused (policy.BadValueError), or the error's status.
func (a *API) updatePolicy(w http.ResponseWriter, r *http.Request, update func(body []byte) error) {
	body, err := io.ReadAll(r.Body) // bounded by the route's body limit
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	err = update(body)
	var ref *refusal
	if errors.As(err, &ref) { // Pulsar's own status and reason
		writeError(w, ref.status, ref.reason)
		return
	}
	var bad *policy.BadValueError
	if errors.As(err, &bad) {
		writeError(w, http.StatusPreconditionFailed, "Invalid value: "+bad.Err.Error())
		return
	}
	a.replyDone(w, err)
}
