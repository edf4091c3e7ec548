package mledger_test

import (
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
)

// Ledgers of 65,536 × k ± 1 entries through the cursor API: individual,
// batch-index and cumulative acks, with restarts between the acks; the
// cursor never skips an unacknowledged entry and lands exactly on the
// ledger's end. This lost 3,500 of 70,000 messages when the ack state
// trusted roaring's NextAbsentValue.
func TestCursorAcksAcrossContainerBoundariesAndRestarts(t *testing.T) {
	for _, n := range []int{65535, 65536, 65537, 131073} {
		for _, mode := range []string{"individual", "batch-index", "cumulative"} {
			t.Run(mode+"/"+itoa0(n), func(t *testing.T) {
				testBoundaryAcks(t, n, mode)
			})
		}
	}
}

func testBoundaryAcks(t *testing.T, n int, mode string) {
	cfg := mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: int64(n)}
	e := newEnv(t)
	ml := e.open("t/boundary", cfg)
	ctx := ctxT(t)
	c, err := ml.OpenCursor(ctx, "s", mledger.InitialEarliest)
	if err != nil {
		t.Fatal(err)
	}
	pos := addMany(t, ml, "e", n+5)
	if pos[n-1].LedgerID != pos[0].LedgerID || pos[n].LedgerID == pos[0].LedgerID {
		t.Fatalf("ledger 1 does not hold exactly %d entries: %v %v", n, pos[n-1], pos[n])
	}
	ack := func(p mledger.Position) {
		var err error
		switch mode {
		case "batch-index":
			err = c.AckBatchIndexes(p, []uint64{0})
		default:
			err = c.Delete(p)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// Ack the ledger's last 600 entries but the first of them, then
	// restart: nothing of the ledger may count as acked before the gap.
	gap := n - 600
	switch mode {
	case "cumulative":
		if err := c.MarkDelete(pos[gap-1]); err != nil {
			t.Fatal(err)
		}
	default:
		for i := 0; i < gap; i++ {
			ack(pos[i])
		}
	}
	for i := gap + 1; i < n; i++ {
		ack(pos[i])
	}
	if got := c.MarkDeletePosition(); got != pos[gap-1] {
		t.Fatalf("mark-delete %s before the gap is filled, want %s", got, pos[gap-1])
	}
	e.restart()
	ml = e.open("t/boundary", cfg)
	c = ml.Cursor("s")
	if got := c.MarkDeletePosition(); got != pos[gap-1] {
		t.Fatalf("after restart: mark-delete %s, want %s", got, pos[gap-1])
	}
	// The unacked entries are the gap and the next ledger's five.
	es := readAll(t, c)
	want := append([]mledger.Position{pos[gap]}, pos[n:]...)
	if len(es) != len(want) {
		t.Fatalf("read %d entries after restart, want %d", len(es), len(want))
	}
	for i, en := range es {
		if en.Pos != want[i] {
			t.Fatalf("entry %d at %s, want %s", i, en.Pos, want[i])
		}
	}
	if ent := c.NumberOfEntriesInBacklog(); ent != 6 {
		t.Fatalf("backlog %d, want 6", ent)
	}
	ack(pos[gap])
	if got := c.MarkDeletePosition(); got != pos[n-1] {
		t.Fatalf("mark-delete %s after filling the gap, want %s", got, pos[n-1])
	}
	e.restart()
	ml = e.open("t/boundary", cfg)
	c = ml.Cursor("s")
	if got := c.MarkDeletePosition(); got != pos[n-1] {
		t.Fatalf("after second restart: mark-delete %s, want %s", got, pos[n-1])
	}
	if got := datas(readAll(t, c)); len(got) != 5 || got[0] != "e-"+itoa0(n) {
		t.Fatalf("read %v after second restart, want the next ledger's five entries", got)
	}
}

func itoa0(n int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
		if n == 0 {
			return string(b)
		}
	}
}

// A ledger is rolled at the hard entry cap even before the minimum
// rollover time, so that no entry id outgrows the cursor's uint32 ack
// bitmaps.
func TestForcedRolloverAtEntryCap(t *testing.T) {
	mledger.SetMaxLedgerEntriesForTest(t, 100)
	cfg := mledger.Config{MinLedgerRolloverTime: time.Hour, MaxEntriesPerLedger: 50000}
	e := newEnv(t)
	ml := e.open("t/cap", cfg)
	pos := addMany(t, ml, "e", 250)
	if pos[99].LedgerID != pos[0].LedgerID || pos[100].LedgerID == pos[99].LedgerID || pos[100].EntryID != 0 {
		t.Fatalf("no rollover at the cap: %s %s %s", pos[0], pos[99], pos[100])
	}
	for _, p := range pos {
		if p.EntryID >= 100 {
			t.Fatalf("entry id %d past the cap", p.EntryID)
		}
	}
}

// TestRolloverEveryEntry: Pulsar's maximum rollover time of 0 (here
// negative) makes every non-empty ledger due, so with no minimum each add
// lands in a ledger of its own; the default maximum keeps them together.
func TestRolloverEveryEntry(t *testing.T) {
	e := newEnv(t)
	each := addMany(t, e.open("t/every", mledger.Config{MinLedgerRolloverTime: -1, MaxLedgerRolloverTime: -1}), "e", 5)
	for i := 1; i < len(each); i++ {
		if each[i].LedgerID == each[i-1].LedgerID {
			t.Fatalf("entries %d and %d share ledger %d", i-1, i, each[i].LedgerID)
		}
	}
	together := addMany(t, e.open("t/default", mledger.Config{MinLedgerRolloverTime: -1}), "e", 5)
	if together[0].LedgerID != together[4].LedgerID {
		t.Fatalf("default maximum rolled: %v", together)
	}
}
