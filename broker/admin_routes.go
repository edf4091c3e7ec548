package broker

import (
	"context"
	"errors"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
)

// registerAdminAPI installs the admin REST API (tenants, namespaces and
// their policies, topics, subscriptions, /metrics). Called from
// registerAdmin before the broker's own routes, so its /metrics wins.
func (b *Broker) registerAdminAPI(rt *Router) {
	b.ext = newAdminExt(b)
	if open := b.deps.OpenLedger; open != nil {
		b.deps.OpenLedger = func(ctx context.Context, name string) (ManagedLedger, error) {
			return open(b.withRetention(ctx, name), name)
		}
	}
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

type retentionKey struct{}

// withRetention attaches the retention policy of the topic's namespace
// to ctx, for LedgerOpener.
func (b *Broker) withRetention(ctx context.Context, name string) context.Context {
	tn, err := parseTopicName(name)
	if err != nil {
		return ctx
	}
	pol := b.ext.cachedPolicies(tn.NamespaceName())
	if pol == nil || pol.RetentionPolicies == nil {
		return ctx
	}
	return context.WithValue(ctx, retentionKey{}, *pol.RetentionPolicies)
}

// applyRetention overrides cfg's retention with a namespace policy
// carried by ctx (minutes and MB; -1 unlimited, 0 none).
func applyRetention(ctx context.Context, cfg *mledger.Config) {
	r, ok := ctx.Value(retentionKey{}).(RetentionPolicies)
	if !ok {
		return
	}
	switch {
	case r.RetentionTimeInMinutes < 0:
		cfg.RetentionTime = -1
	default:
		cfg.RetentionTime = time.Duration(r.RetentionTimeInMinutes) * time.Minute
	}
	switch {
	case r.RetentionSizeInMB < 0:
		cfg.RetentionSize = -1
	default:
		cfg.RetentionSize = r.RetentionSizeInMB << 20
	}
}
