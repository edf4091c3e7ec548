package bookie

import (
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestDeleteCrashLeavesTrash: GC's delete of a dead entry log renames it
// aside at once and frees it in the background (Options.DeleteRate). A
// crash before it is freed leaves the renamed file; the next Open does not
// take it for a log, sweeps it, and every entry of the live ledgers reads
// back byte for byte, while the deleted ledgers stay deleted.
func TestDeleteCrashLeavesTrash(t *testing.T) {
	mem := vfs.NewMem()
	hold := make(chan struct{})
	// The background removal waits here until the crash image is taken.
	fs := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op, p string) error {
		if op == vfs.OpOpenReadWrite && strings.HasSuffix(p, vfs.TrashSuffix) {
			<-hold
		}
		return nil
	}))
	b := openFiveLedgers(t, faultOptions(fs))
	deleteLedgers(t, b, 1, 2, 4)
	if err := b.GC(); err != nil {
		t.Fatal(err)
	}
	if len(trashFiles(t, mem, "/bk/ledgers")) == 0 {
		t.Fatal("GC left nothing to free in the background")
	}
	crashed := mem.CrashClone()
	close(hold)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	if len(trashFiles(t, crashed, "/bk/ledgers")) == 0 {
		t.Fatal("the crash image lost the renames (the directory was synced after them)")
	}
	o2 := faultOptions(crashed)
	o2.EntryLogMaxSize = 64 << 10
	b2, err := Open(o2)
	if err != nil {
		t.Fatalf("open after a crash with deletes under way: %v", err)
	}
	defer b2.Close()
	b2.rm.Wait()
	if trash := trashFiles(t, crashed, "/bk/ledgers"); len(trash) != 0 {
		t.Fatalf("the restart did not sweep %v", trash)
	}
	for _, l := range []int64{3, 5} {
		for e := int64(0); e < 100; e++ {
			mustRead(t, b2, l, e, entryPayload(l, e))
		}
	}
	for _, l := range []int64{1, 2, 4} {
		if _, err := b2.ReadEntry(l, 0); err == nil {
			t.Fatalf("deleted ledger %d readable after the restart", l)
		}
	}
}
