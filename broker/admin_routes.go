package broker

// Admin REST API (files admin_*.go, policies.go, policy_enforce.go,
// metrics.go). Paths, bodies, status codes and JSON field names follow
// Apache Pulsar's /admin/v2 API; errors are {"reason": "..."} with 404
// (missing tenant/namespace/topic/subscription), 409 (exists, or a tenant
// or namespace that is not empty), 412 (bad policy value, in use), 400
// (malformed body), 405 (wrong method) and 501 for known Pulsar endpoints
// Magnetar does not implement.
//
// State: tenants, namespaces and their policies live in the metadata store
// (registry.go's layout; a namespace node holds its Policies JSON). The
// broker caches each namespace's Policies (adminExt.ns), invalidated on
// every write through the API; writes are compare-and-set on the node.
//
// Enforcement (policy_enforce.go), per loaded topic:
//   - backlog quotas: destination_storage bounds the largest durable
//     subscription backlog in bytes (entries x average entry size),
//     message_age the age of the oldest message after the slowest
//     mark-delete. producer_request_hold keeps SENDs in a per-topic FIFO until
//     the backlog is under the limit (checked on every admin cursor move
//     and every policyCheckInterval) and refuses new producers with
//     ProducerBlockedQuotaExceededError; producer_exception disconnects the
//     producer and refuses it with ProducerBlockedQuotaExceededException;
//     consumer_backlog_eviction skips entries of the slowest cursor.
//   - message TTL: every policyCheckInterval, cursors mark-delete the
//     entries published before now-TTL.
//   - deduplication (when the broker-wide Config.Deduplication is off): a
//     per-topic highest sequence id per producer name; a resent id gets a
//     receipt without being stored.
//   - max producers/consumers per topic: PRODUCER/SUBSCRIBE refused.
//   - auto topic creation override: partitioned auto creation happens at
//     PARTITIONED_METADATA time; disallowed creation fails the lookup.
//   - retention: applied when a topic's managed ledger opens (LedgerOpener
//     reads it from the context); changing it unloads the namespace's
//     topics so they reopen with the new limits.

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
