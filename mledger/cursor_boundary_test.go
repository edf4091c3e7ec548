package mledger_test

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/magnetar-mq/magnetar/mledger"
)

// Issue 9 item 5: positions, counts and times at their limits never move
// a cursor past entries that were not yet written or acknowledged.

// A reset (seek) to a position beyond the end — later in the current
// ledger, in a ledger that does not exist yet, or at MaxInt64 — behaves
// as a reset to the end: entries written afterwards are all delivered.
func TestResetBeyondEndLosesNothingWrittenLater(t *testing.T) {
	cfg := mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 10}
	for _, tc := range []struct {
		name string
		at   func(last mledger.Position) mledger.Position
	}{
		{"later-in-ledger", func(l mledger.Position) mledger.Position {
			return mledger.Position{LedgerID: l.LedgerID, EntryID: l.EntryID + 5}
		}},
		{"entry-maxint64", func(l mledger.Position) mledger.Position {
			return mledger.Position{LedgerID: l.LedgerID, EntryID: math.MaxInt64}
		}},
		{"future-ledger", func(l mledger.Position) mledger.Position {
			return mledger.Position{LedgerID: l.LedgerID + 1000, EntryID: 0}
		}},
		{"ledger-maxint64", func(l mledger.Position) mledger.Position {
			return mledger.Position{LedgerID: math.MaxInt64, EntryID: 3}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ml := e.open("t/reset", cfg)
			c, err := ml.OpenCursor(ctxT(t), "s", mledger.InitialEarliest)
			if err != nil {
				t.Fatal(err)
			}
			before := addMany(t, ml, "a", 3)
			if err := c.Reset(tc.at(before[2])); err != nil {
				t.Fatal(err)
			}
			nd, err := ml.NewNonDurableCursor("reader", tc.at(before[2]))
			if err != nil {
				t.Fatal(err)
			}
			after := addMany(t, ml, "b", 25)
			for _, cur := range []*mledger.Cursor{c, nd} {
				es := readAll(t, cur)
				if len(es) != len(after) {
					t.Fatalf("%s: read %d entries written after the reset, want %d (mark-delete %s)", cur.Name(), len(es), len(after), cur.MarkDeletePosition())
				}
				for i, en := range es {
					if en.Pos != after[i] {
						t.Fatalf("%s: entry %d at %s, want %s", cur.Name(), i, en.Pos, after[i])
					}
				}
			}
			if got := c.NumberOfEntriesInBacklog(); got != int64(len(after)) {
				t.Fatalf("backlog %d, want %d", got, len(after))
			}
			// Nothing unacknowledged may be trimmed.
			if err := ml.Trim(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			e.restart()
			ml = e.open("t/reset", cfg)
			if es := readAll(t, ml.Cursor("s")); len(es) != len(after) {
				t.Fatalf("after trim and restart: %d entries, want %d", len(es), len(after))
			}
		})
	}
}

// SkipEntries at its limits: MaxInt64 skips to the end and not beyond
// (later entries are delivered), zero and negative skip nothing, and a
// skip over individually acknowledged entries counts only unacked ones.
func TestSkipEntriesAtLimits(t *testing.T) {
	cfg := mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 7}
	e := newEnv(t)
	ml := e.open("t/skip", cfg)
	c, err := ml.OpenCursor(ctxT(t), "s", mledger.InitialEarliest)
	if err != nil {
		t.Fatal(err)
	}
	pos := addMany(t, ml, "a", 20)
	for _, n := range []int64{0, -1, math.MinInt64} {
		if err := c.SkipEntries(n); err != nil {
			t.Fatal(err)
		}
		if got := c.NumberOfEntriesInBacklog(); got != 20 {
			t.Fatalf("skip %d: backlog %d, want 20", n, got)
		}
	}
	// Ack 3 entries individually, then skip 5: the 5 unacked ones after
	// mark-delete go, the acked ones do not count.
	if err := c.Delete(pos[1], pos[2], pos[4]); err != nil {
		t.Fatal(err)
	}
	if err := c.SkipEntries(5); err != nil {
		t.Fatal(err)
	}
	if got, want := c.MarkDeletePosition(), pos[7]; got != want {
		t.Fatalf("mark-delete after skip 5: %s, want %s", got, want)
	}
	if err := c.SkipEntries(math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	if got := c.MarkDeletePosition(); got != pos[19] {
		t.Fatalf("skip MaxInt64: mark-delete %s, want the last entry %s", got, pos[19])
	}
	later := addMany(t, ml, "b", 9)
	if es := readAll(t, c); len(es) != len(later) || es[0].Pos != later[0] {
		t.Fatalf("after skipping everything, read %d entries, want the %d written later", len(es), len(later))
	}
}

// ResetByPublishTime at the limits of int64: MinInt64 and 0 go to the
// first entry, MaxInt64 to the end (not beyond), and a time between two
// entries to the later one.
func TestResetByPublishTimeAtLimits(t *testing.T) {
	cfg := mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 4}
	e := newEnv(t)
	ml := e.open("t/bytime", cfg)
	c, err := ml.OpenCursor(ctxT(t), "s", mledger.InitialEarliest)
	if err != nil {
		t.Fatal(err)
	}
	// Entry i carries publish time 1000*(i+1) in its first 8 bytes.
	var pos []mledger.Position
	for i := range 10 {
		pos = append(pos, add(t, ml, string(binary.BigEndian.AppendUint64(nil, uint64(1000*(i+1)))), 1))
	}
	pt := func(d []byte) (int64, error) {
		if len(d) < 8 {
			return 0, errors.New("short entry")
		}
		return int64(binary.BigEndian.Uint64(d)), nil
	}
	for _, tc := range []struct {
		ts      int64
		backlog int64
	}{
		{math.MinInt64, 10}, {-1, 10}, {0, 10}, {1000, 10}, {1001, 9}, {10000, 1}, {10001, 0}, {math.MaxInt64, 0},
	} {
		if _, err := c.ResetByPublishTime(ctxT(t), tc.ts, pt); err != nil {
			t.Fatalf("reset to %d: %v", tc.ts, err)
		}
		if got := c.NumberOfEntriesInBacklog(); got != tc.backlog {
			t.Fatalf("reset to %d: backlog %d, want %d (mark-delete %s)", tc.ts, got, tc.backlog, c.MarkDeletePosition())
		}
	}
	// After a reset to MaxInt64, entries written later are delivered.
	p := add(t, ml, string(binary.BigEndian.AppendUint64(nil, 20000)), 1)
	if es := readAll(t, c); len(es) != 1 || es[0].Pos != p {
		t.Fatalf("after a reset to MaxInt64 read %d entries, want the one written later at %s", len(es), p)
	}
	_ = pos
}
