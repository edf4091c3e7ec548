package mledger_test

import (
	"slices"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
)

func ledgerIDs(ml *mledger.ManagedLedger) []int64 {
	var ids []int64
	for _, l := range ml.Stats().Ledgers {
		ids = append(ids, l.LedgerID)
	}
	return ids
}

func TestTrim(t *testing.T) {
	// 4 closed ledgers of 5 entries (10 bytes each: "m-0".."m-19" padded)
	// plus the current one.
	for _, tc := range []struct {
		name string
		// retention
		rtime time.Duration
		rsize int64
		// cursors' mark-delete as an index into the 20 positions; -1: none
		slow, fast int
		advance    time.Duration
		// how many of the 4 closed ledgers are deleted
		want int
	}{
		{"no-retention-slowest-governs", 0, 0, 7, 19, 0, 1},
		{"cursor-at-ledger-end", 0, 0, 9, 19, 0, 2},
		{"all-consumed-current-kept", 0, 0, 19, 19, 0, 4},
		{"nothing-consumed", 0, 0, -1, 19, 0, 0},
		{"infinite-retention", -1, -1, 19, 19, 0, 0},
		{"time-retention-not-expired", time.Hour, -1, 19, 19, 0, 0},
		{"time-retention-expired", time.Hour, -1, 19, 19, 2 * time.Hour, 4},
		{"size-retention", -1, 110, 19, 19, 0, 2}, // 207 bytes: drop 2×50 to get <= 110
		{"size-retention-huge", -1, 1 << 20, 19, 19, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			cfg := mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 5,
				RetentionTime: tc.rtime, RetentionSize: tc.rsize}
			ml := e.open("t/trim", cfg)
			ctx := ctxT(t)
			slow, _ := ml.OpenCursor(ctx, "slow", mledger.InitialEarliest)
			fast, _ := ml.OpenCursor(ctx, "fast", mledger.InitialEarliest)
			nd, _ := ml.NewNonDurableCursor("reader", mledger.Earliest) // does not hold ledgers
			var pos []mledger.Position
			for i := range 20 {
				pos = append(pos, add(t, ml, string(rune('a'+i))+"________", 1)) // 10 bytes
			}
			add(t, ml, "current", 1) // opens the 5th ledger
			before := ledgerIDs(ml)
			if len(before) != 5 {
				t.Fatalf("ledgers %v, want 5", before)
			}
			if tc.slow >= 0 {
				_ = slow.MarkDelete(pos[tc.slow])
			}
			_ = fast.MarkDelete(pos[tc.fast])
			// Trimming follows the persisted mark-delete positions.
			if err := ml.Trim(ctx); err != nil {
				t.Fatal(err)
			}
			if got := ledgerIDs(ml); !slices.Equal(got, before) {
				t.Fatalf("trimmed %v before the cursors persisted", got)
			}
			if err := ml.PersistAllForTest(ctx); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(tc.advance)
			if err := ml.Trim(ctx); err != nil {
				t.Fatal(err)
			}
			after := ledgerIDs(ml)
			if want := before[tc.want:]; !slices.Equal(after, want) {
				t.Fatalf("ledgers after Trim = %v, want %v", after, want)
			}
			for _, id := range before[:tc.want] {
				if e.store.Exists(id) {
					t.Fatalf("trimmed ledger %d still in the ledger store", id)
				}
			}
			// A reader positioned in a trimmed ledger moves on.
			if es := readAll(t, nd); tc.want > 0 && len(es) > 0 && es[0].Pos.LedgerID < after[0] {
				t.Fatalf("reader read trimmed entry %v", es[0].Pos)
			}
			e.restart()
			ml = e.open("t/trim", cfg)
			if got := ledgerIDs(ml); !slices.Equal(got[:len(after)], after) {
				t.Fatalf("after restart ledgers %v, want prefix %v", got, after)
			}
		})
	}
}

func TestTrimWithoutCursorsAndPeriodic(t *testing.T) {
	e := newEnv(t)
	cfg := mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 2, TrimInterval: time.Minute}
	ml := e.open("t/trim2", cfg)
	addMany(t, ml, "x", 7) // 3 full ledgers + current
	if n := len(ledgerIDs(ml)); n != 4 {
		t.Fatalf("%d ledgers, want 4", n)
	}
	e.f.Tick(ctxT(t)) // before TrimInterval: nothing
	if n := len(ledgerIDs(ml)); n != 4 {
		t.Fatalf("trimmed before TrimInterval: %d ledgers", n)
	}
	e.clock.Advance(2 * time.Minute)
	e.f.Tick(ctxT(t))
	if n := len(ledgerIDs(ml)); n != 1 {
		t.Fatalf("with no cursors every closed ledger is consumed: %d ledgers left, want 1", n)
	}
}
