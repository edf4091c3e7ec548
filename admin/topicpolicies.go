package admin

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/policy"
)

// topicPolicy is one topic-level policy endpoint
// (/admin/v2/{domain}/{tenant}/{ns}/{topic}/<name>): GET returns the
// topic's own value (null when unset) or, with ?applied=true, the value
// in force (topic, else namespace, else broker default); POST sets it;
// DELETE removes it.
type topicPolicy struct {
	name    string
	get     func(*policy.TopicPolicies) any
	set     func(tp *policy.TopicPolicies, r *http.Request, body []byte) error
	clear   func(tp *policy.TopicPolicies, r *http.Request)
	applied func(res *policy.Resolved, r *http.Request) any
}

func topicPolicies() []topicPolicy {
	intField := func(field func(*policy.TopicPolicies) **int, query string) func(*policy.TopicPolicies, *http.Request, []byte) error {
		return func(tp *policy.TopicPolicies, r *http.Request, body []byte) error {
			s := strings.Trim(strings.TrimSpace(string(body)), `"`)
			if q := r.URL.Query().Get(query); query != "" && q != "" {
				s = q
			}
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return errors.New("value must be an integer")
			}
			if err := policy.Nonneg32(n); err != nil {
				return err
			}
			v := int(n)
			*field(tp) = &v
			return nil
		}
	}
	return []topicPolicy{
		{
			name: "retention",
			get:  func(tp *policy.TopicPolicies) any { return tp.RetentionPolicies },
			set: func(tp *policy.TopicPolicies, _ *http.Request, body []byte) error {
				var v policy.RetentionPolicies
				if err := json.Unmarshal(body, &v); err != nil {
					return err
				}
				if err := v.Validate(); err != nil {
					return err
				}
				tp.RetentionPolicies = &v
				return nil
			},
			clear: func(tp *policy.TopicPolicies, _ *http.Request) { tp.RetentionPolicies = nil },
			applied: func(res *policy.Resolved, _ *http.Request) any {
				if res.Retention == nil {
					return policy.RetentionPolicies{}
				}
				return res.Retention
			},
		},
		{
			name:    "messageTTL",
			get:     func(tp *policy.TopicPolicies) any { return tp.MessageTTLInSeconds },
			set:     intField(func(tp *policy.TopicPolicies) **int { return &tp.MessageTTLInSeconds }, "messageTTL"),
			clear:   func(tp *policy.TopicPolicies, _ *http.Request) { tp.MessageTTLInSeconds = nil },
			applied: func(res *policy.Resolved, _ *http.Request) any { return res.MessageTTLSeconds },
		},
		{
			name:    "maxProducers",
			get:     func(tp *policy.TopicPolicies) any { return tp.MaxProducerPerTopic },
			set:     intField(func(tp *policy.TopicPolicies) **int { return &tp.MaxProducerPerTopic }, ""),
			clear:   func(tp *policy.TopicPolicies, _ *http.Request) { tp.MaxProducerPerTopic = nil },
			applied: func(res *policy.Resolved, _ *http.Request) any { return res.MaxProducers },
		},
		{
			name:    "maxConsumers",
			get:     func(tp *policy.TopicPolicies) any { return tp.MaxConsumerPerTopic },
			set:     intField(func(tp *policy.TopicPolicies) **int { return &tp.MaxConsumerPerTopic }, ""),
			clear:   func(tp *policy.TopicPolicies, _ *http.Request) { tp.MaxConsumerPerTopic = nil },
			applied: func(res *policy.Resolved, _ *http.Request) any { return res.MaxConsumers },
		},
		{
			name: "deduplicationEnabled",
			get:  func(tp *policy.TopicPolicies) any { return tp.DeduplicationEnabled },
			set: func(tp *policy.TopicPolicies, _ *http.Request, body []byte) error {
				v, err := strconv.ParseBool(strings.Trim(strings.TrimSpace(string(body)), `"`))
				if err != nil {
					return errors.New("value must be true or false")
				}
				tp.DeduplicationEnabled = &v
				return nil
			},
			clear:   func(tp *policy.TopicPolicies, _ *http.Request) { tp.DeduplicationEnabled = nil },
			applied: func(res *policy.Resolved, _ *http.Request) any { return res.Deduplication },
		},
		{
			name: "backlogQuotaMap",
			get: func(tp *policy.TopicPolicies) any {
				if tp.BacklogQuotaMap == nil {
					return map[string]policy.BacklogQuota{}
				}
				return tp.BacklogQuotaMap
			},
			applied: func(res *policy.Resolved, _ *http.Request) any {
				if res.BacklogQuotas == nil {
					return map[string]policy.BacklogQuota{}
				}
				return res.BacklogQuotas
			},
		},
		{
			name: "backlogQuota",
			set: func(tp *policy.TopicPolicies, r *http.Request, body []byte) error {
				qt, err := quotaTypeOf(r)
				if err != nil {
					return err
				}
				q, err := policy.ParseBacklogQuota(body)
				if err != nil {
					return err
				}
				if tp.BacklogQuotaMap == nil {
					tp.BacklogQuotaMap = map[string]policy.BacklogQuota{}
				}
				tp.BacklogQuotaMap[qt] = q
				return nil
			},
			clear: func(tp *policy.TopicPolicies, r *http.Request) {
				if qt, err := quotaTypeOf(r); err == nil {
					delete(tp.BacklogQuotaMap, qt)
				}
				if len(tp.BacklogQuotaMap) == 0 {
					tp.BacklogQuotaMap = nil
				}
			},
		},
		{
			name: "publishRate",
			get:  func(tp *policy.TopicPolicies) any { return tp.PublishRate },
			set: func(tp *policy.TopicPolicies, _ *http.Request, body []byte) error {
				v, err := decodePublishRate(body)
				tp.PublishRate = &v
				return err
			},
			clear:   func(tp *policy.TopicPolicies, _ *http.Request) { tp.PublishRate = nil },
			applied: func(res *policy.Resolved, _ *http.Request) any { return res.PublishRate },
		},
		{
			name: "dispatchRate",
			get:  func(tp *policy.TopicPolicies) any { return tp.DispatchRate },
			set: func(tp *policy.TopicPolicies, _ *http.Request, body []byte) error {
				v, err := decodeDispatchRate(body)
				tp.DispatchRate = &v
				return err
			},
			clear:   func(tp *policy.TopicPolicies, _ *http.Request) { tp.DispatchRate = nil },
			applied: func(res *policy.Resolved, _ *http.Request) any { return res.DispatchRate },
		},
		{
			name: "subscriptionDispatchRate",
			get:  func(tp *policy.TopicPolicies) any { return tp.SubscriptionDispatchRate },
			set: func(tp *policy.TopicPolicies, _ *http.Request, body []byte) error {
				v, err := decodeDispatchRate(body)
				tp.SubscriptionDispatchRate = &v
				return err
			},
			clear:   func(tp *policy.TopicPolicies, _ *http.Request) { tp.SubscriptionDispatchRate = nil },
			applied: func(res *policy.Resolved, _ *http.Request) any { return res.SubscriptionDispatchRate },
		},
		{
			name: "replicatorDispatchRate",
			get:  func(tp *policy.TopicPolicies) any { return tp.ReplicatorDispatchRate },
			set: func(tp *policy.TopicPolicies, _ *http.Request, body []byte) error {
				v, err := decodeDispatchRate(body)
				tp.ReplicatorDispatchRate = &v
				return err
			},
			clear:   func(tp *policy.TopicPolicies, _ *http.Request) { tp.ReplicatorDispatchRate = nil },
			applied: func(res *policy.Resolved, _ *http.Request) any { return res.ReplicatorDispatchRate },
		},
		{
			name: "subscribeRate",
			get:  func(tp *policy.TopicPolicies) any { return tp.SubscribeRate },
			set: func(tp *policy.TopicPolicies, _ *http.Request, body []byte) error {
				v, err := decodeSubscribeRate(body)
				tp.SubscribeRate = &v
				return err
			},
			clear:   func(tp *policy.TopicPolicies, _ *http.Request) { tp.SubscribeRate = nil },
			applied: func(res *policy.Resolved, _ *http.Request) any { return res.SubscribeRate },
		},
		{
			name: "inactiveTopicPolicies",
			get:  func(tp *policy.TopicPolicies) any { return tp.InactiveTopicPolicies },
			set: func(tp *policy.TopicPolicies, _ *http.Request, body []byte) error {
				v, err := decodeInactive(body)
				tp.InactiveTopicPolicies = &v
				return err
			},
			clear:   func(tp *policy.TopicPolicies, _ *http.Request) { tp.InactiveTopicPolicies = nil },
			applied: func(res *policy.Resolved, _ *http.Request) any { return res.InactiveTopic },
		},
	}
}

