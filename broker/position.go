package broker

import (
	"fmt"
	"math"
)

// Position addresses one entry: (ledger id, entry id), ordered
// lexicographically. It mirrors mledger.Position so that the broker core
// builds and tests without the storage packages; features see it at the
// extension points (extension.go).
type Position struct {
	LedgerID int64
	EntryID  int64
}

// position is the core's short name for Position.
type position = Position

var (
	// posEarliest is Pulsar's (-1,-1) "first retained entry" sentinel.
	posEarliest = position{-1, -1}
	// posLatest is Pulsar's (MaxInt64, MaxInt64) "after the last entry".
	posLatest = position{math.MaxInt64, math.MaxInt64}
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

func (p Position) String() string { return fmt.Sprintf("%d:%d", p.LedgerID, p.EntryID) }

// LedgerEntry is one stored entry read back (for dispatch, or by a
// feature reading a log of its own); Data is shared and must not be
// modified.
type LedgerEntry struct {
	Pos  Position
	Data []byte
}

type ledgerEntry = LedgerEntry

// InitialPosition says where a new durable cursor starts.
type InitialPosition int

// Where a new durable cursor starts: after the last entry, or at the
// first retained one.
const (
	InitialLatest InitialPosition = iota
	InitialEarliest
)

type initialPosition = InitialPosition

const (
	initialLatest   = InitialLatest
	initialEarliest = InitialEarliest
)
