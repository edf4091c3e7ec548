package admin

import (
	"encoding/json"

	"github.com/magnetar-mq/magnetar/policy"
)

// registerRatePolicyRoutes installs the namespace endpoints of the rate
// limits, inactive topic deletion and subscription expiry. Rates are
// kept per cluster as in Pulsar; these endpoints read and write this
// broker's cluster's value.
func (a *API) registerRatePolicyRoutes(rt routeTable) {
	const base = "/admin/v2/namespaces/{tenant}/{ns}/"
	cluster := a.svc.ClusterName()
	clusterRoutes(rt, a, base+"publishRate", func(p *policy.Policies) *map[string]policy.PublishRate { return &p.PublishMaxMessageRate },
		cluster, decodePublishRate)
	clusterRoutes(rt, a, base+"dispatchRate", func(p *policy.Policies) *map[string]policy.DispatchRate { return &p.TopicDispatchRate },
		cluster, decodeDispatchRate)
	clusterRoutes(rt, a, base+"subscriptionDispatchRate", func(p *policy.Policies) *map[string]policy.DispatchRate { return &p.SubscriptionDispatchRate },
		cluster, decodeDispatchRate)
	clusterRoutes(rt, a, base+"replicatorDispatchRate", func(p *policy.Policies) *map[string]policy.DispatchRate { return &p.ReplicatorDispatchRate },
		cluster, decodeDispatchRate)
	clusterRoutes(rt, a, base+"subscribeRate", func(p *policy.Policies) *map[string]policy.SubscribeRate { return &p.ClusterSubscribeRate },
		cluster, decodeSubscribeRate)

	rt.Handle("GET", base+"inactiveTopicPolicies", a.getPolicy(func(p *policy.Policies) any { return p.InactiveTopicPolicies }))
	rt.Handle("POST", base+"inactiveTopicPolicies", a.setPolicy(func(p *policy.Policies, body []byte) error {
		v, err := decodeInactive(body)
		if err != nil {
			return err
		}
		p.InactiveTopicPolicies = &v
		return nil
	}))
	rt.Handle("DELETE", base+"inactiveTopicPolicies", a.setPolicy(func(p *policy.Policies, _ []byte) error { p.InactiveTopicPolicies = nil; return nil }))

	rt.Handle("GET", base+"subscriptionExpirationTime", a.getPolicy(func(p *policy.Policies) any { return p.SubscriptionExpirationTimeMinutes }))
	rt.Handle("POST", base+"subscriptionExpirationTime", a.setPolicy(intPolicy(func(p *policy.Policies) **int { return &p.SubscriptionExpirationTimeMinutes })))
	rt.Handle("DELETE", base+"subscriptionExpirationTime", a.setPolicy(func(p *policy.Policies, _ []byte) error { p.SubscriptionExpirationTimeMinutes = nil; return nil }))
}

// clusterRoutes installs GET/POST/DELETE of one per-cluster namespace
// policy map.
func clusterRoutes[V any](rt routeTable, a *API, path string, field func(*policy.Policies) *map[string]V, cluster string, decode func([]byte) (V, error)) {
	rt.Handle("GET", path, a.getPolicy(func(p *policy.Policies) any {
		if v, ok := (*field(p))[cluster]; ok {
			return v
		}
		return nil
	}))
	rt.Handle("POST", path, a.setPolicy(func(p *policy.Policies, body []byte) error {
		v, err := decode(body)
		if err != nil {
			return err
		}
		m := field(p)
		if *m == nil {
			*m = map[string]V{}
		}
		(*m)[cluster] = v
		return nil
	}))
	rt.Handle("DELETE", path, a.setPolicy(func(p *policy.Policies, _ []byte) error {
		m := field(p)
		delete(*m, cluster)
		if len(*m) == 0 {
			*m = nil
		}
		return nil
	}))
}

func decodePublishRate(body []byte) (policy.PublishRate, error) {
	var v policy.PublishRate
	if err := json.Unmarshal(body, &v); err != nil {
		return v, err
	}
	return v, v.Validate()
}

func decodeDispatchRate(body []byte) (policy.DispatchRate, error) {
	var v policy.DispatchRate
	if err := json.Unmarshal(body, &v); err != nil {
		return v, err
	}
	return v, v.Normalize()
}

func decodeSubscribeRate(body []byte) (policy.SubscribeRate, error) {
	var v policy.SubscribeRate
	if err := json.Unmarshal(body, &v); err != nil {
		return v, err
	}
	return v, v.Normalize()
}

func decodeInactive(body []byte) (policy.InactiveTopicPolicies, error) {
	var v policy.InactiveTopicPolicies
	if err := json.Unmarshal(body, &v); err != nil {
		return v, err
	}
	return v, v.Normalize()
}
