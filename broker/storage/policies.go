package storage

import (
	"context"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/policy"
)

// The managed ledger of a topic opens with its policy's retention and
// persistence: the broker core attaches them to the context
// (WithLedgerPolicies), Opener applies them.

type (
	retentionKey   struct{}
	persistenceKey struct{}
	affinityKey    struct{}
)

// WithLedgerPolicies attaches pol's retention, persistence and bookie
// affinity policies to ctx, for Opener.
func WithLedgerPolicies(ctx context.Context, pol *policy.Resolved) context.Context {
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
