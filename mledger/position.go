package mledger

import (
	"fmt"
	"math"
)

// Position addresses one entry of a managed ledger: the ledger it lives in
// and its entry id there. Positions order lexicographically, which is also
// the order in which entries were appended, because ledger ids of one
// managed ledger only grow.
//
// (L, -1) is the position "just before the first entry of ledger L"; a
// cursor whose mark-delete position is (L, -1) has acknowledged nothing of
// L. Position is also the core of a Pulsar MessageId.
type Position struct {
	LedgerID int64
	EntryID  int64
}

var (
	// Earliest is the sentinel for "the first retained entry" (Pulsar's
	// (-1,-1) message id).
	Earliest = Position{LedgerID: -1, EntryID: -1}
	// Latest is the sentinel for "after the last entry" (Pulsar's
	// (MaxInt64, MaxInt64) message id).
	Latest = Position{LedgerID: math.MaxInt64, EntryID: math.MaxInt64}
)

// Compare returns -1, 0 or +1 as p is before, equal to or after q.
func (p Position) Compare(q Position) int {
	switch {
	case p.LedgerID < q.LedgerID:
		return -1
	case p.LedgerID > q.LedgerID:
		return 1
	case p.EntryID < q.EntryID:
		return -1
	case p.EntryID > q.EntryID:
		return 1
	}
	return 0
}

// Less reports whether p is before q.
func (p Position) Less(q Position) bool { return p.Compare(q) < 0 }

// String formats p as "L:E".
func (p Position) String() string { return fmt.Sprintf("%d:%d", p.LedgerID, p.EntryID) }

// InitialPosition says where a new durable cursor starts.
type InitialPosition int

const (
	// InitialLatest starts a new cursor after the last entry: it sees only
	// entries added after it was created.
	InitialLatest InitialPosition = iota
	// InitialEarliest starts a new cursor at the first retained entry.
	InitialEarliest
)

// Entry is one entry read from a managed ledger. Data is shared with the
// entry cache and other readers: callers must not modify it.
type Entry struct {
	Pos  Position
	Data []byte
}
