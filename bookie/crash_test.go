package bookie

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/journal"

	"github.com/magnetar-mq/magnetar/internal/testenv"
)

// sizeFor gives each entry a size derivable from its ids (1..1500 bytes).
func sizeFor(ledger, entry int64) int {
	return 1 + int((uint64(ledger)*2654435761+uint64(entry)*40503)%1500)
}

func entryPayload(ledger, entry int64) []byte {
	return payloadFor(ledger, entry, sizeFor(ledger, entry))
}

// ackSet records acknowledged entries.
type ackSet struct {
	mu   sync.Mutex
	acks map[key]bool
}

func (a *ackSet) add(l, e int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.acks == nil {
		a.acks = map[key]bool{}
	}
	a.acks[key{l, e}] = true
}

func (a *ackSet) snapshot() map[key]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := make(map[key]bool, len(a.acks))
	for k := range a.acks {
		m[k] = true
	}
	return m
}

func (a *ackSet) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.acks)
}

// crashAdders adds entries 0, 1, ... to each of its ledgers from a
// goroutine of its own, at most inflight pending per ledger, and records
// every acknowledged one in acked.
type crashAdders struct {
	acked ackSet
	stop  chan struct{}
	wg    sync.WaitGroup
	err   atomic.Pointer[error] // the first failed add
}

// crashClone is a crash clone of a bookie's file system and the entries
// acknowledged before it was taken (all must survive).
type crashClone struct {
	fs    *vfs.MemFS
	acked map[key]bool
}

// startCrashAdders starts crashAdders that add one entry at a time.
func startCrashAdders(b *Bookie, ledgers []int64, inflight int, payload func(l, e int64) []byte) *crashAdders {
	return startCrashBatchAdders(b, ledgers, inflight, 1, payload)
}

// startCrashBatchAdders is startCrashAdders adding through AddEntries,
// batch adds per call (at most inflight pending per ledger); a batch of
// 1 calls AddEntry.
func startCrashBatchAdders(b *Bookie, ledgers []int64, inflight, batch int, payload func(l, e int64) []byte) *crashAdders {
	a := &crashAdders{stop: make(chan struct{})}
	for _, l := range ledgers {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			sem := make(chan struct{}, inflight)
			adds := make([]Add, 0, batch)
			for e := int64(0); ; {
				adds = adds[:0]
				for range batch {
					select {
					case <-a.stop:
						b.AddEntries(adds)
						for range cap(sem) {
							sem <- struct{}{}
						}
						return
					case sem <- struct{}{}:
					}
					e := e + int64(len(adds)) // this add's entry, the callback's own copy
					adds = append(adds, Add{Ledger: l, Entry: e, MasterKey: mk, Payload: payload(l, e), Done: func(err error) {
						if err != nil {
							a.err.CompareAndSwap(nil, &err)
						} else {
							a.acked.add(l, e)
						}
						<-sem
					}})
				}
				e += int64(len(adds))
				if batch == 1 {
					x := &adds[0]
					b.AddEntry(x.Ledger, x.Entry, x.MasterKey, x.Payload, x.Recovery, x.Done)
					continue
				}
				b.AddEntries(adds)
			}
		}()
	}
	return a
}

// waitAcked polls every pause until n entries are acknowledged in all or
// an add failed.
func (a *crashAdders) waitAcked(n int, pause time.Duration) {
	for a.acked.len() < n && a.err.Load() == nil {
		time.Sleep(pause)
	}
}

// finish stops the adders once their pending adds completed and fails
// the test if one failed.
func (a *crashAdders) finish(t *testing.T) {
	t.Helper()
	close(a.stop)
	a.wg.Wait()
	if p := a.err.Load(); p != nil {
		t.Fatalf("add failed: %v", *p)
	}
}

// verifyStore checks that every acked entry reads back byte for byte and
// that every entry that reads back at all is intact.
func verifyStore(t *testing.T, b *Bookie, acked map[key]bool, ledgers []int64) {
	t.Helper()
	verifyFrom(t, b, acked, ledgers, nil)
}

// verifyFrom is verifyStore with the scan for corrupt entries starting, per
// ledger, at from[ledger] (0 when absent).
func verifyFrom(t *testing.T, b *Bookie, acked map[key]bool, ledgers []int64, from map[int64]int64) {
	t.Helper()
	verifyWith(t, b, acked, ledgers, from, entryPayload)
}

