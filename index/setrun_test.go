package index

import (
	"errors"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestSetRun: runs that start and end inside pages, span several pages,
// allocate pages and reuse allocated ones give the same locations as Set
// would, survive Flush and reopen, and move LastEntry only forward; a run
// with a zero location or out of range sets nothing.
func TestSetRun(t *testing.T) {
	modes(t, func(t *testing.T, fs vfs.FS, dir string) {
		ix := openPPS(t, fs, dir, 64) // 8 slots per page
		want := map[[2]int64]uint64{}
		run := func(ledger, first int64, n int, version uint64) {
			t.Helper()
			locs := make([]uint64, n)
			for i := range locs {
				e := first + int64(i)
				locs[i] = loc(ledger, e, version)
				want[[2]int64{ledger, e}] = locs[i]
			}
			if err := ix.SetRun(ledger, first, locs); err != nil {
				t.Fatalf("SetRun(%d, %d, %d locs) = %v", ledger, first, n, err)
			}
		}
		run(1, 0, 3, 1)   // inside page 0
		run(1, 3, 30, 1)  // rest of page 0, pages 1-3, part of 4
		run(2, 5, 1, 1)   // one slot, a new ledger
		run(2, 20, 17, 1) // a hole before it: pages 2-4 of ledger 2
		run(1, 10, 4, 2)  // overwrite inside allocated pages
		if err := ix.Set(1, 40, loc(1, 40, 1)); err != nil {
			t.Fatal(err)
		}
		want[[2]int64{1, 40}] = loc(1, 40, 1)
		run(1, 33, 2, 3) // behind LastEntry: it must stay 40
		check := func(ix *Index) {
			t.Helper()
			for k, w := range want {
				got, ok := ix.Get(k[0], k[1])
				if !ok || got != w {
					t.Fatalf("Get(%d, %d) = %#x, %v, want %#x", k[0], k[1], got, ok, w)
				}
			}
			for _, k := range [][2]int64{{1, 35}, {2, 4}, {2, 6}, {2, 19}, {2, 37}} {
				if got, ok := ix.Get(k[0], k[1]); ok {
					t.Fatalf("Get(%d, %d) = %#x, want none", k[0], k[1], got)
				}
			}
			for l, w := range map[int64]int64{1: 40, 2: 36} {
				if got, ok := ix.LastEntry(l); !ok || got != w {
					t.Fatalf("LastEntry(%d) = %d, %v, want %d", l, got, ok, w)
				}
			}
		}
		check(ix)
		if err := ix.SetRun(1, 50, []uint64{7, 0, 9}); !errors.Is(err, ErrOutOfRange) {
			t.Fatalf("SetRun with a zero location = %v, want ErrOutOfRange", err)
		}
		if err := ix.SetRun(-1, 0, []uint64{7}); !errors.Is(err, ErrOutOfRange) {
			t.Fatalf("SetRun of ledger -1 = %v, want ErrOutOfRange", err)
		}
		if err := ix.SetRun(1, 0, nil); err != nil {
			t.Fatalf("SetRun of nothing = %v", err)
		}
		check(ix) // entry 50 was not set
		if err := ix.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		ix = openPPS(t, fs, dir, 64)
		defer ix.Close()
		check(ix)
	})
}
