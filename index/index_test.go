package index

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// loc encodes (ledger, entry, version) so a wrong answer is recognisable.
func loc(ledger, entry int64, version uint64) uint64 {
	return uint64(ledger)<<40 | uint64(entry)<<8 | version
}

func open(t testing.TB, fs vfs.FS, dir string) *Index {
	t.Helper()
	return openPPS(t, fs, dir, 16)
}

// flushReopen flushes and closes ix and opens the index in dir again.
func flushReopen(t testing.TB, ix *Index, fs vfs.FS, dir string) *Index {
	t.Helper()
	if err := ix.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	return open(t, fs, dir)
}

func openPPS(t testing.TB, fs vfs.FS, dir string, pps int) *Index {
	t.Helper()
	ix, err := Open(Options{FS: fs, Dir: dir, SlotsPerPage: 8, PagesPerSegment: pps})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// modes runs f with a heap-mode MemFS index and an mmap'd OS index.
func modes(t *testing.T, f func(t *testing.T, fs vfs.FS, dir string)) {
	t.Run("mem", func(t *testing.T) { f(t, vfs.NewMem(), "/ix") })
	t.Run("os-mmap", func(t *testing.T) { f(t, vfs.NewOS(), t.TempDir()+"/ix") })
}

func TestSetGetReopen(t *testing.T) {
	modes(t, func(t *testing.T, fs vfs.FS, dir string) {
		ix := openPPS(t, fs, dir, 128)
		want := map[[2]int64]uint64{}
		if fs, ok := fs.(*vfs.OSFS); ok && fs != nil {
			if err := ix.Set(1, 0, 1); err != nil {
				t.Fatal(err)
			}
			want[[2]int64{1, 0}] = 1
			if (*ix.segs.Load())[0].mmap == nil {
				t.Fatal("OS index not mmap'd")
			}
		}
		rng := rand.New(rand.NewPCG(1, 1))
		for i := range 3000 {
			l, e := int64(rng.IntN(40)), int64(rng.IntN(200))
			v := loc(l, e, uint64(i%250+1))
			if err := ix.Set(l, e, v); err != nil {
				t.Fatal(err)
			}
			want[[2]int64{l, e}] = v
		}
		check := func(ix *Index) {
			t.Helper()
			last := map[int64]int64{}
			for k, v := range want {
				if got, ok := ix.Get(k[0], k[1]); !ok || got != v {
					t.Fatalf("Get(%d, %d) = %#x, %v, want %#x", k[0], k[1], got, ok, v)
				}
				last[k[0]] = max(last[k[0]], k[1])
			}
			for l, e := range last {
				if got, ok := ix.LastEntry(l); !ok || got != e {
					t.Fatalf("LastEntry(%d) = %d, %v, want %d", l, got, ok, e)
				}
			}
			if got := len(ix.Ledgers()); got != len(last) {
				t.Fatalf("len(Ledgers()) = %d, want %d", got, len(last))
			}
			for l := range last {
				var got []int64
				ix.Entries(l, func(e int64, v uint64) bool {
					if want[[2]int64{l, e}] != v {
						t.Fatalf("Entries(%d) yielded %d:%#x, want %#x", l, e, v, want[[2]int64{l, e}])
					}
					got = append(got, e)
					return true
				})
				if !slices.IsSorted(got) {
					t.Fatalf("Entries(%d) out of order: %v", l, got)
				}
				for e := range int64(200) {
					if _, ok := want[[2]int64{l, e}]; ok != slices.Contains(got, e) {
						t.Fatalf("Entries(%d): entry %d yielded %v, want %v", l, e, !ok, ok)
					}
				}
			}
			n := 0
			ix.Entries(1, func(int64, uint64) bool { n++; return n < 3 })
			if n != 3 {
				t.Fatalf("Entries did not stop when fn returned false: %d calls", n)
			}
			if _, ok := ix.Get(1000, 0); ok {
				t.Fatal("Get of an unknown ledger found something")
			}
			if _, ok := ix.LastEntry(1000); ok {
				t.Fatal("LastEntry of an unknown ledger ok")
			}
		}
		check(ix)
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		if err := ix.Set(1, 1, 1); !errors.Is(err, ErrClosed) {
			t.Fatalf("Set after Close = %v, want ErrClosed", err)
		}
		ix = open(t, fs, dir) // the geometry comes from the files
		defer ix.Close()
		check(ix)
		pages := map[[2]int64]bool{}
		for k := range want {
			pages[[2]int64{k[0], k[1] / 8}] = true
		}
		st := ix.Stats()
		if st.Pages-st.FreePages != len(pages) || st.Segments != (len(pages)+127)/128 {
			t.Fatalf("Stats = %+v, want %d pages used in %d segments", st, len(pages), (len(pages)+127)/128)
		}
	})
}

func TestSetErrors(t *testing.T) {
	ix := open(t, vfs.NewMem(), "/ix")
	defer ix.Close()
	for _, c := range []struct{ l, e int64 }{{-1, 0}, {1, -1}, {1, int64(maxPageTable) * 8}} {
		if err := ix.Set(c.l, c.e, 5); !errors.Is(err, ErrOutOfRange) {
			t.Fatalf("Set(%d, %d) = %v, want ErrOutOfRange", c.l, c.e, err)
		}
	}
	if err := ix.Set(1, 1, 0); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("Set(loc 0) = %v, want ErrOutOfRange", err)
	}
	if err := ix.SetMeta(-2, Meta{}); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("SetMeta(-2) = %v, want ErrOutOfRange", err)
	}
}