// verifyWith is verifyFrom for entries whose payloads entryPayload gives.
func verifyWith(t *testing.T, b *Bookie, acked map[key]bool, ledgers []int64, from map[int64]int64, entryPayload func(l, e int64) []byte) {
	t.Helper()
	for k := range acked {
		got, err := b.ReadEntry(k.ledger, k.entry)
		if err != nil {
			t.Fatalf("acked entry %d/%d: ReadEntry = %v", k.ledger, k.entry, err)
		}
		if want := entryPayload(k.ledger, k.entry); string(got) != string(want) {
			t.Fatalf("acked entry %d/%d reads back %d bytes, want %d (different bytes)", k.ledger, k.entry, len(got), len(want))
		}
	}
	for _, l := range ledgers {
		last, err := b.LastEntry(l)
		if errors.Is(err, ErrNoLedger) || errors.Is(err, ErrNoEntry) {
			continue
		}
		if err != nil {
			t.Fatalf("LastEntry(%d) = %v", l, err)
		}
		for e := from[l]; e <= last; e++ {
			got, err := b.ReadEntry(l, e)
			if errors.Is(err, ErrNoEntry) {
				continue
			}
			if err != nil {
				t.Fatalf("entry %d/%d (unacked or acked): ReadEntry = %v", l, e, err)
			}
			if want := entryPayload(l, e); string(got) != string(want) {
				t.Fatalf("entry %d/%d reads back corrupt: %d bytes, want %d", l, e, len(got), len(want))
			}
		}
	}
}

// TestCrashCloneMemFS adds entries from several goroutines while taking
// crash clones of the in-memory FS at random points (a clone keeps only
// what was synced, plus a random prefix of unsynced writes, maybe torn).
// Each clone is then opened: every entry acked before the clone reads
// back byte for byte, and nothing reads back corrupt. The adds go one at
// a time (AddEntry) and in runs (AddEntries).
func TestCrashCloneMemFS(t *testing.T) {
	seeds := uint64(3)
	if testenv.Soak() {
		seeds = 30
	}
	modes := []struct {
		name  string
		start func(*Bookie, []int64) *crashAdders
	}{
		{"AddEntry", func(b *Bookie, ls []int64) *crashAdders { return startCrashAdders(b, ls, 32, entryPayload) }},
		// Runs of 8 adds per ledger through AddEntries (the server's path).
		{"AddEntries", func(b *Bookie, ls []int64) *crashAdders { return startCrashBatchAdders(b, ls, 32, 8, entryPayload) }},
	}
	for _, m := range modes {
		for seed := uint64(1); seed <= seeds; seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", m.name, seed), func(t *testing.T) { crashCloneRun(t, seed, m.start) })
		}
	}
}

func memOptions(fs vfs.FS) Options {
	var logger *slog.Logger
	if os.Getenv("CRASH_DEBUG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return Options{
		Logger:             logger,
		FS:                 fs,
		JournalDir:         "/bk/journal",
		LedgerDirs:         []string{"/bk/ledgers"},
		WriteCacheSize:     256 << 10, // checkpoints often
		CheckpointInterval: 5 * time.Millisecond,
		DiskCheckInterval:  -1,
		GCInterval:         -1,
		EntryLogMaxSize:    1 << 20, // several entry logs
		JournalMaxFileSize: 1 << 20, // several journal files
		// Small index segments: crash clones copy whole files.
		IndexSlotsPerPage:    64,
		IndexPagesPerSegment: 256,
	}
}

