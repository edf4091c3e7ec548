package broker

import (
	"context"
	"errors"
)

// registerAdminAPI installs the admin REST API (tenants, namespaces and
// their policies, topics, subscriptions, /metrics). Called from
// registerAdmin before the broker's own routes, so its /metrics wins.
func (b *Broker) registerAdminAPI(rt *Router) {
	b.ext = newAdminExt(b)
	rt.Handle("GET", "/metrics", b.metricsHandler())
	rt.Handle("GET", "/metrics/", b.metricsHandler())
	b.registerTenantRoutes(rt)
	b.registerPolicyRoutes(rt)
	b.registerTopicRoutes(rt)
	b.registerSubscriptionRoutes(rt)
}

// autoCreatePartitioned creates tn as a partitioned topic when its
// namespace's auto-creation override asks for partitioned topics and tn
// does not exist yet; it returns the partition count (0: not created).
func (b *Broker) autoCreatePartitioned(ctx context.Context, tn topicName) int {
	allow, n := b.autoCreation(tn)
	if !allow || n <= 0 {
		return 0
	}
	if ok, err := b.topicExists(ctx, tn); err != nil || ok {
		return 0
	}
	err := b.reg.setPartitions(ctx, tn, PartitionedMetadata{Partitions: n}, true)
	if err != nil && !errors.Is(err, ErrAlreadyExists) {
		return 0
	}
	got, err := b.reg.partitions(ctx, tn)
	if err != nil {
		return 0
	}
	return got
}
