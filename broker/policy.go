package broker

import (
	"context"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
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
//     opens (LedgerOpener reads them from the context); a change reopens
//     it (the topic unloads; clients reconnect);
//   - auto topic creation: partitioned auto creation happens at
//     PARTITIONED_METADATA time; disallowed creation fails the lookup;
//   - deduplication (broker-wide Config.Deduplication, or by policy);
//   - unacked limits (subscription.go), offload (package tiered, over
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

// topicPolicyKey is the policy.Store key of tn's topic-level policies
// (a partition uses its partitioned topic's).
func topicPolicyKey(tn topicName) string {
	p := tn.Parent()
	return policy.TopicKey(p.Domain, p.Tenant, p.Namespace, topicreg.EscapeLocal(p.Local))
}

// resolvePolicies returns the effective policy of topic tn (a layer that
// cannot be read is skipped, with a warning).
func (b *Broker) resolvePolicies(tn topicName) *policy.Resolved {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	res, err := b.policies.ResolveTopic(ctx, b.PolicyDefaults(), tn.NamespaceName(), topicPolicyKey(tn))
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
		b.unloadTopic(t.full)
		return true
	}
	if old == nil || old.MaxUnackedPerConsumer != res.MaxUnackedPerConsumer || old.MaxUnackedPerSubscription != res.MaxUnackedPerSubscription {
		for _, s := range *t.subList.Load() {
			s.do(func() {
				if s.refreshBlocked() {
					s.dispatch()
				}
			})
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

// The managed ledger of a topic opens with its policy's retention and
// persistence: getTopic attaches them to the context, LedgerOpener
// applies them.

type (
	retentionKey   struct{}
	persistenceKey struct{}
	affinityKey    struct{}
)

// withLedgerPolicies attaches pol's retention and persistence policies
// to ctx, for LedgerOpener.
func withLedgerPolicies(ctx context.Context, pol *policy.Resolved) context.Context {
	if r := pol.Retention; r != nil {
		ctx = context.WithValue(ctx, retentionKey{}, *r)
	}
	if p := pol.Persistence; p != nil {
		ctx = context.WithValue(ctx, persistenceKey{}, *p)
	}
	if g := pol.BookieAffinity; g != nil {
		ctx = context.WithValue(ctx, affinityKey{}, *g)
	}
	return ctx
}

// applyRetention overrides cfg's retention with a policy carried by ctx
// (minutes and MB; -1 unlimited, 0 none).
func applyRetention(ctx context.Context, cfg *mledger.Config) {
	r, ok := ctx.Value(retentionKey{}).(policy.RetentionPolicies)
	if !ok {
		return
	}
	cfg.RetentionTime = r.Time()
	cfg.RetentionSize = r.Size()
}

// applyPersistence sets cfg's ledger quorum from a persistence policy
// carried by ctx, and throttles cursor persistence to
// managedLedgerMaxMarkDeleteRate: the mark-delete position of a cursor
// is written at most that many times a second (the acks between are
// kept in memory and written with the next persist, as in Pulsar).
func applyPersistence(ctx context.Context, cfg *mledger.Config) {
	if g, ok := ctx.Value(affinityKey{}).(policy.BookieAffinityGroup); ok {
		// The namespace's bookie affinity group places the ledgers.
		cfg.Placement = mledger.Placement{Primary: g.Primary, Secondary: g.Secondary}
	}
	p, ok := ctx.Value(persistenceKey{}).(policy.PersistencePolicies)
	if !ok {
		return
	}
	cfg.Quorum = mledger.Quorum{Ensemble: p.BookkeeperEnsemble, WriteQuorum: p.BookkeeperWriteQuorum, AckQuorum: p.BookkeeperAckQuorum}
	if iv := markDeleteInterval(p.ManagedLedgerMaxMarkDeleteRate); iv > cfg.CursorPersistInterval {
		cfg.CursorPersistInterval = iv
	}
}

// markDeleteInterval is the least time between two mark-delete persists
// at rate per second (0 for no limit; at most an hour).
func markDeleteInterval(rate float64) time.Duration {
	if rate <= 0 {
		return 0
	}
	iv := float64(time.Second) / rate
	if iv > float64(time.Hour) {
		return time.Hour
	}
	return time.Duration(iv)
}
