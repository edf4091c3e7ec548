package index

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// crashFS takes a random crash clone of a MemFS just before its at-th
// mutating operation (writes, syncs, truncates, creates, renames, ...).
type crashFS struct {
	*vfs.MemFS
	n, at int
	seed  uint64
	clone *vfs.MemFS
}

func (c *crashFS) tick() {
	c.n++
	if c.n == c.at {
		c.clone = c.MemFS.CrashCloneRandom(rand.New(rand.NewPCG(c.seed, uint64(c.at))))
	}
}

type crashFile struct {
	vfs.File
	c *crashFS
}

func (c *crashFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &crashFile{f, c}, nil
}
func (c *crashFS) Create(name string) (vfs.File, error) {
	c.tick()
	return c.wrap(c.MemFS.Create(name))
}
func (c *crashFS) OpenReadWrite(name string) (vfs.File, error) {
	return c.wrap(c.MemFS.OpenReadWrite(name))
}
func (c *crashFS) Rename(a, b string) error { c.tick(); return c.MemFS.Rename(a, b) }
func (c *crashFS) Remove(a string) error    { c.tick(); return c.MemFS.Remove(a) }
func (c *crashFS) SyncDir(d string) error   { c.tick(); return c.MemFS.SyncDir(d) }
func (c *crashFS) MkdirAll(d string, p os.FileMode) error {
	c.tick()
	return c.MemFS.MkdirAll(d, p)
}
func (f *crashFile) WriteAt(p []byte, off int64) (int, error) {
	f.c.tick()
	return f.File.WriteAt(p, off)
}
func (f *crashFile) Sync() error            { f.c.tick(); return f.File.Sync() }
func (f *crashFile) Truncate(n int64) error { f.c.tick(); return f.File.Truncate(n) }

// model is what the test knows about the index.
type model struct {
	versions map[[2]int64]map[uint64]bool // every location ever set
	cur      map[[2]int64]uint64
	meta     map[int64]Meta
	metas    map[int64][]Meta // every meta ever set
	deletes  map[int64][]int  // crashFS ops done at each Delete of a ledger
}

// deletedAfter reports whether ledger l was deleted after the first ops
// operations: its entries flushed before may then be gone (the deletion,
// made durable by a later Flush that had not returned at the crash).
func (m *model) deletedAfter(l int64, ops int) bool {
	for _, at := range m.deletes[l] {
		if at >= ops {
			return true
		}
	}
	return false
}

type flushPoint struct {
	ops  int // crashFS ops done when the flush returned
	cur  map[[2]int64]uint64
	meta map[int64]Meta
}

