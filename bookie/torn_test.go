package bookie

import (
	"path"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/entrylog"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// A crash in the middle of a checkpoint, after the entry log was written
// but before it was synced, where writeback lost the end of one page
// (the rewrite of a page the previous checkpoint had written back) and
// kept the pages after it: zeros up to a page boundary, then valid
// records. The header's synced end (recorded by the previous checkpoint)
// marks the stretch as unsynced, so the reopened bookie treats it as a
// torn tail: it stays writable, GC scans the log without error, and every
// acknowledged entry reads back (the journal still held the torn ones).
func TestTornEntryLogPageTailRestartsWritable(t *testing.T) {
	fs := vfs.NewMem()
	opts := memOptions(fs)
	opts.CheckpointInterval = time.Hour // checkpoints only when the test says
	opts.WriteCacheSize = 16 << 20
	b, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	acked := map[key]bool{}
	const ledger = 7
	add := func(from, to int64) {
		for e := from; e < to; e++ {
			if err := addSync(b, ledger, e, mk, entryPayload(ledger, e), false); err != nil {
				t.Fatal(err)
			}
			acked[key{ledger, e}] = true
		}
	}
	add(0, 60)
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	add(60, 200)
	// Half a checkpoint: the frozen half reaches the entry log and is
	// written, not synced; then the crash (every write reached the disk,
	// the test removes what writeback lost).
	b.ckptMu.Lock()
	if !b.wc.swap(func() {}) {
		t.Fatal("nothing to checkpoint")
	}
	if err := b.wc.frozenEach(func(_ key, rec []byte) error {
		_, err := b.el.AddRecord(sealRecord(rec))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.el.Flush(); err != nil {
		t.Fatal(err)
	}
	clone := fs.CrashCloneAll()
	b.ckptMu.Unlock()

	// The active log: unsealed, with a synced end from the first
	// checkpoint and records after it.
	names, err := clone.List("/bk/ledgers")
	if err != nil {
		t.Fatal(err)
	}
	var logPath string
	var synced int64
	var offs []int64
	for _, n := range names {
		if _, ok := entrylog.ParseFileName(n); !ok {
			continue
		}
		p := path.Join("/bk/ledgers", n)
		h, _, err := entrylog.ReadFileInfo(clone, p)
		if err != nil || h.MapOffset != 0 || h.SyncedEnd == 0 {
			continue
		}
		logPath, synced = p, int64(h.SyncedEnd)
		if err := entrylog.ScanFile(clone, p, func(r entrylog.Record) error {
			_, off := entrylog.SplitLocation(r.Loc)
			offs = append(offs, int64(off))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if logPath == "" {
		t.Fatal("no active entry log with a synced end")
	}
	const page = 4096
	var x int64
	for _, o := range offs {
		if o >= synced && o%page != 0 && o/page < offs[len(offs)-1]/page {
			x = o
			break
		}
	}
	if x == 0 {
		t.Fatalf("no unsynced record inside a page followed by others (synced end %d, %d records)", synced, len(offs))
	}
	f, err := clone.OpenReadWrite(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, (x/page+1)*page-x), x); err != nil {
		t.Fatal(err)
	}
	f.Close()

	b2, err := Open(memOptions(clone))
	if err != nil {
		t.Fatalf("reopen after the torn page tail: %v", err)
	}
	defer b2.Close()
	if err := b2.GC(); err != nil {
		t.Fatalf("GC after the torn page tail: %v (read-only: %v)", err, b2.IsReadOnly())
	}
	if b2.IsReadOnly() {
		t.Fatalf("bookie read-only after the torn page tail: %v", b2.ReadOnlyReason())
	}
	verifyStore(t, b2, acked, []int64{ledger})
	if err := addSync(b2, ledger, 200, mk, entryPayload(ledger, 200), false); err != nil {
		t.Fatalf("add after reopen: %v", err)
	}
	if err := b2.Checkpoint(); err != nil {
		t.Fatalf("checkpoint after reopen: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
}
