package entrylog

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestCrash: after Sync every entry reads back from a crash clone; entries
// added after the last Sync read back intact or as ErrNotFound, never as
// corrupt, and every log scans without error.
func TestCrash(t *testing.T) {
	for seed := uint64(0); seed < 40; seed++ {
		fs := vfs.NewMem()
		rng := rand.New(rand.NewPCG(seed, 99))
		l := mustOpen(t, fs, func(o *Options) { o.LogSizeLimit = 8 << 10; o.WriteBufferSize = 700 })
		next := map[int64]int64{}
		synced := addMany(t, l, rng, 40+rng.IntN(40), 4, next)
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		unsynced := addMany(t, l, rng, rng.IntN(30), 4, next)
		if rng.IntN(2) == 0 {
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		var clone *vfs.MemFS
		if seed%4 == 0 {
			clone = fs.CrashClone()
		} else {
			clone = fs.CrashCloneRandom(rand.New(rand.NewPCG(seed, 7)))
		}
		l.Close()

		r := mustOpen(t, clone, func(o *Options) { o.LogSizeLimit = 8 << 10 })
		checkAll(t, r, synced)
		for _, e := range unsynced {
			got, err := r.Read(e.loc, e.ledger, e.entry)
			if err == nil && !bytes.Equal(got, e.payload) {
				t.Fatalf("seed %d: unsynced Read(%d:%d) returned wrong bytes", seed, e.ledger, e.entry)
			}
			if err != nil && !errors.Is(err, ErrNotFound) {
				t.Fatalf("seed %d: unsynced Read(%d:%d) = %v, want data or ErrNotFound", seed, e.ledger, e.entry, err)
			}
		}
		seen := 0
		for _, info := range r.Logs() {
			if err := r.Scan(info.ID, func(Record) error { seen++; return nil }); err != nil {
				t.Fatalf("seed %d: Scan(%d) after crash = %v", seed, info.ID, err)
			}
		}
		if seen < len(synced) {
			t.Fatalf("seed %d: scans yielded %d records, want >= %d synced", seed, seen, len(synced))
		}
		if _, err := r.Usage(func(int64) bool { return true }); err != nil {
			t.Fatalf("seed %d: Usage after crash = %v", seed, err)
		}
		r.Close()
	}
}

// TestConcurrentReadWriteCompact runs adders, readers and a compactor
// together (meant for -race). Readers follow relocations: a read of a
// removed log is retried at the entry's current location.
func TestConcurrentReadWriteCompact(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, fs, func(o *Options) { o.LogSizeLimit = 32 << 10; o.WriteBufferSize = 2048 })
	defer l.Close()
	live := func(ledger int64) bool { return ledger < 2 }

	var mu sync.Mutex
	var pubMu sync.RWMutex
	locs := map[[2]int64]uint64{} // live entries only
	lookup := func(k [2]int64) (uint64, bool) {
		mu.Lock()
		defer mu.Unlock()
		loc, ok := locs[k]
		return loc, ok
	}

	const writers, perWriter = 2, 1500
	var wg sync.WaitGroup
	done := make(chan struct{})
	errc := make(chan error, 8)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Writer w owns ledgers w and w+2 (w+2 is dead).
			for i := range int64(perWriter) {
				ledger := int64(w) + 2*(i%2)
				p := payloadFor(ledger, i, int(i%300))
				// Add and publish under pubMu, like a bookie's write-cache
				// flush setting the index.
				pubMu.RLock()
				loc, err := l.Add(ledger, i, p)
				if err != nil {
					pubMu.RUnlock()
					errc <- err
					return
				}
				if live(ledger) {
					mu.Lock()
					locs[[2]int64{ledger, i}] = loc
					mu.Unlock()
				}
				pubMu.RUnlock()
			}
		}()
	}
	var bg sync.WaitGroup
	for r := range 2 {
		bg.Add(1)
		go func() {
			defer bg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			for {
				select {
				case <-done:
					return
				default:
				}
				k := [2]int64{int64(rng.IntN(2)), int64(rng.IntN(perWriter))}
				for attempt := 0; ; attempt++ {
					loc, ok := lookup(k)
					if !ok {
						break
					}
					got, err := l.Read(loc, k[0], k[1])
					if errors.Is(err, ErrNotFound) && attempt < 100 {
						continue // relocated and removed meanwhile
					}
					if err != nil {
						errc <- err
						return
					}
					if !bytes.Equal(got, payloadFor(k[0], k[1], int(k[1]%300))) {
						errc <- errors.New("read returned wrong payload")
						return
					}
					break
				}
			}
		}()
	}
	bg.Add(1)
	compacted := 0
	go func() {
		defer bg.Done()
		for {
			// One last pass after the writers finish, so that the test
			// always compacts.
			finished := false
			select {
			case <-done:
				finished = true
			default:
			}
			// Logs below the horizon hold only published entries.
			pubMu.Lock()
			horizon := l.ActiveLogID()
			pubMu.Unlock()
			us, err := l.Usage(live)
			if err != nil {
				errc <- err
				return
			}
			for _, u := range us {
				if u.ID >= horizon {
					continue
				}
				type move struct {
					k        [2]int64
					old, new uint64
				}
				var moves []move
				if _, err := l.Compact(context.Background(), u.ID, live, func(ledger, entry int64, oldLoc, newLoc uint64) error {
					moves = append(moves, move{[2]int64{ledger, entry}, oldLoc, newLoc})
					return nil
				}); err != nil {
					errc <- err
					return
				}
				if err := l.Sync(); err != nil {
					errc <- err
					return
				}
				mu.Lock()
				for _, m := range moves {
					if locs[m.k] == m.old {
						locs[m.k] = m.new
					}
				}
				mu.Unlock()
				if err := l.RemoveLog(u.ID); err != nil {
					errc <- err
					return
				}
				compacted++
			}
			if finished {
				return
			}
		}
	}()
	wg.Wait()
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	close(done)
	bg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if compacted == 0 {
		t.Fatal("no log was compacted")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(locs) != writers*perWriter/2 {
		t.Fatalf("%d live entries tracked, want %d", len(locs), writers*perWriter/2)
	}
	for k, loc := range locs {
		got, err := l.Read(loc, k[0], k[1])
		if err != nil || !bytes.Equal(got, payloadFor(k[0], k[1], int(k[1]%300))) {
			t.Fatalf("final Read(%v) = %v", k, err)
		}
	}
}