// crashScenario runs a deterministic workload and returns the completed
// flushes and the model.
func crashScenario(t *testing.T, fs *crashFS, seed uint64, logLimit int64) ([]flushPoint, *model) {
	rng := rand.New(rand.NewPCG(seed, 5))
	m := &model{versions: map[[2]int64]map[uint64]bool{}, cur: map[[2]int64]uint64{}, meta: map[int64]Meta{}, metas: map[int64][]Meta{}, deletes: map[int64][]int{}}
	ix, err := Open(Options{FS: fs, Dir: "/ix", SlotsPerPage: 8, PagesPerSegment: 8, MetaLogLimit: logLimit})
	if err != nil {
		t.Fatal(err)
	}
	var flushes []flushPoint
	version := uint64(0)
	for round := range 6 {
		for range 60 + rng.IntN(60) {
			l, e := int64(rng.IntN(6)+round), int64(rng.IntN(40))
			switch r := rng.IntN(20); {
			case r == 0:
				if err := ix.Delete(l); err != nil {
					t.Fatal(err)
				}
				m.deletes[l] = append(m.deletes[l], fs.n)
				for k := range m.cur {
					if k[0] == l {
						delete(m.cur, k)
					}
				}
				delete(m.meta, l)
			case r < 3:
				version++
				meta := Meta{Fenced: r == 1, MasterKey: []byte(fmt.Sprint("key", l)), ExplicitLAC: []byte(fmt.Sprint(version))}
				if err := ix.SetMeta(l, meta); err != nil {
					t.Fatal(err)
				}
				m.meta[l] = meta
				m.metas[l] = append(m.metas[l], meta)
			default:
				version++
				v := loc(l, e, version%200+1)
				if err := ix.Set(l, e, v); err != nil {
					t.Fatal(err)
				}
				k := [2]int64{l, e}
				if m.versions[k] == nil {
					m.versions[k] = map[uint64]bool{}
				}
				m.versions[k][v] = true
				m.cur[k] = v
				if _, ok := m.meta[l]; !ok {
					m.meta[l] = Meta{}
					m.metas[l] = append(m.metas[l], Meta{})
				}
			}
		}
		if err := ix.Flush(); err != nil {
			t.Fatal(err)
		}
		flushes = append(flushes, flushPoint{ops: fs.n, cur: maps.Clone(m.cur), meta: maps.Clone(m.meta)})
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	return flushes, m
}

func metaEqual(a, b Meta) bool {
	return a.Fenced == b.Fenced && bytes.Equal(a.MasterKey, b.MasterKey) && bytes.Equal(a.ExplicitLAC, b.ExplicitLAC) && (a.ExplicitLAC == nil) == (b.ExplicitLAC == nil)
}

// TestCrash crashes at many points (including inside every Flush) and
// checks that the reopened index holds the state of the last completed
// Flush, with later changes either present or absent but never wrong.
// With the default metadata log limit the Flushes after the first append
// to the log; with a tiny one they alternate between log and snapshot.
func TestCrash(t *testing.T) {
	for _, limit := range []int64{0, 64} {
		t.Run(fmt.Sprintf("logLimit=%d", limit), func(t *testing.T) { crashTest(t, limit) })
	}
}

func crashTest(t *testing.T, logLimit int64) {
	for seed := uint64(1); seed <= 3; seed++ {
		probe := &crashFS{MemFS: vfs.NewMem()}
		_, _ = crashScenario(t, probe, seed, logLimit)
		total := probe.n
		rng := rand.New(rand.NewPCG(seed, 77))
		for range 25 {
			at := 1 + rng.IntN(total)
			fs := &crashFS{MemFS: vfs.NewMem(), at: at, seed: seed}
			flushes, m := crashScenario(t, fs, seed, logLimit)
			var last *flushPoint
			for i := range flushes {
				if flushes[i].ops < at {
					last = &flushes[i]
				}
			}
			ix, err := Open(Options{FS: fs.clone, Dir: "/ix"})
			if err != nil {
				t.Fatalf("seed %d crash at op %d/%d: Open = %v", seed, at, total, err)
			}
			// No location is ever one that was not set for that entry.
			for _, l := range ix.Ledgers() {
				lastE, _ := ix.LastEntry(l)
				for e := int64(0); e <= max(lastE, 40); e++ {
					if v, ok := ix.Get(l, e); ok && !m.versions[[2]int64{l, e}][v] {
						t.Fatalf("seed %d crash at op %d: Get(%d, %d) = %#x, never set", seed, at, l, e, v)
					}
				}
			}
			if last != nil {
				for k, v := range last.cur {
					got, ok := ix.Get(k[0], k[1])
					if !ok && ix.Exists(k[0]) && !m.deletedAfter(k[0], last.ops) {
						t.Fatalf("seed %d crash at op %d: Get%v absent, flushed %#x", seed, at, k, v)
					}
					if ok && got != v && !m.versions[k][got] {
						t.Fatalf("seed %d crash at op %d: Get%v = %#x, flushed %#x", seed, at, k, got, v)
					}
				}
				for l, want := range last.meta {
					got, ok := ix.GetMeta(l)
					if !ok {
						continue // deleted after the flush, durably
					}
					found := false
					for _, mm := range append(m.metas[l], want) {
						found = found || metaEqual(got, mm)
					}
					if !found {
						t.Fatalf("seed %d crash at op %d: GetMeta(%d) = %+v, never set", seed, at, l, got)
					}
				}
			}
			if last != nil && last == &flushes[len(flushes)-1] {
				// Everything flushed: exact state.
				for k, v := range last.cur {
					if got, ok := ix.Get(k[0], k[1]); !ok || got != v {
						t.Fatalf("seed %d crash at op %d after the last flush: Get%v = %#x, %v, want %#x", seed, at, k, got, ok, v)
					}
				}
				if len(ix.Ledgers()) != len(last.meta) {
					t.Fatalf("seed %d: %d ledgers after the last flush, want %d", seed, len(ix.Ledgers()), len(last.meta))
				}
			}
			ix.Close()
		}
	}
}
