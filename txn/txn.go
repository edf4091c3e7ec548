package txn

import (
	"context"
	"fmt"
)

// ID identifies a transaction. Most is the coordinator id, Least the
// coordinator's sequence number.
type ID struct {
	Most  uint64
	Least uint64
}

// String formats the id as Pulsar does: "(most,least)".
func (id ID) String() string { return fmt.Sprintf("(%d,%d)", id.Most, id.Least) }

// Action ends a transaction. The values are the wire's TxnAction.
type Action int32

const (
	Commit Action = 0
	Abort  Action = 1
)

func (a Action) String() string {
	switch a {
	case Commit:
		return "COMMIT"
	case Abort:
		return "ABORT"
	}
	return fmt.Sprintf("Action(%d)", int32(a))
}

// Participant is what a coordinator calls to end a transaction where its
// messages and acknowledgements live. A broker implements it for the
// topics it owns; a coordinator reaches topics owned by other brokers with
// END_TXN_ON_PARTITION / END_TXN_ON_SUBSCRIPTION over the binary protocol.
// Both calls are idempotent: ending a transaction that the participant has
// already ended the same way, or never saw, succeeds.
type Participant interface {
	// EndOnPartition makes the transaction's messages on topic (a
	// partition or a non-partitioned topic) visible (Commit) or discards
	// them for good (Abort), durably, before returning.
	EndOnPartition(ctx context.Context, topic string, id ID, a Action) error
	// EndOnSubscription applies (Commit) or releases (Abort) the
	// transaction's pending acknowledgements on topic's subscription,
	// durably, before returning.
	EndOnSubscription(ctx context.Context, topic, subscription string, id ID, a Action) error
}
