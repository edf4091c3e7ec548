package bookie

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/testenv"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"golang.org/x/sys/unix"
)

// TestDiskFullReserveKeptUntilItHelps: on a ledger volume with no byte
// free, the write cache holds more than the GC reserve (6.4 MiB of ledger
// 7 against a 256 KiB reserve), so every checkpoint fails. A small ledger
// deleted meanwhile makes GC want to roll the active log, whose checkpoint
// cannot fit even in the reserve: GC keeps the reserve. Once ledger 7 is
// deleted the checkpoint needs only ledger 8's entries: it succeeds (out
// of the reserve where the log has no room left) and the storage failure
// clears.
// (GC used to release the reserve on the first roll it wanted; the
// checkpoint of the big write cache failed anyway, its partial appends
// took the reserve's space, and after the delete nothing could ever
// checkpoint again: a standalone restarted on a full volume stayed
// read-only for good.) With the ballast gone every entry of ledger 8
// reads back and adds resume.
func TestDiskFullReserveKeptUntilItHelps(t *testing.T) {
	ledgers := testenv.MountTmpfs(t, 16<<20)
	o := Options{
		FS: vfs.NewOS(), JournalDir: t.TempDir(), LedgerDirs: []string{ledgers},
		CheckpointInterval: time.Hour, DiskCheckInterval: -1, GCInterval: -1,
		GCReserve: 256 << 10, WriteCacheSize: 64 << 20,
		IndexSlotsPerPage: 64, IndexPagesPerSegment: 64,
	}
	b, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	reserve := filepath.Join(ledgers, reserveName)
	if _, err := os.Stat(reserve); err != nil {
		t.Fatalf("no GC reserve: %v", err)
	}
	var kept int64
	addKept := func(n int) {
		for range n {
			if err := addSync(b, 8, kept, mk, payloadFor(8, kept, 1000), false); err != nil {
				t.Fatal(err)
			}
			kept++
		}
	}
	for e := int64(0); e < 4; e++ {
		if err := addSync(b, 9, e, mk, payloadFor(9, e, 1000), false); err != nil {
			t.Fatal(err)
		}
	}
	addKept(4)
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	ballast := filepath.Join(ledgers, "ballast")
	testenv.FillUp(t, ballast)
	defer os.Remove(ballast)
	// No disk check runs: the adds go to the journal (another volume) and
	// the write cache.
	for e := int64(0); e < 100; e++ { // more than the active log's 4 MiB preallocated
		if err := addSync(b, 7, e, mk, payloadFor(7, e, 64<<10), false); err != nil {
			t.Fatalf("add %d: %v", e, err)
		}
	}
	addKept(4)
	if err := b.Checkpoint(); !isNoSpace(err) {
		t.Fatalf("checkpoint on a full volume: %v, want no space", err)
	}
	if err := b.CheckDisks(); err != nil {
		t.Fatal(err)
	}
	if !b.IsReadOnly() {
		t.Fatal("writable on a full volume")
	}

	if err := b.DeleteLedger(9); err != nil && !isNoSpace(err) {
		t.Fatal(err)
	}
	if err := b.GC(); err != nil {
		t.Fatalf("GC: %v", err)
	}
	if _, err := os.Stat(reserve); err != nil {
		t.Fatalf("GC released the reserve for a checkpoint of %d bytes it cannot hold: %v", b.checkpointNeed(), err)
	}

	if err := b.DeleteLedger(7); err != nil && !isNoSpace(err) {
		t.Fatal(err)
	}
	if err := b.GC(); err != nil {
		t.Fatalf("GC after the delete: %v", err)
	}
	if b.ro.reasons()&roStorage != 0 {
		_, rerr := os.Stat(reserve)
		t.Fatalf("checkpoint still failing after ledger 7 was deleted (reserve: %v): %v", rerr, b.ReadOnlyReason())
	}

	os.Remove(ballast)
	if err := b.CheckDisks(); err != nil {
		t.Fatal(err)
	}
	if b.IsReadOnly() {
		t.Fatalf("read-only with the ballast gone: %v", b.ReadOnlyReason())
	}
	addKept(1)
	for e := range kept {
		mustRead(t, b, 8, e, payloadFor(8, e, 1000))
	}
}

// TestCloseOnFullVolume: a bookie closed with its ledger directory full
// closes without an error and loses nothing. A checkpoint failed at the
// index's metadata file for lack of space (the entry log's appends fit in
// what it had preallocated), then the directory fills completely: Close's
// checkpoint and the index's last metadata write find no space, and the
// journal keeps both (a standalone stopped on a full disk used to exit
// with "index: write .../INDEX-META.tmp: no space left on device").
// Reopened with room again, every entry reads back.
func TestCloseOnFullVolume(t *testing.T) {
	ledgers := t.TempDir()
	var full atomic.Int32 // 1: the index's metadata file; 2: everything in ledgers
	inj := vfs.InjectorFunc(func(op vfs.Op, path string) error {
		switch op {
		case vfs.OpCreate, vfs.OpWrite, vfs.OpPreallocate, vfs.OpTruncate:
		default:
			return nil
		}
		switch {
		case full.Load() == 1 && strings.Contains(path, "INDEX-META"),
			full.Load() == 2 && strings.HasPrefix(path, ledgers):
			return unix.ENOSPC
		}
		return nil
	})
	o := Options{
		FS: vfs.NewErrorFS(vfs.NewOS(), inj), JournalDir: t.TempDir(), LedgerDirs: []string{ledgers},
		CheckpointInterval: time.Hour, DiskCheckInterval: -1, GCInterval: -1, GCReserve: -1,
		IndexSlotsPerPage: 64, IndexPagesPerSegment: 64,
	}
	b, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	for e := int64(0); e < 4; e++ {
		if err := addSync(b, 8, e, mk, payloadFor(8, e, 1000), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	full.Store(1)
	const n7 = 40
	for e := int64(0); e < n7; e++ {
		if err := addSync(b, 7, e, mk, payloadFor(7, e, 64<<10), false); err != nil {
			t.Fatalf("add %d: %v", e, err)
		}
	}
	if err := b.Checkpoint(); !isNoSpace(err) {
		t.Fatalf("checkpoint with no room for the index's metadata: %v, want no space", err)
	}
	full.Store(2)
	if err := b.Close(); err != nil {
		t.Fatalf("close on a full volume: %v", err)
	}
	full.Store(0)
	b, err = Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for e := int64(0); e < 4; e++ {
		mustRead(t, b, 8, e, payloadFor(8, e, 1000))
	}
	for e := int64(0); e < n7; e++ {
		mustRead(t, b, 7, e, payloadFor(7, e, 64<<10))
	}
}