// registerTopicPolicyRoutes installs the topic-level policy endpoints.
func (a *API) registerTopicPolicyRoutes(rt routeTable) {
	const tp = "/admin/v2/{domain}/{tenant}/{ns}/{topic}/"
	for _, d := range topicPolicies() {
		if d.get != nil {
			rt.Handle("GET", tp+d.name, a.getTopicPolicy(d))
		}
		if d.set != nil {
			rt.Handle("POST", tp+d.name, a.updateTopicPolicy(func(tp *policy.TopicPolicies, r *http.Request, body []byte) error {
				return d.set(tp, r, body)
			}))
			rt.Handle("DELETE", tp+d.name, a.updateTopicPolicy(func(tp *policy.TopicPolicies, r *http.Request, _ []byte) error {
				d.clear(tp, r)
				return nil
			}))
		}
	}
}

// topicPolicyTarget checks the topic of a topic-policy request (its
// namespace and the topic must exist) and returns its policy key.
func (a *API) topicPolicyTarget(w http.ResponseWriter, r *http.Request, p params) (name, key string, ok bool) {
	name, ok = a.topicFromParams(w, r, p)
	if !ok {
		return "", "", false
	}
	key, err := broker.TopicPolicyKey(name)
	if err != nil {
		writeError(w, http.StatusPreconditionFailed, err.Error())
		return "", "", false
	}
	exists, err := a.svc.TopicExists(r.Context(), name)
	if err == nil && !exists {
		var n int
		n, err = a.svc.Partitions(r.Context(), name)
		exists = n > 0
	}
	if err != nil {
		serviceError(w, err)
		return "", "", false
	}
	if !exists {
		writeError(w, http.StatusNotFound, "Topic not found")
		return "", "", false
	}
	return name, key, true
}

