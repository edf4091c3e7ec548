package admin

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/magnetar-mq/magnetar/policy"
)

// registerPolicyRoutes installs the namespace policy endpoints. A write
// goes through the policy store, which tells the broker before the
// request is answered: the new policy applies to loaded topics at once
// (a retention change reopens their managed ledgers).
func (a *API) registerPolicyRoutes(rt routeTable) {
	const base = "/admin/v2/namespaces/{tenant}/{ns}/"
	a.registerRatePolicyRoutes(rt)
	rt.Handle("GET", base+"retention", a.getPolicy(func(p *policy.Policies) any { return p.RetentionPolicies }))
	rt.Handle("POST", base+"retention", a.setPolicy(func(p *policy.Policies, body []byte) error {
		var r policy.RetentionPolicies
		if err := decodeRequired(body, &r); err != nil {
			return err
		}
		if err := r.Validate(); err != nil {
			return err
		}
		p.RetentionPolicies = &r
		return nil
	}))
	rt.Handle("DELETE", base+"retention", a.setPolicy(func(p *policy.Policies, _ []byte) error { p.RetentionPolicies = nil; return nil }))

	rt.Handle("GET", base+"messageTTL", a.getPolicy(func(p *policy.Policies) any { return p.MessageTTLInSeconds }))
	rt.Handle("POST", base+"messageTTL", a.setPolicy(intPolicy(func(p *policy.Policies) **int { return &p.MessageTTLInSeconds })))
	rt.Handle("DELETE", base+"messageTTL", a.setPolicy(func(p *policy.Policies, _ []byte) error { p.MessageTTLInSeconds = nil; return nil }))

	rt.Handle("GET", base+"maxProducersPerTopic", a.getPolicy(func(p *policy.Policies) any { return p.MaxProducersPerTopic }))
	rt.Handle("POST", base+"maxProducersPerTopic", a.setPolicy(intPolicy(func(p *policy.Policies) **int { return &p.MaxProducersPerTopic })))
	rt.Handle("DELETE", base+"maxProducersPerTopic", a.setPolicy(func(p *policy.Policies, _ []byte) error { p.MaxProducersPerTopic = nil; return nil }))
	rt.Handle("GET", base+"maxConsumersPerTopic", a.getPolicy(func(p *policy.Policies) any { return p.MaxConsumersPerTopic }))
	rt.Handle("POST", base+"maxConsumersPerTopic", a.setPolicy(intPolicy(func(p *policy.Policies) **int { return &p.MaxConsumersPerTopic })))
	rt.Handle("DELETE", base+"maxConsumersPerTopic", a.setPolicy(func(p *policy.Policies, _ []byte) error { p.MaxConsumersPerTopic = nil; return nil }))

	rt.Handle("GET", base+"maxUnackedMessagesPerConsumer", a.getPolicy(func(p *policy.Policies) any { return p.MaxUnackedMessagesPerConsumer }))
	rt.Handle("POST", base+"maxUnackedMessagesPerConsumer", a.setPolicy(intPolicy(func(p *policy.Policies) **int { return &p.MaxUnackedMessagesPerConsumer })))
	rt.Handle("DELETE", base+"maxUnackedMessagesPerConsumer", a.setPolicy(func(p *policy.Policies, _ []byte) error { p.MaxUnackedMessagesPerConsumer = nil; return nil }))
	rt.Handle("GET", base+"maxUnackedMessagesPerSubscription", a.getPolicy(func(p *policy.Policies) any { return p.MaxUnackedMessagesPerSubscription }))
	rt.Handle("POST", base+"maxUnackedMessagesPerSubscription", a.setPolicy(intPolicy(func(p *policy.Policies) **int { return &p.MaxUnackedMessagesPerSubscription })))
	rt.Handle("DELETE", base+"maxUnackedMessagesPerSubscription", a.setPolicy(func(p *policy.Policies, _ []byte) error { p.MaxUnackedMessagesPerSubscription = nil; return nil }))

	rt.Handle("GET", base+"deduplication", a.getPolicy(func(p *policy.Policies) any { return p.DeduplicationEnabled }))
	rt.Handle("POST", base+"deduplication", a.setPolicy(func(p *policy.Policies, body []byte) error {
		v, err := strconv.ParseBool(strings.Trim(strings.TrimSpace(string(body)), `"`))
		if err != nil {
			return err
		}
		p.DeduplicationEnabled = &v
		return nil
	}))
	rt.Handle("DELETE", base+"deduplication", a.setPolicy(func(p *policy.Policies, _ []byte) error { p.DeduplicationEnabled = nil; return nil }))

	rt.Handle("GET", base+"autoTopicCreation", a.getPolicy(func(p *policy.Policies) any { return p.AutoTopicCreationOverride }))
	rt.Handle("POST", base+"autoTopicCreation", a.setPolicy(func(p *policy.Policies, body []byte) error {
		var at policy.AutoTopicCreation
		if err := decodeRequired(body, &at); err != nil {
			return err
		}
		if err := at.Normalize(); err != nil {
			return err
		}
		if limit := a.svc.MaxPartitionsPerTopic(); limit > 0 && at.DefaultNumPartitions != nil && *at.DefaultNumPartitions > limit {
			return fmt.Errorf("defaultNumPartitions %d is above maxNumPartitionsPerPartitionedTopic %d", *at.DefaultNumPartitions, limit)
		}
		p.AutoTopicCreationOverride = &at
		return nil
	}))
	rt.Handle("DELETE", base+"autoTopicCreation", a.setPolicy(func(p *policy.Policies, _ []byte) error { p.AutoTopicCreationOverride = nil; return nil }))

	rt.Handle("GET", base+"backlogQuotaMap", a.getPolicy(func(p *policy.Policies) any {
		if p.BacklogQuotaMap == nil {
			return map[string]policy.BacklogQuota{}
		}
		return p.BacklogQuotaMap
	}))
	rt.Handle("POST", base+"backlogQuota", func(w http.ResponseWriter, r *http.Request, prm params) {
		typ, ok := quotaType(w, r)
		if !ok {
			return
		}
		a.setPolicy(func(p *policy.Policies, body []byte) error {
			q, err := policy.ParseBacklogQuota(body)
			if err != nil {
				return err
			}
			if p.BacklogQuotaMap == nil {
				p.BacklogQuotaMap = map[string]policy.BacklogQuota{}
			}
			p.BacklogQuotaMap[typ] = q
			return nil
		})(w, r, prm)
	})
	rt.Handle("DELETE", base+"backlogQuota", func(w http.ResponseWriter, r *http.Request, prm params) {
		typ, ok := quotaType(w, r)
		if !ok {
			return
		}
		a.setPolicy(func(p *policy.Policies, _ []byte) error {
			delete(p.BacklogQuotaMap, typ)
			if len(p.BacklogQuotaMap) == 0 {
				p.BacklogQuotaMap = nil
			}
			return nil
		})(w, r, prm)
	})
	a.registerMessagingPolicyRoutes(rt)
	a.registerNamespaceExtraRoutes(rt)
	// permissions and subscriptionAuthMode: package auth serves every
	// method Pulsar has for them in front of this router (auth/http.go).
}