func crashCloneRun(t *testing.T, seed uint64, start func(*Bookie, []int64) *crashAdders) {
	rng := rand.New(rand.NewPCG(seed, 99))
	fs := vfs.NewMem()
	b, err := Open(memOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	ledgers := []int64{1, 2, 3}
	adders := start(b, ledgers)
	var clones []crashClone
	for i := 0; i < 4; i++ {
		// Wait for a random number of further acks: a random point in the
		// run, defined by progress rather than time.
		adders.waitAcked(adders.acked.len()+50+rng.IntN(400), 100*time.Microsecond)
		snap := adders.acked.snapshot() // acked before the clone: must survive
		// MemFS clones file by file and file writes do not take the FS
		// lock, so a clone is not one instant across files: it could copy
		// the entry log before a checkpoint's Sync and the index after its
		// update, a state no real crash produces. Holding ckptMu keeps the
		// entry logs, the index and the journal mark still while cloning
		// (journal appends go on; acked records were synced before).
		b.ckptMu.Lock()
		cfs := fs.CrashCloneRandom(rng)
		b.ckptMu.Unlock()
		clones = append(clones, crashClone{cfs, snap})
	}
	adders.finish(t)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for i, c := range clones {
		if os.Getenv("CRASH_DEBUG") != "" {
			cc := c.fs.CrashClone()
			j, err := journal.Open(journal.Options{Dir: "/bk/journal", FS: cc})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			j.Replay(journal.Position{}, func(r journal.Record, p journal.Position) error {
				if n < 5 || r.LedgerID < 0 {
					t.Logf("rec %v %d/%d at %v", r.Type, r.LedgerID, r.EntryID, p)
				}
				n++
				return nil
			})
			t.Logf("clone %d: mark %v end %v, %d records from the start", i, j.LastMark(), j.End(), n)
		}
		b, err := Open(memOptions(c.fs))
		if err != nil {
			t.Fatalf("clone %d: Open = %v", i, err)
		}
		if os.Getenv("CRASH_DEBUG") != "" {
			ls, _ := b.idx.Ledgers()
			jf, _ := c.fs.List("/bk/journal")
			lf, _ := c.fs.List("/bk/ledgers")
			t.Logf("clone %d: %d acked; index ledgers %v; journal %v; ledgers dir %v", i, len(c.acked), ls, jf, lf)
		}
		verifyStore(t, b, c.acked, ledgers)
		// The reopened bookie takes adds again.
		if err := addSync(b, 1, 1_000_000, mk, entryPayload(1, 1_000_000), false); err != nil {
			t.Fatalf("clone %d: add after reopen = %v", i, err)
		}
		if err := b.Close(); err != nil {
			t.Fatalf("clone %d: Close = %v", i, err)
		}
	}
}

// The real-process crash test: the test binary re-executes itself as a
// child (crashChildEnv names the bookie dir) that adds entries at full
// speed and prints each acked "ledger entry" to stdout. The parent SIGKILLs
// it after a random number of acks, reopens the dir and checks every acked
// entry byte for byte.

const crashChildEnv = "MAGNETAR_BOOKIE_CRASH_CHILD"

// crashLargeEnv makes the crash child add largePayload entries (up to
// ~300 KiB: the journal writes them from the write cache, checkpoints with
// vectored entry-log writes).
const crashLargeEnv = "MAGNETAR_BOOKIE_CRASH_LARGE"

// crashPayload is the payload the crash child adds for (l, e).
func crashPayload(l, e int64) []byte {
	if os.Getenv(crashLargeEnv) == "1" {
		return largePayload(l, e)
	}
	return entryPayload(l, e)
}

var crashLedgers = []int64{11, 12, 13, 14}

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		if err := crashChild(dir); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func osOptions(dir string) Options {
	return Options{
		JournalDirectIO:      os.Getenv(crashDirectEnv) == "1",
		JournalDir:           dir + "/journal",
		LedgerDirs:           []string{dir + "/ledgers"},
		WriteCacheSize:       1 << 20,
		CheckpointInterval:   20 * time.Millisecond,
		DiskCheckInterval:    -1,
		GCInterval:           -1,
		EntryLogMaxSize:      4 << 20,
		IndexSlotsPerPage:    64,
		IndexPagesPerSegment: 256,
	}
}

// crashChild runs until killed.
func crashChild(dir string) error {
	b, err := Open(osOptions(dir))
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	var mu sync.Mutex
	go func() { // flush acks often; the parent only counts what it received
		for {
			time.Sleep(time.Millisecond)
			mu.Lock()
			out.Flush()
			mu.Unlock()
		}
	}()
	sem := make(chan struct{}, 64)
	next := map[int64]int64{}
	for _, l := range crashLedgers {
		if last, err := b.LastEntry(l); err == nil {
			next[l] = last + 1
		}
	}
	done := func(l, e int64) func(error) {
		return func(err error) {
			if err != nil {
				fmt.Fprintln(os.Stderr, "add failed:", err)
				os.Exit(3)
			}
			mu.Lock()
			out.WriteString(strconv.FormatInt(l, 10) + " " + strconv.FormatInt(e, 10) + "\n")
			mu.Unlock()
			<-sem
		}
	}
	batch := 1
	if os.Getenv(crashBatchEnv) == "1" {
		batch = 16 // AddEntries runs of 16 adds per ledger
	}
	adds := make([]Add, 0, batch)
	for i := 0; ; i++ {
		l := crashLedgers[i%len(crashLedgers)]
		adds = adds[:0]
		for range batch {
			e := next[l]
			next[l]++
			sem <- struct{}{}
			adds = append(adds, Add{Ledger: l, Entry: e, MasterKey: mk, Payload: crashPayload(l, e), Done: done(l, e)})
		}
		if batch == 1 {
			a := adds[0]
			b.AddEntry(a.Ledger, a.Entry, a.MasterKey, a.Payload, false, a.Done)
		} else {
			b.AddEntries(adds)
		}
	}
}

// crashBatchEnv makes the crash child add in AddEntries runs.
const crashBatchEnv = "MAGNETAR_BOOKIE_CRASH_BATCH"

// TestCrashRealProcessBatched is TestCrashRealProcess with the child
// adding through AddEntries, the bookie server's path.
func TestCrashRealProcessBatched(t *testing.T) {
	iterations := 10
	if testenv.Soak() {
		iterations = 100
	}
	crashRealProcess(t, iterations, 500, false, crashBatchEnv+"=1")
}

func TestCrashRealProcess(t *testing.T) {
	iterations := 20
	if testenv.Soak() {
		iterations = 200
	}
	crashRealProcess(t, iterations, 500, false)
}

// TestCrashRealProcessLarge is TestCrashRealProcess with entries of up to
// ~300 KiB: the journal's io_uring writes read them from the write cache
// (AppendRef) and checkpoints write them to the entry logs with vectored
// writes from the cache.
func TestCrashRealProcessLarge(t *testing.T) {
	iterations := 6
	if testenv.Soak() {
		iterations = 60
	}
	crashRealProcess(t, iterations, 150, true)
}

// crashRealProcess kills a child adding entries iterations times, after up
// to maxAcks acks each, and checks every acked entry after each restart.
func crashRealProcess(t *testing.T, iterations, maxAcks int, large bool, childEnv ...string) {
	payload := entryPayload
	if large {
		payload = largePayload
	}
	dir := t.TempDir()
	if d := os.Getenv("CRASH_DIR"); d != "" {
		dir = d
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	t.Logf("kill points from seed %d", seed)
	acked := map[key]bool{}
	from := map[int64]int64{} // per ledger, where this iteration's entries start
	for it := 0; it < iterations; it++ {
		fresh := map[key]bool{}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
		if large {
			cmd.Env = append(cmd.Env, crashLargeEnv+"=1")
		}
		cmd.Env = append(cmd.Env, childEnv...)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		started := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 1 + rng.IntN(maxAcks)
		sc := bufio.NewScanner(stdout)
		n := 0
		for sc.Scan() {
			var l, e int64
			if _, err := fmt.Sscanf(sc.Text(), "%d %d", &l, &e); err != nil {
				t.Fatalf("iteration %d: bad child line %q", it, sc.Text())
			}
			acked[key{l, e}] = true
			fresh[key{l, e}] = true
			if n++; n == killAfter {
				cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		werr := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("iteration %d: child ended without being killed after %d acks: %v\n%s", it, n, werr, stderr.String())
		}
		killed := time.Now()
		b, err := Open(osOptions(dir))
		if err != nil {
			t.Fatalf("iteration %d (killed after %d acks): Open = %v", it, n, err)
		}
		opened := time.Now()
		// This run's acks and entries; everything again at the end.
		if it < iterations-1 {
			verifyWith(t, b, fresh, crashLedgers, from, payload)
		} else {
			verifyWith(t, b, acked, crashLedgers, nil, payload)
		}
		for _, l := range crashLedgers {
			if last, err := b.LastEntry(l); err == nil {
				from[l] = last + 1
			}
		}
		if os.Getenv("CRASH_DEBUG") != "" {
			t.Logf("iteration %d: child ran %v, reopen %v, verify %v", it, killed.Sub(started), opened.Sub(killed), time.Since(opened))
		}
		if err := b.Close(); err != nil {
			t.Fatalf("iteration %d: Close = %v", it, err)
		}
	}
	t.Logf("%d kills, %d acked entries verified", iterations, len(acked))
}
