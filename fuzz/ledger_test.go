package fuzz

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/bookie/server"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/protocol/bkproto"
)

// Fault modes of a faultyBookie.
const (
	faultNone    int32 = iota
	faultDown          // every request fails with EIO, nothing stored
	faultAckLost       // adds are stored, but the answer is an error
)

var errInjectedDown = fmt.Errorf("%w: fuzz: bookie down", bkproto.ErrIO)

// faultyBookie is an in-process bookie whose client can be switched to
// failing, and which can crash (crash clone of its file system, reopen).
type faultyBookie struct {
	t     testing.TB
	mode  atomic.Int32
	mu    sync.Mutex // guards the fields below; held across a crash
	epoch int
	fs    *lockFS
	b     *bookie.Bookie
	local *server.Local
}

func ledgerBookieOptions(fs vfs.FS) bookie.Options {
	return bookie.Options{
		FS:                   fs,
		JournalDir:           "/bk/journal",
		LedgerDirs:           []string{"/bk/ledgers"},
		JournalMaxGroupWait:  -1,
		WriteCacheSize:       1 << 20,
		CheckpointInterval:   5 * time.Millisecond,
		DiskCheckInterval:    -1,
		GCInterval:           -1,
		IndexSlotsPerPage:    64,
		IndexPagesPerSegment: 256,
	}
}

func newFaultyBookie(t testing.TB) *faultyBookie {
	f := &faultyBookie{t: t, fs: newLockFS(vfs.NewMem())}
	b, err := bookie.Open(ledgerBookieOptions(f.fs))
	if err != nil {
		t.Fatal(err)
	}
	f.b, f.local = b, server.NewLocal(b)
	return f
}

func (f *faultyBookie) current() (*server.Local, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.local, f.epoch
}

// crash takes a crash clone of the bookie's files and reopens the bookie
// on it. Acks the old bookie gives after the clone turn into errors: a
// crashed bookie answers nothing.
func (f *faultyBookie) crash(rng *rand.Rand) {
	f.mu.Lock()
	clone := f.fs.crashClone(rng)
	f.epoch++
	old := f.b
	f.mu.Unlock()
	old.Close()
	b, err := bookie.Open(ledgerBookieOptions(clone))
	if err != nil {
		f.t.Errorf("reopen after crash: %v", err)
		return
	}
	f.mu.Lock()
	f.fs, f.b, f.local = clone, b, server.NewLocal(b)
	f.mu.Unlock()
}

func (f *faultyBookie) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.b.Close()
}

func (f *faultyBookie) AddEntry(ledgerID, entryID int64, masterKey, entry []byte, recovery bool, done func(error)) {
	mode := f.mode.Load()
	if mode == faultDown {
		done(errInjectedDown)
		return
	}
	l, epoch := f.current()
	l.AddEntry(ledgerID, entryID, masterKey, entry, recovery, func(err error) {
		f.mu.Lock()
		crashed := f.epoch != epoch
		f.mu.Unlock()
		if err == nil && (crashed || mode == faultAckLost) {
			err = errInjectedDown
		}
		done(err)
	})
}

func (f *faultyBookie) ReadEntry(ctx context.Context, ledgerID, entryID int64, fence bool, masterKey []byte) ([]byte, error) {
	if f.mode.Load() == faultDown {
		return nil, errInjectedDown
	}
	l, _ := f.current()
	return l.ReadEntry(ctx, ledgerID, entryID, fence, masterKey)
}

func (f *faultyBookie) ReadLAC(ctx context.Context, ledgerID int64) (int64, []byte, error) {
	if f.mode.Load() == faultDown {
		return 0, nil, errInjectedDown
	}
	l, _ := f.current()
	return l.ReadLAC(ctx, ledgerID)
}

