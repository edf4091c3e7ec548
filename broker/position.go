package broker

import (
	"fmt"
	"math"
)

// position addresses one entry: (ledger id, entry id), ordered
// lexicographically. It mirrors position so that the broker core
// builds and tests without the storage packages.
type position struct {
	LedgerID int64
	EntryID  int64
}

var (
	// posEarliest is Pulsar's (-1,-1) "first retained entry" sentinel.
	posEarliest = position{-1, -1}
	// posLatest is Pulsar's (MaxInt64, MaxInt64) "after the last entry".
	posLatest = position{math.MaxInt64, math.MaxInt64}
)

// Compare returns -1, 0 or +1 as p is before, equal to or after q.
func (p position) Compare(q position) int {
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

func (p position) String() string { return fmt.Sprintf("%d:%d", p.LedgerID, p.EntryID) }

// ledgerEntry is one stored entry read back for dispatch; Data is shared
// and must not be modified.
type ledgerEntry struct {
	Pos  position
	Data []byte
}

// initialPosition says where a new durable cursor starts.
type initialPosition int

const (
	initialLatest initialPosition = iota
	initialEarliest
)