func TestMetaAndDelete(t *testing.T) {
	modes(t, func(t *testing.T, fs vfs.FS, dir string) {
		ix := open(t, fs, dir)
		key := []byte("secret")
		if err := ix.SetMeta(5, Meta{MasterKey: key}); err != nil {
			t.Fatal(err)
		}
		key[0] = 'X' // the index keeps its own copy
		if err := ix.UpdateMeta(5, func(m *Meta) { m.Fenced = true; m.ExplicitLAC = []byte("lac") }); err != nil {
			t.Fatal(err)
		}
		if !ix.Exists(5) || ix.Exists(6) {
			t.Fatal("Exists wrong")
		}
		for e := range int64(40) {
			if err := ix.Set(6, e, loc(6, e, 1)); err != nil {
				t.Fatal(err)
			}
		}
		if err := ix.Flush(); err != nil {
			t.Fatal(err)
		}
		before := ix.Stats()
		if err := ix.Delete(6); err != nil {
			t.Fatal(err)
		}
		if err := ix.Delete(12345); err != nil {
			t.Fatalf("Delete(unknown) = %v", err)
		}
		if _, ok := ix.Get(6, 3); ok || ix.Exists(6) {
			t.Fatal("ledger 6 visible after Delete")
		}
		// Freed pages wait for the Flush that makes the delete durable.
		if st := ix.Stats(); st.PendingFreePages != 5 || st.FreePages != before.FreePages {
			t.Fatalf("Stats after Delete = %+v, want 5 pending pages (before %+v)", st, before)
		}
		if err := ix.Flush(); err != nil {
			t.Fatal(err)
		}
		if st := ix.Stats(); st.PendingFreePages != 0 || st.FreePages != before.FreePages+5 {
			t.Fatalf("Stats after Flush = %+v, want the 5 pages free", st)
		}
		// Reused pages are zeroed.
		if err := ix.Set(7, 0, loc(7, 0, 1)); err != nil {
			t.Fatal(err)
		}
		for e := int64(1); e < 8; e++ {
			if got, ok := ix.Get(7, e); ok {
				t.Fatalf("Get(7, %d) = %#x on a reused page, want absent", e, got)
			}
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		ix = open(t, fs, dir)
		defer ix.Close()
		m, ok := ix.GetMeta(5)
		if !ok || !m.Fenced || string(m.MasterKey) != "secret" || string(m.ExplicitLAC) != "lac" {
			t.Fatalf("GetMeta(5) after reopen = %+v, %v", m, ok)
		}
		if last, ok := ix.LastEntry(5); !ok || last != -1 {
			t.Fatalf("LastEntry(5) = %d, %v, want -1 (no entries)", last, ok)
		}
		if ix.Exists(6) {
			t.Fatal("deleted ledger 6 back after reopen")
		}
		if got, ok := ix.Get(7, 0); !ok || got != loc(7, 0, 1) {
			t.Fatalf("Get(7, 0) after reopen = %#x, %v", got, ok)
		}
	})
}

func TestOpenCorrupt(t *testing.T) {
	build := func(t *testing.T) *vfs.MemFS {
		fs := vfs.NewMem()
		ix := open(t, fs, "/ix")
		for e := range int64(200) {
			if err := ix.Set(e%3, e, loc(e%3, e, 1)); err != nil {
				t.Fatal(err)
			}
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		return fs
	}
	cases := []struct {
		name    string
		corrupt func(t *testing.T, fs *vfs.MemFS)
		want    string
	}{
		{"meta bit flip", func(t *testing.T, fs *vfs.MemFS) {
			b := readAll(t, fs, "/ix/"+MetaFile)
			b[30] ^= 1
			writeAll(t, fs, "/ix/"+MetaFile, b)
		}, "checksum"},
		{"page out of range", func(t *testing.T, fs *vfs.MemFS) {
			rewriteMeta(t, fs, func(r []ledgerRecord) { r[0].Pages[0] = 1000 })
		}, "missing or shared"},
		{"page shared", func(t *testing.T, fs *vfs.MemFS) {
			rewriteMeta(t, fs, func(r []ledgerRecord) { r[1].Pages[0] = r[0].Pages[0] })
		}, "missing or shared"},
		{"segment missing", func(t *testing.T, fs *vfs.MemFS) {
			if err := fs.Remove("/ix/00000000.seg"); err != nil {
				t.Fatal(err)
			}
		}, "segment 0 missing"},
		{"segment header", func(t *testing.T, fs *vfs.MemFS) {
			b := readAll(t, fs, "/ix/00000001.seg")
			b[0] = 'Q'
			writeAll(t, fs, "/ix/00000001.seg", b)
		}, "00000001.seg: bad segment magic"},
		{"segment geometry", func(t *testing.T, fs *vfs.MemFS) {
			b := readAll(t, fs, "/ix/00000001.seg")
			copy(b, AppendSegmentHeader(nil, SegmentHeader{SlotsPerPage: 16, PagesPerSegment: 16, Segment: 1}))
			writeAll(t, fs, "/ix/00000001.seg", b)
		}, "want segment 1 with 8 slots x 16 pages"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := build(t)
			tc.corrupt(t, fs)
			_, err := Open(Options{FS: fs, Dir: "/ix"})
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open = %v, want ErrCorrupt mentioning %q", err, tc.want)
			}
		})
	}
}

