package bookie

import (
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

func faultOptions(fs vfs.FS) Options {
	o := memOptions(fs)
	o.CheckpointInterval = time.Hour // tests call Checkpoint
	return o
}

// TestFsyncEIOReadOnly: a failed journal fsync fails the adds it covered
// and every later one, turns the bookie read-only with a clear reason, and
// nothing is acknowledged after it; a restart keeps what was acked.
func TestFsyncEIOReadOnly(t *testing.T) {
	mem := vfs.NewMem()
	tog := vfs.NewToggle(vfs.PathMatch("*.txn", vfs.IOError(vfs.OpSync)))
	fs := vfs.NewErrorFS(mem, tog)
	b, err := Open(faultOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	for e := int64(0); e < 20; e++ {
		if err := addSync(b, 1, e, mk, entryPayload(1, e), false); err != nil {
			t.Fatal(err)
		}
	}
	tog.Enable()
	// Adds in flight when the sync fails: none may be acked.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var acked []int64
	for e := int64(20); e < 60; e++ {
		wg.Add(1)
		b.AddEntry(1, e, mk, entryPayload(1, e), false, func(err error) {
			defer wg.Done()
			if err == nil {
				mu.Lock()
				acked = append(acked, e)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(acked) > 0 {
		t.Fatalf("entries %v acked after the journal fsync failed", acked)
	}
	if !b.IsReadOnly() {
		t.Fatal("bookie not read-only after a journal fsync error")
	}
	err = addSync(b, 1, 60, mk, entryPayload(1, 60), false)
	if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "journal failed") {
		t.Fatalf("add after fsync failure = %v, want ErrReadOnly naming the journal", err)
	}
	mustRead(t, b, 1, 5, entryPayload(1, 5)) // reads go on
	b.Close()
	tog.Disable()
	b, err = Open(faultOptions(mem.CrashClone()))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for e := int64(0); e < 20; e++ {
		mustRead(t, b, 1, e, entryPayload(1, e))
	}
	if b.IsReadOnly() {
		t.Fatalf("read-only after restart: %v", b.ReadOnlyReason())
	}
}

// TestDiskFullRealStorage: usage above the threshold refuses adds with a
// clear error while reads work; below the low-water mark adds resume; an
// ENOSPC from the entry log during a checkpoint also turns the bookie
// read-only without losing the cached entries.
func TestDiskFullRealStorage(t *testing.T) {
	mem := vfs.NewMem()
	full := vfs.NewToggle(vfs.PathMatch("*.log", vfs.DiskFull()))
	fs := vfs.NewErrorFS(mem, full)
	b, err := Open(faultOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := addSync(b, 2, 0, mk, entryPayload(2, 0), false); err != nil {
		t.Fatal(err)
	}
	fs.SetDiskUsage(100<<30, 3<<30) // 97% used
	if err := b.CheckDisks(); err != nil {
		t.Fatal(err)
	}
	err = addSync(b, 2, 1, mk, entryPayload(2, 1), false)
	if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "above threshold 95.0%") {
		t.Fatalf("add on a full disk = %v, want ErrReadOnly naming the threshold", err)
	}
	mustRead(t, b, 2, 0, entryPayload(2, 0))
	if err := addSync(b, 2, 1, mk, entryPayload(2, 1), true); err != nil {
		t.Fatalf("recovery add with 3 GiB free = %v", err)
	}
	fs.SetDiskUsage(100<<30, 20<<30)
	b.CheckDisks()
	if err := addSync(b, 2, 2, mk, entryPayload(2, 2), false); err != nil {
		t.Fatalf("add below LWM = %v", err)
	}
	// The entry log runs out of space at the checkpoint.
	full.Enable()
	if err := b.Checkpoint(); !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("checkpoint on a full entry-log disk = %v, want ENOSPC", err)
	}
	if err := addSync(b, 2, 3, mk, entryPayload(2, 3), false); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("add after ENOSPC = %v, want ErrReadOnly", err)
	}
	for e := int64(0); e < 3; e++ {
		mustRead(t, b, 2, e, entryPayload(2, e))
	}
}

// TestRestartKeepsMetaAndData: fences, master keys, explicit LACs and
// deletes survive Close/Open, from the journal and from the index.
func TestRestartKeepsMetaAndData(t *testing.T) {
	mem := vfs.NewMem()
	b, err := Open(faultOptions(mem))
	if err != nil {
		t.Fatal(err)
	}
	for l := int64(1); l <= 3; l++ {
		for e := int64(0); e < 30; e++ {
			if err := addSync(b, l, e, mk, entryPayload(l, e), false); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := b.Fence(1, mk); err != nil { // journal only, until the next checkpoint
		t.Fatal(err)
	}
	if err := b.WriteLAC(2, 28, mk, []byte("lac-body")); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteLedger(3); err != nil {
		t.Fatal(err)
	}
	// Crash (no Close): the crash clone keeps what was synced.
	b2, err := Open(faultOptions(mem.CrashClone()))
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	b.Close()
	if f, err := b2.IsFenced(1); err != nil || !f {
		t.Fatalf("IsFenced(1) after crash = %v, %v", f, err)
	}
	if err := addSync(b2, 1, 30, mk, entryPayload(1, 30), false); !errors.Is(err, ErrFenced) {
		t.Fatalf("add to fenced ledger after crash = %v", err)
	}
	if lac, body, err := b2.ReadLAC(2); err != nil || lac != 28 || string(body) != "lac-body" {
		t.Fatalf("ReadLAC(2) after crash = %d, %q, %v", lac, body, err)
	}
	if err := addSync(b2, 2, 30, []byte("wrong"), nil, false); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("add with wrong key after crash = %v", err)
	}
	if _, err := b2.ReadEntry(3, 0); !errors.Is(err, ErrNoLedger) {
		t.Fatalf("deleted ledger after crash: ReadEntry = %v", err)
	}
	for l := int64(1); l <= 2; l++ {
		for e := int64(0); e < 30; e++ {
			mustRead(t, b2, l, e, entryPayload(l, e))
		}
	}
	st, err := b2.LedgerStats(1, nil)
	if err != nil || st.Entries != 30 || !st.Fenced || st.FirstEntry != 0 || st.LastEntry != 29 || len(st.Logs) == 0 {
		t.Fatalf("LedgerStats(1) = %+v, %v", st, err)
	}
}

// TestGCCompactsDeletedLedgers: after deleting most ledgers, GC removes or
// compacts the sealed entry logs, the survivors still read back, and a
// restart sees the same.
func TestGCCompactsDeletedLedgers(t *testing.T) {
	mem := vfs.NewMem()
	o := faultOptions(mem)
	b := openFiveLedgers(t, o)
	before := logFiles(t, mem, "/bk/ledgers")
	deleteLedgers(t, b, 1, 2, 4)
	if ls, _ := b.ListLedgers(); len(ls) != 2 {
		t.Fatalf("after deletes ListLedgers = %v, want [3 5]", ls)
	}
	if err := b.GC(); err != nil {
		t.Fatal(err)
	}
	after := logFiles(t, mem, "/bk/ledgers")
	if len(after) >= len(before) {
		t.Fatalf("GC reclaimed nothing: logs before %v, after %v", before, after)
	}
	// The removed logs were renamed aside and are freed in steps
	// (Options.DeleteRate); once the remover is idle none is left.
	b.rm.Wait()
	if trash := trashFiles(t, mem, "/bk/ledgers"); len(trash) != 0 {
		t.Fatalf("left in the trash after the remover finished: %v", trash)
	}
	check := func(b *Bookie, exact bool) {
		t.Helper()
		for _, l := range []int64{3, 5} {
			for e := int64(0); e < 100; e++ {
				mustRead(t, b, l, e, entryPayload(l, e))
			}
		}
		if ls, _ := b.ListLedgers(); exact && len(ls) != 2 {
			t.Fatalf("ListLedgers = %v, want [3 5]", ls)
		}
	}
	check(b, true)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	o.EntryLogMaxSize, o.CompactionThreshold = 64<<10, 0.6 // as openFiveLedgers opened it
	b, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	check(b, true)
	// RebuildIndex into an empty index finds the survivors' entries.
	b.Close()
	if err := removeAll(mem, "/bk/ledgers/"+IndexDir); err != nil {
		t.Fatal(err)
	}
	n, err := RebuildIndex(o, nil)
	if err != nil || n < 200 {
		t.Fatalf("RebuildIndex = %d, %v; want >= 200 entries", n, err)
	}
	b, err = Open(o)
	if err != nil {
		t.Fatal(err)
	}
	// Deleted ledgers whose entries still sit in an uncompacted log come
	// back from a rebuild (documented: RebuildIndex cannot know of deletes).
	check(b, false)
}

func removeAll(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := fs.Remove(dir + "/" + n); err != nil {
			return err
		}
	}
	return fs.Remove(dir)
}

// TestGCConcurrentWithAddsAndReads runs GC passes while a writer adds,
// ledgers are deleted and a reader re-reads acked entries (docs/replication.md section 7: reads
// fail cleanly or succeed, never return wrong data).
func TestGCConcurrentWithAddsAndReads(t *testing.T) {
	mem := vfs.NewMem()
	o := memOptions(mem)
	o.EntryLogMaxSize = 32 << 10
	o.CompactionThreshold = 0.9
	o.ReadCacheSize = 1 // no read cache: every read goes to the entry log
	o.ReadAheadEntries = -1
	o.JournalMaxGroupWait = -1 // sync adds: no group wait
	b, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// Ledgers 100..109 get data and are deleted while the writer runs.
	for l := int64(100); l < 110; l++ {
		for e := int64(0); e < 20; e++ {
			if err := addSync(b, l, e, mk, entryPayload(l, e), false); err != nil {
				t.Fatal(err)
			}
		}
	}
	var acked atomic.Int64 // entries 0..acked-1 of ledger 1 are acked
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { // writer
		defer wg.Done()
		defer close(stop)
		for e := int64(0); e < 300; e++ {
			if err := addSync(b, 1, e, mk, entryPayload(1, e), false); err != nil {
				t.Errorf("add %d: %v", e, err)
				return
			}
			acked.Store(e + 1)
			if e%20 == 19 {
				if err := b.Checkpoint(); err != nil {
					t.Errorf("checkpoint: %v", err)
					return
				}
			}
		}
	}()
	go func() { // deleter + GC
		defer wg.Done()
		for l := int64(100); l < 110; l++ {
			if err := b.DeleteLedger(l); err != nil {
				t.Errorf("delete %d: %v", l, err)
			}
			if err := b.GC(); err != nil {
				t.Errorf("gc: %v", err)
			}
		}
	}()
	go func() { // reader
		defer wg.Done()
		rng := rand.New(rand.NewPCG(5, 6))
		for {
			select {
			case <-stop:
				return
			default:
			}
			n := acked.Load()
			if n == 0 {
				continue
			}
			e := rng.Int64N(n)
			got, err := b.ReadEntry(1, e)
			if err != nil {
				t.Errorf("read 1/%d: %v", e, err)
				return
			}
			if string(got) != string(entryPayload(1, e)) {
				t.Errorf("read 1/%d returned wrong bytes", e)
				return
			}
		}
	}()
	wg.Wait()
	if err := b.GC(); err != nil {
		t.Fatal(err)
	}
	for e := int64(0); e < 300; e++ {
		mustRead(t, b, 1, e, entryPayload(1, e))
	}
	if b.IsReadOnly() {
		t.Fatalf("read-only after concurrent GC: %v", b.ReadOnlyReason())
	}
}

// TestRestartWhileFull: a bookie reopened on a full disk starts read-only
// (adds refused, reads served) and turns writable once space returns.
func TestRestartWhileFull(t *testing.T) {
	mem := vfs.NewMem()
	b, err := Open(faultOptions(mem))
	if err != nil {
		t.Fatal(err)
	}
	if err := addSync(b, 9, 0, mk, entryPayload(9, 0), false); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	mem.SetDiskUsage(100<<30, 1<<30) // 99% used
	b, err = Open(faultOptions(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !b.IsReadOnly() {
		t.Fatal("bookie reopened on a full disk is writable")
	}
	if err := addSync(b, 9, 1, mk, entryPayload(9, 1), false); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("add after restart on a full disk = %v, want ErrReadOnly", err)
	}
	mustRead(t, b, 9, 0, entryPayload(9, 0))
	mem.SetDiskUsage(100<<30, 50<<30)
	if err := b.CheckDisks(); err != nil {
		t.Fatal(err)
	}
	if err := addSync(b, 9, 1, mk, entryPayload(9, 1), false); err != nil {
		t.Fatalf("add after space returned = %v", err)
	}
}

// openFiveLedgers opens a bookie with small entry logs (64 KiB) and a
// compaction threshold of 0.6 and writes ledgers 1 to 5, 100 entries each
// (entryPayload), with a checkpoint after each ledger.
func openFiveLedgers(t *testing.T, o Options) *Bookie {
	t.Helper()
	o.EntryLogMaxSize = 64 << 10
	o.CompactionThreshold = 0.6
	b, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	for l := int64(1); l <= 5; l++ {
		for e := int64(0); e < 100; e++ {
			if err := addSync(b, l, e, mk, entryPayload(l, e), false); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Checkpoint(); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func deleteLedgers(t *testing.T, b *Bookie, ledgers ...int64) {
	t.Helper()
	for _, l := range ledgers {
		if err := b.DeleteLedger(l); err != nil {
			t.Fatal(err)
		}
	}
}

// trashFiles lists the files of dir a vfs.Remover has not removed yet.
func trashFiles(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	return filesWithSuffix(t, fs, dir, vfs.TrashSuffix)
}