func (f *faultyBookie) WriteLAC(ctx context.Context, ledgerID, lac int64, masterKey, body []byte) error {
	if f.mode.Load() == faultDown {
		return errInjectedDown
	}
	l, _ := f.current()
	return l.WriteLAC(ctx, ledgerID, lac, masterKey, body)
}

// ledgerPayload is the i-th add of a run's writer.
func ledgerPayload(seed uint64, i int64) []byte {
	r := rand.New(rand.NewPCG(seed^0x6c656467, uint64(i)))
	p := make([]byte, 16+r.IntN(600))
	for j := range p {
		p[j] = byte(r.Uint32())
	}
	return p
}

// writerLog records the writer's completions.
type writerLog struct {
	mu       sync.Mutex
	acked    map[int64]bool
	failed   int
	firstErr error
	bad      []string // completions breaking order or id rules
	next     int64    // the add index the next completion belongs to
	wg       sync.WaitGroup
}

func (w *writerLog) add(h *ledger.WriteHandle, seed uint64, i int64) {
	w.wg.Add(1)
	h.AddAsync(ledgerPayload(seed, i), func(id int64, err error) {
		defer w.wg.Done()
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.next != i {
			w.bad = append(w.bad, fmt.Sprintf("completion of add %d arrived when add %d was expected", i, w.next))
		}
		w.next = i + 1
		if err != nil {
			w.failed++
			if w.firstErr == nil {
				w.firstErr = err
			}
			return
		}
		if id != i {
			w.bad = append(w.bad, fmt.Sprintf("add %d acked as entry %d", i, id))
		}
		if w.firstErr != nil {
			w.bad = append(w.bad, fmt.Sprintf("add %d acked after an earlier add failed with %v", i, w.firstErr))
		}
		w.acked[id] = true
	})
}

func (w *writerLog) wait(t testing.TB, what string) {
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: writer completions missing after 30 s", what)
	}
}

// TestLedgerCrashRecovery: random adds on E=3 Qw=2 Qa=2 over six faulty
// in-process bookies (down, acks lost, crash and restart), then the writer
// is abandoned (adds maybe still in flight) and a second client recovers
// the ledger. Invariants (docs/replication.md section 1): every acked entry is
// readable with its bytes; entries up to the recovered LAC read back as
// what the writer sent; every later open agrees on lastEntryId; the old
// writer can add nothing after recovery.
func TestLedgerCrashRecovery(t *testing.T) {
	for _, seed := range seedList(4, 60) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { ledgerCrashRun(t, seed) })
	}
}

func ledgerCrashRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x6c637273))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	store, err := embedded.Open(filepath.Join(t.TempDir(), "meta.db"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	const nb = 6
	res := ledger.NewStaticResolver(nil)
	var ids []string
	var bks []*faultyBookie
	for i := range nb {
		f := newFaultyBookie(t)
		defer f.close()
		id := fmt.Sprintf("bk%d", i)
		bks = append(bks, f)
		ids = append(ids, id)
		res.Set(id, f)
	}
	copts := ledger.Options{Bookies: ids, ReadTimeout: 5 * time.Second, SpeculativeReadTimeout: -1}
	writer, err := ledger.NewClient(store, res, copts)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	h, err := writer.Create(ctx, ledger.CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: []byte("pw")})
	if err != nil {
		t.Fatal(err)
	}
	w := &writerLog{acked: map[int64]bool{}}
	next := int64(0)
	steps := 20 + rng.IntN(30)
	for range steps {
		switch r := rng.IntN(20); {
		case r < 13:
			for range 1 + rng.IntN(8) {
				w.add(h, seed, next)
				next++
			}
		case r < 15:
			w.wait(t, "writer")
		case r < 19:
			// At most two faulty bookies at a time (of six).
			faulty := 0
			for _, f := range bks {
				if f.mode.Load() != faultNone {
					faulty++
				}
			}
			f := bks[rng.IntN(nb)]
			if f.mode.Load() != faultNone {
				f.mode.Store(faultNone)
			} else if faulty < 2 {
				f.mode.Store(faultDown + rng.Int32N(2))
			}
		default:
			bks[rng.IntN(nb)].crash(rng)
		}
	}
	// Abandon the writer with adds maybe in flight; recovery may meet
	// faulty bookies, then everything comes back.
	for range rng.IntN(6) {
		w.add(h, seed, next)
		next++
	}
	reader, err := ledger.NewClient(store, res, copts)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	var rh *ledger.ReadHandle
	for attempt := 0; ; attempt++ {
		rh, err = reader.Open(ctx, h.ID())
		if err == nil {
			break
		}
		if !errors.Is(err, ledger.ErrRecoveryFailed) && !errors.Is(err, ledger.ErrBookieUnavailable) || attempt > 3 {
			t.Fatalf("seed %d: recovery Open = %v", seed, err)
		}
		for _, f := range bks {
			f.mode.Store(faultNone)
		}
	}
	w.wait(t, "writer after recovery")
	for _, f := range bks {
		f.mode.Store(faultNone)
	}
	w.mu.Lock()
	acked := w.acked
	bad := w.bad
	w.mu.Unlock()
	for _, b := range bad {
		t.Errorf("seed %d: writer: %s", seed, b)
	}
	lac := rh.LastAddConfirmed()
	for e := range acked {
		if e > lac {
			t.Errorf("seed %d: acked entry %d beyond the recovered lastEntryId %d", seed, e, lac)
		}
	}
	if lac >= next {
		t.Fatalf("seed %d: recovered lastEntryId %d, but only %d adds were made", seed, lac, next)
	}
	check := func(who string, r *ledger.ReadHandle) {
		t.Helper()
		if r.LastAddConfirmed() != lac {
			t.Fatalf("seed %d: %s: lastEntryId %d, first recovery said %d", seed, who, r.LastAddConfirmed(), lac)
		}
		if !r.Closed() {
			t.Fatalf("seed %d: %s: ledger not CLOSED after recovery", seed, who)
		}
		if lac < 0 {
			return
		}
		es, err := r.Read(ctx, 0, lac)
		if err != nil {
			t.Fatalf("seed %d: %s: Read(0, %d) = %v (acked %d of %d adds)", seed, who, lac, err, len(acked), next)
		}
		for i, p := range es {
			if string(p) != string(ledgerPayload(seed, int64(i))) {
				t.Fatalf("seed %d: %s: entry %d (acked %v) reads back %d bytes, not what add %d sent", seed, who, i, acked[int64(i)], len(p), i)
			}
		}
	}
	check("recovering reader", rh)
	// Only one writer: the abandoned handle is fenced.
	if _, err := h.Add(ctx, []byte("after recovery")); err == nil {
		t.Fatalf("seed %d: the old writer added an entry after recovery", seed)
	}
	// Every later open agrees, whatever bookie is slow or crashed.
	bks[rng.IntN(nb)].crash(rng)
	bks[rng.IntN(nb)].mode.Store(faultDown)
	third, err := ledger.NewClient(store, res, copts)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	r2, err := third.Open(ctx, h.ID())
	if err != nil {
		t.Fatalf("seed %d: second Open = %v", seed, err)
	}
	check("second open (one bookie down)", r2)
	r3, err := third.OpenNoRecovery(ctx, h.ID())
	if err != nil {
		t.Fatalf("seed %d: OpenNoRecovery = %v", seed, err)
	}
	check("open without recovery", r3)
	m, _, err := third.Metadata(ctx, h.ID())
	if err != nil || m.State != ledger.StateClosed || m.LastEntryID != lac {
		t.Fatalf("seed %d: metadata %s at %d (%v), want CLOSED at %d", seed, m.State, m.LastEntryID, err, lac)
	}
	t.Logf("seed %d: %d adds, %d acked, recovered lastEntryId %d, writer's first error: %v", seed, next, len(acked), lac, w.firstErr)
}
