package index

import (
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestLastEntryFoundOnFirstUse: Open reads no ledger's pages; a ledger's
// last entry is found from them on its first use (LastEntry, Set, SetRun)
// and is the same as before the restart, and a Set below it after the
// restart does not lower it.
func TestLastEntryFoundOnFirstUse(t *testing.T) {
	fs := vfs.NewMem()
	ix := open(t, fs, "/ix")
	want := map[int64]int64{}
	set := func(ix *Index, ledger, entry int64) {
		t.Helper()
		if err := ix.Set(ledger, entry, uint64(entry+1)); err != nil {
			t.Fatal(err)
		}
		want[ledger] = max(want[ledger], entry)
	}
	for e := range int64(30) { // four pages of 8 slots
		set(ix, 1, e)
	}
	set(ix, 2, 5)
	set(ix, 2, 1000) // a hole of pages between
	if err := ix.SetMeta(3, Meta{MasterKey: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	want[3] = -1
	for e := range int64(10) {
		set(ix, 4, e)
		set(ix, 5, e)
		set(ix, 6, e)
	}
	ix = flushReopen(t, ix, fs, "/ix")
	defer ix.Close()
	for l := range want {
		if got := ix.lookup(l).last.Load(); got != lastUnknown {
			t.Fatalf("ledger %d: last %d after Open, want it unknown until used", l, got)
		}
	}
	// First uses that are writes: below the last entry, above it, a run.
	if err := ix.Set(4, 3, 99); err != nil {
		t.Fatal(err)
	}
	set(ix, 5, 12)
	if err := ix.SetRun(6, 2, []uint64{7, 8}); err != nil {
		t.Fatal(err)
	}
	for l, w := range want {
		if got, ok := ix.LastEntry(l); !ok || got != w {
			t.Errorf("ledger %d: LastEntry = %d, %v; want %d", l, got, ok, w)
		}
	}
}

// TestLastEntryFirstUseRace: after a restart, adds above a ledger's last
// entry race readers of it; every read is at least the last entry before
// the restart and the final one is the highest added.
func TestLastEntryFirstUseRace(t *testing.T) {
	fs := vfs.NewMem()
	ix := open(t, fs, "/ix")
	const ledgers, before, adds = 8, 20, 200
	for l := range int64(ledgers) {
		for e := range int64(before) {
			if err := ix.Set(l, e, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	ix = flushReopen(t, ix, fs, "/ix")
	defer ix.Close()
	var wg sync.WaitGroup
	errs := make(chan string, 2*ledgers)
	for l := range int64(ledgers) {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for e := int64(before); e < before+adds; e++ {
				if err := ix.Set(l, e, 1); err != nil {
					errs <- err.Error()
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			prev := int64(before - 1)
			for range adds {
				got, _ := ix.LastEntry(l)
				if got < prev {
					errs <- "LastEntry went below an earlier read or the last entry before the restart"
					return
				}
				prev = got
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	for l := range int64(ledgers) {
		if got, _ := ix.LastEntry(l); got != before+adds-1 {
			t.Errorf("ledger %d: LastEntry = %d, want %d", l, got, before+adds-1)
		}
	}
}