func (a *API) getTopicPolicy(d topicPolicy) handler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		_, key, ok := a.topicPolicyTarget(w, r, p)
		if !ok {
			return
		}
		tp, err := a.pol.GetTopic(r.Context(), key)
		if err != nil {
			internalError(w, err)
			return
		}
		if applied, _ := strconv.ParseBool(r.URL.Query().Get("applied")); applied && d.applied != nil {
			ns, err := a.pol.Get(r.Context(), p["tenant"]+"/"+p["ns"])
			if err != nil {
				internalError(w, err)
				return
			}
			res := policy.Resolve(a.svc.PolicyDefaults(), tp.Layer(a.svc.ClusterName()), ns)
			writeJSON(w, http.StatusOK, d.applied(res, r))
			return
		}
		if tp == nil {
			tp = &policy.TopicPolicies{}
		}
		writeJSON(w, http.StatusOK, d.get(tp))
	}
}

func (a *API) updateTopicPolicy(set func(*policy.TopicPolicies, *http.Request, []byte) error) handler {
	return func(w http.ResponseWriter, r *http.Request, p params) {
		_, key, ok := a.topicPolicyTarget(w, r, p)
		if !ok {
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		err = a.pol.UpdateTopic(r.Context(), key, func(tp *policy.TopicPolicies) error { return set(tp, r, body) })
		var bad *policy.BadValueError
		if errors.As(err, &bad) {
			writeError(w, http.StatusPreconditionFailed, "Invalid value: "+bad.Err.Error())
			return
		}
		if err != nil {
			serviceError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}