// TestCrashedLogsSealedAtOpen: each crash leaves the active log and
// (usually) the prepared next one unsealed. Open seals the first (scan, map, header)
// and removes the second (no record), so after ten crashes every log is
// sealed, none is empty, and a clean reopen has nothing left to do (every
// start used to warn about every unsealed log since the first crash).
func TestCrashedLogsSealedAtOpen(t *testing.T) {
	var fs vfs.FS = vfs.NewMem()
	rng := rand.New(rand.NewPCG(5, 5))
	next := map[int64]int64{}
	var all []added
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	open := func(fs vfs.FS) *Log {
		return mustOpen(t, fs, func(o *Options) { o.LogSizeLimit = 1 << 20; o.Logger = logger })
	}
	for cycle := range 10 {
		l := open(fs)
		for _, info := range l.Logs() {
			f, err := l.acquire(info.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !f.known || f.dataEnd <= HeaderSize {
				t.Fatalf("cycle %d: log %s unsealed (%v) or empty after Open", cycle, info.Path, f.known)
			}
			f.release()
		}
		checkAll(t, l, all)
		all = append(all, addMany(t, l, rng, 30, 3, next)...)
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		clone := fs.(*vfs.MemFS).CrashClone()
		l.Close()
		fs = clone
	}
	mu.Lock()
	logs.Reset()
	mu.Unlock()
	l := open(fs) // seals the last crash's log
	if n := len(l.Logs()); n != 10 {
		t.Fatalf("%d logs after ten crashes, want 10 (one per crash, empties removed)", n)
	}
	l.Close()
	mu.Lock()
	first := logs.String()
	logs.Reset()
	mu.Unlock()
	// The prepared next log exists if its goroutine made it before the
	// crash: removed when it did.
	if !strings.Contains(first, "sealed=1") {
		t.Fatalf("open after a crash logged:\n%s\nwant one log sealed", first)
	}
	l = open(fs)
	checkAll(t, l, all)
	l.Close()
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logs.String(), "unsealed") {
		t.Fatalf("a clean reopen still mentions unsealed logs:\n%s", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
