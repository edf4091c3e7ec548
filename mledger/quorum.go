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

// quorumStore passes a managed ledger's Config.Quorum to every ledger
// it creates (data ledgers at open and rollover, cursor and compaction
// ledgers).
type quorumStore struct {
	LedgerStore
	q Quorum
}

func (s quorumStore) Create(ctx context.Context) (WriteLedger, error) {
	return s.LedgerStore.Create(context.WithValue(ctx, quorumKey{}, s.q))
}

// withQuorum wraps st so that its creates carry q (st itself for the
// zero Quorum).
func withQuorum(st LedgerStore, q Quorum) LedgerStore {
	if q == (Quorum{}) {
		return st
	}
	return quorumStore{st, q}
}
