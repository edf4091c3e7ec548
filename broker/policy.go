package broker

import (
	"context"

	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/topicreg"
)

// A topic's effective policy (policy.Resolved) is its topic-level
// policies over its namespace's over the broker defaults (PolicyDefaults,
// from brokerconf.Config), resolved by package policy when the topic loads and
// held as a snapshot the topic swaps whole (limits.go has the limits read
// from it). What the core derives from it:
//
//   - retention and persistence configure the managed ledger when it
//     opens (storage.Opener reads them from the context); a change reopens
//     it (the topic unloads; clients reconnect);
//   - auto topic creation: partitioned auto creation happens at
//     PARTITIONED_METADATA time; disallowed creation fails the lookup;
//   - deduplication (broker-wide Config.Deduplication, or by policy);
//   - unacked limits (subscription.go; package broker/dispatch), offload (package tiered, over
//     the broker-wide policy.OffloadDefaults of Config.Offload) and
//     replication (package georep).
//
// Keeping loaded topics current as the policy store changes, and the
// enforcement over time (TTL, backlog quotas, inactive topics, rates),
// are a feature's (PolicyWatcher, Limits; package enforcement).

// PolicyDefaults returns the broker-wide policy values: the last layer
// of every topic's effective policy (the configuration's,
// brokerconf.Config.PolicyDefaults, under the policy store's overlay:
// the dynamic configuration).
func (b *Broker) PolicyDefaults() policy.Defaults {
	return b.policies.OverlayDefaults(b.cfg.PolicyDefaults())
}

// resolvePolicies returns the effective policy of topic tn (a layer that
// cannot be read is skipped, with a warning).
func (b *Broker) resolvePolicies(tn topicName) *policy.Resolved {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	res, err := b.policies.ResolveTopic(ctx, b.PolicyDefaults(), tn.NamespaceName(), topicreg.PolicyKey(tn))
	if err != nil {
		b.log.Warn("resolve policies", "topic", tn.String(), "err", err)
	}
	return res
}

// refreshPolicy re-resolves t's policy and applies what the core derives
// from it (Topic.RefreshPolicy); it reports whether t was unloaded to
// reopen with a changed retention or persistence.
func (b *Broker) refreshPolicy(t *topic) (unloaded bool) {
	old := t.pol.Load()
	res := b.resolvePolicies(t.name)
	t.pol.Store(res)
	if t.persistent() && old != nil && (!policy.SameRetention(old, res) || !policy.SamePersistence(old, res)) {
		// The managed ledger reopens with the new retention or
		// persistence (the next ledgers get the new quorum).
		b.unloadTopic(t.name.String())
		return true
	}
	if old == nil || old.MaxUnackedPerConsumer != res.MaxUnackedPerConsumer || old.MaxUnackedPerSubscription != res.MaxUnackedPerSubscription {
		for _, s := range *t.subList.Load() {
			s.Do(s.UnackedLimitsChanged)
		}
	}
	for _, h := range b.ext.policyObs {
		h.PolicyApplied(Topic{t})
	}
	return false
}

// namespacePolicies returns ns's policy document (cached), nil if it
// cannot be read.
func (b *Broker) namespacePolicies(ns string) *policy.Policies {
	if p := b.policies.Cached(ns); p != nil {
		return p
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	p, err := b.policies.Get(ctx, ns)
	if err != nil {
		return nil
	}
	return p
}
