package mledger_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/magnetar-mq/magnetar/mledger"
)

// TestReadBound: with a bound set, reads and backlog stop before it
// (across ledger boundaries too); moving the bound releases the rest in
// order; clearing it removes it.
func TestReadBound(t *testing.T) {
	e := newEnv(t)
	ml := e.open("t/bound", mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 3})
	c, _ := ml.OpenCursor(ctxT(t), "s", mledger.InitialEarliest)
	var pos []mledger.Position
	for i := range 8 {
		pos = append(pos, add(t, ml, fmt.Sprint(i), 2))
	}
	var bound atomic.Pointer[mledger.Position]
	bound.Store(&pos[3]) // the first entry of the second ledger
	ml.SetReadBound(func() (mledger.Position, bool) {
		if b := bound.Load(); b != nil {
			return *b, true
		}
		return mledger.Position{}, false
	})
	if ge, gm := c.Backlog(); ge != 3 || gm != 6 {
		t.Fatalf("bounded Backlog() = %d, %d; want 3, 6", ge, gm)
	}
	es, err := c.ReadEntries(ctxT(t), 100)
	if err != nil || len(es) != 3 || es[2].Pos != pos[2] {
		t.Fatalf("bounded read = %d entries (%v), want pos[0..2]", len(es), err)
	}
	if es, _ := c.ReadEntries(ctxT(t), 100); len(es) != 0 {
		t.Fatalf("read at the bound returned %d entries", len(es))
	}
	bound.Store(&pos[6])
	es, _ = c.ReadEntries(ctxT(t), 100)
	if len(es) != 3 || es[0].Pos != pos[3] || es[2].Pos != pos[5] {
		t.Fatalf("after moving the bound: %d entries", len(es))
	}
	ml.SetReadBound(nil)
	es, _ = c.ReadEntries(ctxT(t), 100)
	if len(es) != 2 || es[1].Pos != pos[7] {
		t.Fatalf("after clearing the bound: %d entries", len(es))
	}
	if ge, _ := c.Backlog(); ge != 8 {
		t.Fatalf("unbounded Backlog() = %d, want 8", ge)
	}
	// A bound at or before everything: nothing to read, no backlog.
	zero := mledger.Position{LedgerID: pos[0].LedgerID, EntryID: 0}
	bound.Store(&zero)
	ml.SetReadBound(func() (mledger.Position, bool) { return *bound.Load(), true })
	if ge, gm := c.Backlog(); ge != 0 || gm != 0 {
		t.Fatalf("Backlog() before the first entry = %d, %d", ge, gm)
	}
}
