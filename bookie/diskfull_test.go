package bookie

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/magnetar-mq/magnetar/internal/testenv"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

func logFiles(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	return filesWithSuffix(t, fs, dir, ".log")
}

// filesWithSuffix lists the names in dir ending in suffix.
func filesWithSuffix(t *testing.T, fs vfs.FS, dir, suffix string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, suffix) {
			out = append(out, n)
		}
	}
	return out
}

// TestDiskFullCheckpointRecovers: an ENOSPC from the entry log during a
// checkpoint turns the bookie read-only once; when space is back the next
// checkpoint succeeds and the bookie is writable again without a restart;
// nothing acknowledged is lost, also across a restart.
func TestDiskFullCheckpointRecovers(t *testing.T) {
	mem := vfs.NewMem()
	full := vfs.NewToggle(vfs.PathMatch("*.log", vfs.DiskFull()))
	b, err := Open(faultOptions(vfs.NewErrorFS(mem, full)))
	if err != nil {
		t.Fatal(err)
	}
	for e := int64(0); e < 50; e++ {
		if err := addSync(b, 3, e, mk, entryPayload(3, e), false); err != nil {
			t.Fatal(err)
		}
	}
	full.Enable()
	for range 3 {
		if err := b.Checkpoint(); !errors.Is(err, unix.ENOSPC) {
			t.Fatalf("checkpoint on a full disk = %v, want ENOSPC", err)
		}
	}
	if err := addSync(b, 3, 50, mk, entryPayload(3, 50), false); !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("add after ENOSPC = %v, want ErrReadOnly naming the lack of space", err)
	}
	full.Disable()
	if err := b.Checkpoint(); err != nil {
		t.Fatalf("checkpoint after space came back = %v", err)
	}
	if b.IsReadOnly() {
		t.Fatalf("still read-only after a good checkpoint: %v", b.ReadOnlyReason())
	}
	for e := int64(50); e < 60; e++ {
		if err := addSync(b, 3, e, mk, entryPayload(3, e), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	// A graceful stop on a full disk is not an error: the journal keeps
	// what the entry log could not take.
	if err := addSync(b, 3, 60, mk, entryPayload(3, 60), false); err != nil {
		t.Fatal(err)
	}
	full.Enable()
	if err := b.Close(); err != nil {
		t.Fatalf("Close on a full disk = %v", err)
	}
	full.Disable()
	b, err = Open(faultOptions(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for e := int64(0); e <= 60; e++ {
		mustRead(t, b, 3, e, entryPayload(3, e))
	}
}

// TestDiskFullGCReclaimsActiveLog: on a full disk, deleting a ledger whose
// entries sit in the active entry log (which never reached its size limit)
// frees that space: GC rolls the log and compacts it; the live ledger's
// entries survive and the bookie becomes writable once usage drops.
func TestDiskFullGCReclaimsActiveLog(t *testing.T) {
	mem := vfs.NewMem()
	fs := vfs.NewErrorFS(mem, vfs.Never)
	o := faultOptions(fs)
	o.EntryLogMaxSize = 1 << 30
	b, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for e := int64(0); e < 200; e++ {
		if err := addSync(b, 7, e, mk, entryPayload(7, e), false); err != nil {
			t.Fatal(err)
		}
		if e%20 == 0 {
			if err := addSync(b, 8, e/20, mk, entryPayload(8, e/20), false); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	before := logFiles(t, mem, "/bk/ledgers")
	// The active log (and maybe the next one, prepared empty).
	if !slices.Contains(before, "00000001.log") {
		t.Fatalf("entry logs before = %v, want the active log 1", before)
	}
	fs.SetDiskUsage(1000<<20, 30<<20) // 97% used
	if err := b.CheckDisks(); err != nil {
		t.Fatal(err)
	}
	if !b.IsReadOnly() {
		t.Fatal("not read-only at 97%")
	}
	if err := b.GC(); err != nil { // nothing deleted yet: nothing to roll
		t.Fatal(err)
	}
	if got := logFiles(t, mem, "/bk/ledgers"); !slices.Contains(got, "00000001.log") {
		t.Fatalf("entry logs after GC with nothing deleted = %v, want %v", got, before)
	}
	if err := b.DeleteLedger(7); err != nil {
		t.Fatal(err)
	}
	if err := b.GC(); err != nil {
		t.Fatal(err)
	}
	after := logFiles(t, mem, "/bk/ledgers")
	for _, n := range after {
		if n == "00000001.log" {
			t.Fatalf("entry log %s of the deleted ledger still there after GC (logs %v)", n, after)
		}
	}
	// On a full disk the delete is not paced: the space is back when GC
	// returns, nothing waits in the trash.
	if trash := trashFiles(t, mem, "/bk/ledgers"); len(trash) != 0 {
		t.Fatalf("full disk: GC left %v to be freed later", trash)
	}
	for e := int64(0); e < 10; e++ {
		mustRead(t, b, 8, e, entryPayload(8, e))
	}
	if _, err := b.ReadEntry(7, 0); err == nil {
		t.Fatal("deleted ledger still readable")
	}
	fs.SetDiskUsage(1000<<20, 500<<20)
	if err := b.CheckDisks(); err != nil {
		t.Fatal(err)
	}
	if err := addSync(b, 8, 10, mk, entryPayload(8, 10), false); err != nil {
		t.Fatalf("add after space was reclaimed = %v", err)
	}
}

// TestDiskBudgetChecksEarly: adds that spend the headroom below the
// threshold trigger a disk check at once, long before the periodic one.
func TestDiskBudgetChecksEarly(t *testing.T) {
	mem := vfs.NewMem()
	fs := vfs.NewErrorFS(mem, vfs.Never)
	fs.SetDiskUsage(1000<<20, 60<<20) // 94%: 10 MiB below the threshold
	o := faultOptions(fs)
	o.DiskCheckInterval = time.Hour
	b, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.IsReadOnly() {
		t.Fatal("read-only at 94%")
	}
	// The volume "fills" behind the bookie's back; only a check sees it.
	fs.SetDiskUsage(1000<<20, 10<<20)
	payload := make([]byte, 64<<10)
	deadline := time.Now().Add(10 * time.Second)
	e := int64(0)
	for !b.IsReadOnly() {
		if time.Now().After(deadline) {
			t.Fatalf("not read-only after %d adds of 64 KiB (budget %d)", e, b.diskBudget.Load())
		}
		if e > 200 { // 200 × 128 KiB spent is 10× the budget of 2.5 MiB
			time.Sleep(time.Millisecond) // the kicked check runs on the disk loop
		}
		err := addSync(b, 1, e, mk, payload, false)
		if err != nil && !errors.Is(err, ErrReadOnly) {
			t.Fatal(err)
		}
		e++
	}
	if e > 400 {
		t.Fatalf("%d adds before the check: budget not enforced", e)
	}
}

// TestDiskCheckCountsWriteCache: entries still in the write cache are on
// disk in the journal only; a ledger directory's usage counts them, so a
// volume whose free space they would take past the threshold makes the
// bookie read-only before the checkpoint that needs that space.
func TestDiskCheckCountsWriteCache(t *testing.T) {
	mem := vfs.NewMem()
	fs := vfs.NewErrorFS(mem, vfs.Never)
	fs.SetDiskUsage(1000<<20, 60<<20) // 94%: 10 MiB below the threshold
	o := faultOptions(fs)
	o.DiskCheckInterval, o.CheckpointInterval = time.Hour, time.Hour
	o.WriteCacheSize = 64 << 20 // halves of 32 MiB: no checkpoint for a full half
	b, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.CheckDisks(); err != nil || b.IsReadOnly() {
		t.Fatalf("read-only at 94%% with an empty cache: %v", b.ReadOnlyReason())
	}
	// The volume's reported usage stays at 94% throughout: only the
	// cached bytes can take it past the threshold.
	payload := make([]byte, 64<<10)
	deadline := time.Now().Add(10 * time.Second)
	e := int64(0)
	for !b.IsReadOnly() {
		if time.Now().After(deadline) || e > 400 {
			t.Fatalf("writable after %d adds of 64 KiB into the write cache", e)
		}
		if e > 200 { // past the 10 MiB headroom: check here rather than wait for the kicked check
			if err := b.CheckDisks(); err != nil {
				t.Fatal(err)
			}
		}
		if err := addSync(b, 1, e, mk, payload, false); err != nil && !errors.Is(err, ErrReadOnly) {
			t.Fatal(err)
		}
		e++
	}
	if active, frozen := b.wc.size(); e < 100 || active+frozen < 6<<20 {
		t.Fatalf("read-only after %d adds with %d bytes cached: before the cache neared the headroom", e, active+frozen)
	}
	if !strings.Contains(b.ReadOnlyReason().Error(), "ledgers") {
		t.Fatalf("read-only for %v, want the ledger directory's usage", b.ReadOnlyReason())
	}
	// Space came back to just below the low-water mark (89.8%), less than
	// the cached bytes: still read-only while they are cached, writable
	// once a checkpoint put them in the entry log (which the fake volume
	// does not count).
	fs.SetDiskUsage(1000<<20, 102<<20)
	if err := b.CheckDisks(); err != nil || !b.IsReadOnly() {
		t.Fatalf("writable with the cached bytes over the low-water mark (%v)", err)
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := b.CheckDisks(); err != nil {
		t.Fatal(err)
	}
	if b.IsReadOnly() {
		t.Fatalf("read-only after the checkpoint emptied the cache: %v", b.ReadOnlyReason())
	}
}

// TestDiskFullTmpfsGCWithNoSpaceLeft: on a real 16 MiB file system that
// is 100 % full (the bookie's own data plus another file took the last
// byte), deleting the ledger that filled it gives the space back: GC
// rolls the active entry log and compacts the kept ledger's entries out
// of it without a byte free, because it spends the reserve it set aside
// while there was room; the bookie turns writable by itself and every
// entry of the kept ledger reads back. (GC used to fail at the roll or
// on the compaction's preallocation, and each failed attempt left more
// copies behind.)
func TestDiskFullTmpfsGCWithNoSpaceLeft(t *testing.T) {
	ledgers := testenv.MountTmpfs(t, 16<<20)
	o := Options{
		FS: vfs.NewOS(), JournalDir: t.TempDir(), LedgerDirs: []string{ledgers},
		CheckpointInterval: time.Hour, DiskCheckInterval: -1, GCInterval: -1,
		IndexSlotsPerPage: 64, IndexPagesPerSegment: 64,
	}
	b, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var kept int64
	for e := int64(0); ; e++ {
		if err := addSync(b, 7, e, mk, payloadFor(7, e, 64<<10), false); err != nil {
			if !errors.Is(err, ErrReadOnly) {
				t.Fatalf("add %d: %v", e, err)
			}
			break
		}
		if e%8 == 0 {
			if err := addSync(b, 8, kept, mk, payloadFor(8, kept, 1000), false); err != nil {
				t.Fatal(err)
			}
			kept++
		}
		if e%16 == 15 {
			if err := b.Checkpoint(); err != nil && !isNoSpace(err) {
				t.Fatal(err)
			}
			if err := b.CheckDisks(); err != nil {
				t.Fatal(err)
			}
		}
		if e > 1000 {
			t.Fatal("16 MiB did not fill")
		}
	}
	if _, err := os.Stat(filepath.Join(ledgers, reserveName)); err != nil {
		t.Fatalf("no GC reserve: %v", err)
	}
	// Whatever room is left goes to another file: 0 bytes free.
	ballast := filepath.Join(ledgers, "ballast")
	testenv.FillUp(t, ballast)
	if err := b.DeleteLedger(7); err != nil && !isNoSpace(err) {
		t.Fatal(err)
	}
	if err := b.GC(); err != nil {
		t.Fatalf("GC on a full disk: %v", err)
	}
	if err := b.CheckDisks(); err != nil {
		t.Fatal(err)
	}
	if b.IsReadOnly() {
		t.Fatalf("still read-only after deleting the ledger that filled the disk: %v", b.ReadOnlyReason())
	}
	for e := range kept {
		mustRead(t, b, 8, e, payloadFor(8, e, 1000))
	}
	if err := addSync(b, 8, kept, mk, payloadFor(8, kept, 1000), false); err != nil {
		t.Fatalf("add after GC: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ledgers, reserveName)); err != nil {
		t.Fatalf("GC reserve not set aside again once writable: %v", err)
	}
	os.Remove(ballast)
}

// TestDiskFullTmpfsOpenWithNoSpaceLeft: a bookie whose journal and ledger
// directory share a 32 MiB tmpfs (the standalone's layout; the journal
// preallocates 16 MiB of it) fills it, stops, and something else takes
// the last byte. It opens again (the journal's
// next file comes out of the GC reserve; it used to fail with "journal:
// create ...: no space left on device"), read-only, every acknowledged
// entry reads back, and deleting the ledger that filled the volume makes
// it writable again.
func TestDiskFullTmpfsOpenWithNoSpaceLeft(t *testing.T) {
	vol := testenv.MountTmpfs(t, 32<<20)
	o := Options{
		FS: vfs.NewOS(), JournalDir: filepath.Join(vol, "journal"), LedgerDirs: []string{filepath.Join(vol, "ledgers")},
		CheckpointInterval: time.Hour, DiskCheckInterval: -1, GCInterval: -1,
		IndexSlotsPerPage: 64, IndexPagesPerSegment: 64,
	}
	b, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	var filled, kept int64
	for e := int64(0); ; e++ {
		if err := addSync(b, 7, e, mk, payloadFor(7, e, 64<<10), false); err != nil {
			if !errors.Is(err, ErrReadOnly) {
				t.Fatalf("add %d: %v", e, err)
			}
			break
		}
		filled++
		if e%8 == 0 {
			if err := addSync(b, 8, kept, mk, payloadFor(8, kept, 1000), false); err != nil {
				t.Fatal(err)
			}
			kept++
		}
		if e%16 == 15 {
			if err := b.Checkpoint(); err != nil && !isNoSpace(err) {
				t.Fatal(err)
			}
			if err := b.CheckDisks(); err != nil {
				t.Fatal(err)
			}
		}
		if e > 1000 {
			t.Fatal("32 MiB did not fill")
		}
	}
	if _, err := os.Stat(filepath.Join(o.LedgerDirs[0], reserveName)); err != nil {
		t.Fatalf("no GC reserve: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("close on a full volume: %v", err)
	}
	ballast := filepath.Join(vol, "ballast")
	testenv.FillUp(t, ballast)
	defer os.Remove(ballast)

	b, err = Open(o)
	if err != nil {
		t.Fatalf("open on a full volume: %v", err)
	}
	defer b.Close()
	if err := b.CheckDisks(); err != nil {
		t.Fatal(err)
	}
	if !b.IsReadOnly() {
		t.Fatal("writable on a full volume")
	}
	for e := range filled {
		mustRead(t, b, 7, e, payloadFor(7, e, 64<<10))
	}
	for e := range kept {
		mustRead(t, b, 8, e, payloadFor(8, e, 1000))
	}
	if err := b.DeleteLedger(7); err != nil && !isNoSpace(err) {
		t.Fatal(err)
	}
	if err := b.GC(); err != nil {
		t.Fatalf("GC on a full volume: %v", err)
	}
	if err := b.CheckDisks(); err != nil {
		t.Fatal(err)
	}
	if b.IsReadOnly() {
		t.Fatalf("still read-only after deleting the ledger that filled the volume: %v", b.ReadOnlyReason())
	}
	if err := addSync(b, 8, kept, mk, payloadFor(8, kept, 1000), false); err != nil {
		t.Fatalf("add after GC: %v", err)
	}
	mustRead(t, b, 8, kept, payloadFor(8, kept, 1000))
}
