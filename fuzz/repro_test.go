package fuzz

import (
	"fmt"
	"math/rand/v2"
	"path"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// Reproductions of bugs the randomized tests found in other packages, kept
// as regression tests (FUZZ_NOTES.md).

// gateFS blocks the next Sync of one file name until released, so that a
// crash clone can be taken with that file's writes still unsynced.
type gateFS struct {
	*vfs.MemFS
	name    string
	armed   atomic.Bool
	blocked chan struct{}
	release chan struct{}
}

type gateFile struct {
	vfs.File
	g *gateFS
}

func (g *gateFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return gateFile{f, g}, nil
}

func (g *gateFS) Create(n string) (vfs.File, error)        { return g.wrap(g.MemFS.Create(n)) }
func (g *gateFS) Open(n string) (vfs.File, error)          { return g.wrap(g.MemFS.Open(n)) }
func (g *gateFS) OpenReadWrite(n string) (vfs.File, error) { return g.wrap(g.MemFS.OpenReadWrite(n)) }

func (f gateFile) Sync() error {
	if path.Base(f.Name()) == f.g.name && f.g.armed.CompareAndSwap(true, false) {
		close(f.g.blocked)
		<-f.g.release
	}
	return f.File.Sync()
}

// kib is a 1000-byte payload derived from (l, e).
func kib(l, e int64) []byte {
	p := make([]byte, 0, 1000)
	for len(p) < 1000 {
		p = append(p, payloadFor(1, l, e)...)
	}
	return p[:1000]
}

// TestReproEntryLogSubPageHoleAfterCrash (found by TestMetamorphicBookie,
// seed 35 with MAGNETAR_SOAK=1, config wait1ms-smallcache-rolling-gc):
// a checkpoint rolls the entry log; sealing writes the buffered records,
// the ledgers map and the header patch, then syncs. A crash before that
// sync in which the buffered records' write is lost but the map record's
// write survives (out-of-order writeback; vfs.CrashCloneSubset) leaves an
// unsealed log with a hole smaller than a 4 KiB page followed by a valid
// record. entrylog treats that as mid-file corruption (its torn-tail rule
// only accepts a whole aligned zero page), so after the restart GC fails
// with ErrCorrupt and the bookie turns read-only, although nothing
// acknowledged was lost and nothing in that stretch was ever synced.
func TestReproEntryLogSubPageHoleAfterCrash(t *testing.T) {
	mem := vfs.NewMem()
	g := &gateFS{MemFS: mem, name: "00000001.log", blocked: make(chan struct{}), release: make(chan struct{})}
	opts := func(fs vfs.FS) bookie.Options {
		o := fuzzOptions(fs)
		o.EntryLogMaxSize = 48 << 10
		o.WriteCacheSize = 4 << 20
		return o
	}
	b, err := bookie.Open(opts(g))
	if err != nil {
		t.Fatal(err)
	}
	acked := map[ekey]bool{}
	add := func(l, e int64) {
		ch := make(chan error, 1)
		b.AddEntry(l, e, masterKey(l), kib(l, e), false, func(err error) { ch <- err })
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
		acked[ekey{l, e}] = true
	}
	for e := range int64(45) { // 46 KiB with the header: synced in log 1
		add(1, e)
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for e := range int64(4) { // 2 KiB fit, then a roll: a 2 KiB write, the map, the header
		add(2, e)
	}
	g.armed.Store(true)
	ckpt := make(chan error, 1)
	go func() { ckpt <- b.Checkpoint() }()
	select {
	case <-g.blocked:
	case err := <-ckpt:
		t.Fatalf("checkpoint finished (%v) without syncing log 1: the roll did not happen", err)
	case <-time.After(20 * time.Second):
		t.Fatal("checkpoint never synced log 1")
	}
	var failures []string
	for s := uint64(1); s <= 32; s++ {
		clone := mem.CrashCloneSubset(rand.New(rand.NewPCG(s, 1)))
		b2, err := bookie.Open(opts(clone))
		if err != nil {
			t.Fatalf("crash clone %d: Open = %v", s, err)
		}
		for k := range acked {
			p, err := b2.ReadEntry(k.l, k.e)
			if err != nil || string(p) != string(kib(k.l, k.e)) {
				t.Fatalf("crash clone %d: acked entry %d/%d: %d bytes, %v", s, k.l, k.e, len(p), err)
			}
		}
		if err := b2.GC(); err != nil {
			failures = append(failures, fmt.Sprintf("crash clone %d: GC = %v (read-only: %v)", s, err, b2.IsReadOnly()))
		}
		if err := b2.Close(); err != nil {
			t.Fatalf("crash clone %d: Close = %v", s, err)
		}
	}
	close(g.release)
	if err := <-ckpt; err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// Fixed in entrylog (records are synced before the ledgers map and
	// header of a seal): no crash clone may report corruption any more.
	for _, f := range failures {
		t.Error(f)
	}
}
