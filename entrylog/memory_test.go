package entrylog

import (
	"testing"

	"github.com/magnetar-mq/magnetar/internal/testenv"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestSealedLedgersMemory: a sealed log keeps its bytes per ledger as
// sorted pairs with no spare capacity, 16 B a ledger (a map[int64]uint64
// takes 22 B or more: 37 B a ledger over a million topics' logs), whether
// it was sealed in this process or its map was read at open.
func TestSealedLedgersMemory(t *testing.T) {
	const n = 100_000
	fs := vfs.NewMem()
	l := mustOpen(t, fs, nil)
	for ledger := int64(1); ledger <= n; ledger++ {
		if _, err := l.Add(ledger, 0, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	check := func(l *Log, when string) {
		t.Helper()
		var total int
		for _, info := range l.Logs() {
			if info.Active {
				continue
			}
			ps, err := l.LedgerBytes(info.ID)
			if err != nil {
				t.Fatal(err)
			}
			if cap(ps) != len(ps) {
				t.Fatalf("%s: log %d keeps %d pairs in a capacity of %d", when, info.ID, len(ps), cap(ps))
			}
			total += len(ps)
		}
		if total != n {
			t.Fatalf("%s: %d ledgers in the sealed logs, want %d", when, total, n)
		}
	}
	check(l, "sealed")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// The heap a log opened over these files holds (their maps read at
	// open), less what a log over an empty directory holds.
	base := testenv.LiveHeap()
	empty := mustOpen(t, vfs.NewMem(), nil)
	fixed := testenv.LiveHeap() - base
	empty.Close()
	base = testenv.LiveHeap()
	l = mustOpen(t, fs, nil)
	held := testenv.LiveHeap() - base
	check(l, "reopened")
	perLedger := (float64(held) - float64(fixed)) / n
	t.Logf("an open log holds %.1f B per ledger of its sealed logs (%d B fixed)", perLedger, fixed)
	if perLedger > 20 {
		t.Errorf("%.1f B of heap per ledger of a sealed log, guard 20", perLedger)
	}
	l.Close()
}