// quotaType returns the request's backlogQuotaType (default
// destination_storage), writing a 412 for one Pulsar does not know.
func quotaType(w http.ResponseWriter, r *http.Request) (string, bool) {
	t, err := quotaTypeOf(r)
	if err != nil {
		writeError(w, http.StatusPreconditionFailed, err.Error())
		return "", false
	}
	return t, true
}

// quotaTypeOf reads the backlogQuotaType query parameter (default
// destination_storage).
func quotaTypeOf(r *http.Request) (string, error) {
	switch t := r.URL.Query().Get("backlogQuotaType"); t {
	case "":
		return policy.QuotaStorage, nil
	case policy.QuotaStorage, policy.QuotaMessageAge:
		return t, nil
	default:
		//lint:ignore ST1005 Pulsar's capitalised wording, shown to admin clients
		return "", fmt.Errorf("Invalid backlogQuotaType %.100q: must be %s or %s", t, policy.QuotaStorage, policy.QuotaMessageAge)
	}
}

func intPolicy(field func(*policy.Policies) **int) func(*policy.Policies, []byte) error {
	return func(p *policy.Policies, body []byte) error {
		n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(string(body)), `"`))
		if err != nil {
			return errors.New("body must be an integer")
		}
		if n < 0 || n > policy.MaxInt32Value {
			return fmt.Errorf("value %d must be between 0 and %d", n, policy.MaxInt32Value)
		}
		*field(p) = &n
		return nil
	}
}

func (a *API) getPolicy(get func(*policy.Policies) any) handler {
	return func(w http.ResponseWriter, r *http.Request, prm params) {
		ns, ok := a.nsFromParams(w, r, prm)
		if !ok {
			return
		}
		p, err := a.pol.Get(r.Context(), ns)
		if err != nil {
			internalError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, get(p))
	}
}

func (a *API) setPolicy(set func(*policy.Policies, []byte) error) handler {
	return func(w http.ResponseWriter, r *http.Request, prm params) {
		ns, ok := a.nsFromParams(w, r, prm)
		if !ok {
			return
		}
		body, err := io.ReadAll(r.Body) // bounded by the broker's body limit
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		err = a.pol.Update(r.Context(), ns, func(p *policy.Policies) error { return set(p, body) })
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