func rewriteMeta(t *testing.T, fs *vfs.MemFS, mutate func([]ledgerRecord)) {
	t.Helper()
	h, recs, err := decodeMeta(readAll(t, fs, "/ix/"+MetaFile))
	if err != nil {
		t.Fatal(err)
	}
	mutate(recs)
	writeAll(t, fs, "/ix/"+MetaFile, appendMeta(nil, h, recs))
}

// TestConcurrentSetGetFlush (for -race): setters on their own ledgers,
// readers checking every location they see, a flusher and a deleter.
func TestConcurrentSetGetFlush(t *testing.T) {
	modes(t, func(t *testing.T, fs vfs.FS, dir string) {
		ix := open(t, fs, dir)
		defer ix.Close()
		const setters, perSetter = 3, 2000
		var wg, bg sync.WaitGroup
		done := make(chan struct{})
		errc := make(chan error, 16)
		for s := range setters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for e := range int64(perSetter) {
					if err := ix.Set(int64(s), e, loc(int64(s), e, 1)); err != nil {
						errc <- err
						return
					}
					if e%100 == 0 {
						if err := ix.UpdateMeta(int64(s), func(m *Meta) { m.ExplicitLAC = []byte(fmt.Sprint(e)) }); err != nil {
							errc <- err
							return
						}
					}
				}
			}()
		}
		bg.Add(3)
		go func() {
			defer bg.Done()
			rng := rand.New(rand.NewPCG(1, 2))
			for {
				select {
				case <-done:
					return
				default:
				}
				l, e := int64(rng.IntN(setters)), int64(rng.IntN(perSetter))
				if got, ok := ix.Get(l, e); ok && got != loc(l, e, 1) {
					errc <- fmt.Errorf("Get(%d, %d) = %#x, want %#x", l, e, got, loc(l, e, 1))
					return
				}
				if last, ok := ix.LastEntry(l); ok && last >= 0 {
					if _, ok := ix.Get(l, last); !ok {
						errc <- fmt.Errorf("LastEntry(%d) = %d but Get finds nothing", l, last)
						return
					}
				}
			}
		}()
		go func() {
			defer bg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := ix.Flush(); err != nil {
					errc <- err
					return
				}
			}
		}()
		go func() {
			// Churn other ledgers so pages are freed and reused meanwhile.
			defer bg.Done()
			for i := int64(0); ; i++ {
				select {
				case <-done:
					return
				default:
				}
				l := 100 + i%5
				for e := range int64(30) {
					if err := ix.Set(l, e, loc(l, e, 1)); err != nil {
						errc <- err
						return
					}
				}
				if err := ix.Delete(l); err != nil {
					errc <- err
					return
				}
			}
		}()
		wg.Wait()
		close(done)
		bg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		for s := range int64(setters) {
			for e := range int64(perSetter) {
				if got, ok := ix.Get(s, e); !ok || got != loc(s, e, 1) {
					t.Fatalf("final Get(%d, %d) = %#x, %v", s, e, got, ok)
				}
			}
		}
	})
}

// TestManyLedgersFewFiles: 100k ledgers (3k under -race) share a handful
// of segment files.
func TestManyLedgersFewFiles(t *testing.T) {
	fs := vfs.NewMem()
	n, pps := 100_000, 16384
	if raceEnabled {
		n, pps = 3_000, 492
	}
	ix, err := Open(Options{FS: fs, Dir: "/ix", SlotsPerPage: 16, PagesPerSegment: pps})
	if err != nil {
		t.Fatal(err)
	}
	for l := range int64(n) {
		if err := ix.Set(l, 0, loc(l, 0, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	names, err := fs.List("/ix")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 9 { // 7 segments + metadata file + metadata log
		t.Fatalf("%d files for %d ledgers (%v), want 9", len(names), n, names)
	}
	ix, err = Open(Options{FS: fs, Dir: "/ix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if got := len(ix.Ledgers()); got != n {
		t.Fatalf("%d ledgers after reopen, want %d", got, n)
	}
	for l := int64(0); l < int64(n); l += 997 {
		if got, ok := ix.Get(l, 0); !ok || got != loc(l, 0, 1) {
			t.Fatalf("Get(%d, 0) = %#x, %v", l, got, ok)
		}
	}
}
