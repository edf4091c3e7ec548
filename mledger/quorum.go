package mledger

import "context"

// Quorum is the replication of the ledgers a managed ledger creates:
// ensemble size, write quorum and ack quorum (Pulsar's
// PersistencePolicies). The zero Quorum leaves the ledger store's own
// defaults.
type Quorum struct {
	Ensemble, WriteQuorum, AckQuorum int
}

type quorumKey struct{}

// QuorumFrom returns the quorum a managed ledger asks for in the ctx
// it passes to LedgerStore.Create (false: use the store's default). A
// LedgerStore that can set the replication per ledger honours it.
func QuorumFrom(ctx context.Context) (Quorum, bool) {
	q, ok := ctx.Value(quorumKey{}).(Quorum)
	return q, ok
}

// Placement names the groups of bookies the ledgers of a managed ledger
// go to (a namespace's bookie affinity group: Pulsar's comma-separated
// primary and secondary group lists). The zero Placement: any bookie.
type Placement struct {
	Primary, Secondary string
}

type placementKey struct{}

// PlacementFrom returns the placement a managed ledger asks for in the
// ctx it passes to LedgerStore.Create (false: none). A LedgerStore that
// places ledgers on bookies honours it.
func PlacementFrom(ctx context.Context) (Placement, bool) {
	p, ok := ctx.Value(placementKey{}).(Placement)
	return p, ok
}

// quorumStore passes a managed ledger's Config.Quorum and
// Config.Placement to every ledger it creates (data ledgers at open and
// rollover, cursor and compaction ledgers).
type quorumStore struct {
	LedgerStore
	q Quorum
	p Placement
}

func (s quorumStore) Create(ctx context.Context) (WriteLedger, error) {
	if s.q != (Quorum{}) {
		ctx = context.WithValue(ctx, quorumKey{}, s.q)
	}
	if s.p != (Placement{}) {
		ctx = context.WithValue(ctx, placementKey{}, s.p)
	}
	return s.LedgerStore.Create(ctx)
}

// withQuorum wraps st so that its creates carry q and p (st itself for
// the zero Quorum and Placement).
func withQuorum(st LedgerStore, q Quorum, p Placement) LedgerStore {
	if q == (Quorum{}) && p == (Placement{}) {
		return st
	}
	return quorumStore{st, q, p}
}
