package index

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestSegmentNoSpaceNotSticky: a segment that cannot be created for lack
// of space fails only that Set; once space is back the index allocates it
// and keeps working, and what was set survives a reopen.
func TestSegmentNoSpaceNotSticky(t *testing.T) {
	mem := vfs.NewMem()
	full := vfs.NewToggle(vfs.PathMatch("*.seg", vfs.DiskFull()))
	ix, err := Open(Options{FS: vfs.NewErrorFS(mem, full), Dir: "/ix", SlotsPerPage: 8, PagesPerSegment: 2, NoMmap: true})
	if err != nil {
		t.Fatal(err)
	}
	// Two pages fill the first segment.
	for e := int64(0); e < 16; e++ {
		if err := ix.Set(1, e, uint64(100+e)); err != nil {
			t.Fatal(err)
		}
	}
	full.Enable()
	for range 3 {
		if err := ix.Set(1, 16, 116); !errors.Is(err, unix.ENOSPC) {
			t.Fatalf("Set needing a new segment on a full disk = %v, want ENOSPC", err)
		}
	}
	full.Disable()
	for e := int64(16); e < 40; e++ {
		if err := ix.Set(1, e, uint64(100+e)); err != nil {
			t.Fatalf("Set(%d) after space came back = %v", e, err)
		}
	}
	if err := ix.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix, err = Open(Options{FS: mem, Dir: "/ix", SlotsPerPage: 8, PagesPerSegment: 2, NoMmap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	for e := int64(0); e < 40; e++ {
		if loc, ok := ix.Get(1, e); !ok || loc != uint64(100+e) {
			t.Fatalf("Get(1, %d) = %d, %v after reopen", e, loc, ok)
		}
	}
}
