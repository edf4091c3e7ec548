package bookie

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/uring"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/journal"
)

// stageProbe drives adds and keeps, per add whose stages were sampled,
// the driver's own view: the clock before the call and in the callback.
type stageProbe struct {
	b *Bookie
	// last is the sample the hook got most recently: OnAddStages runs on
	// the completion goroutine right before the traced add's callback,
	// which takes it.
	last *AddStages

	mu      sync.Mutex
	samples []probeSample
	cps     []CheckpointStages
}

type probeSample struct {
	s          AddStages
	call, done int64 // journal.Nanotime before the call, in the callback
}

func (p *stageProbe) hook(s AddStages) { p.last = &s }

// done returns the callback of an add called at call: it files the
// pending sample, if the hook just delivered one (the traced add's).
func (p *stageProbe) done(t *testing.T, call int64, wg *sync.WaitGroup) func(error) {
	return func(err error) {
		now := journal.Nanotime()
		if err != nil {
			t.Errorf("add: %v", err)
		}
		if s := p.last; s != nil {
			p.last = nil
			p.mu.Lock()
			p.samples = append(p.samples, probeSample{s: *s, call: call, done: now})
			p.mu.Unlock()
		}
		wg.Done()
	}
}

func openTraced(t *testing.T, fs vfs.FS, mode uring.Mode, p *stageProbe) *Bookie {
	t.Helper()
	dir := t.TempDir()
	opts := Options{
		FS: fs, JournalDir: dir + "/journal", LedgerDirs: []string{dir + "/ledgers"},
		JournalWriteMode: mode, JournalMaxGroupWait: -1,
		DiskCheckInterval: -1, GCInterval: -1, WriteCacheSize: 1 << 20,
		StageSampling: 1, OnAddStages: p.hook,
		OnCheckpoint: func(c CheckpointStages) {
			p.mu.Lock()
			p.cps = append(p.cps, c)
			p.mu.Unlock()
		},
	}
	b, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	p.b = b
	return b
}

// TestAddStagesAddUpToWhole adds on a real disk through both add paths
// (runs of AddEntries and single AddEntry calls, from two goroutines, with
// checkpoints flushing a small write cache meanwhile), every add traced:
// each traced add's stages are non-negative, begin after the caller's
// clock read before the call and add up to no more than the latency the
// caller measured, and to nearly all of it (what is left is the call's
// entry and the callback's; the median add's share within 100 µs, for the
// race detector on a loaded machine); the stage histograms of Stats add up to the
// total's, and the checkpoints' steps to no more than their whole.
func TestAddStagesAddUpToWhole(t *testing.T) {
	p := &stageProbe{}
	b := openTraced(t, vfs.NewOS(), uring.ModeAuto, p)
	defer b.Close()
	payload := make([]byte, 1000)
	const perWorker = 3000
	var wg sync.WaitGroup
	var workers sync.WaitGroup
	var tracedCalls atomic.Int64 // AddEntry calls and AddEntries runs: one traced add each
	for w := range 2 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			ledger := int64(w + 1)
			adds := make([]Add, 0, 16)
			for e := int64(0); e < perWorker; {
				call := journal.Nanotime()
				if e%3 == 0 {
					wg.Add(1)
					b.AddEntry(ledger, e, mk, payload, false, p.done(t, call, &wg))
					tracedCalls.Add(1)
					e++
					continue
				}
				adds = adds[:0]
				for range 16 {
					wg.Add(1)
					adds = append(adds, Add{Ledger: ledger, Entry: e, MasterKey: mk, Payload: payload, Done: p.done(t, call, &wg)})
					e++
				}
				b.AddEntries(adds)
				tracedCalls.Add(1)
			}
		}()
	}
	workers.Wait()
	wg.Wait()
	calls := int(tracedCalls.Load())
	p.mu.Lock()
	samples, cps := slices.Clone(p.samples), slices.Clone(p.cps)
	p.mu.Unlock()
	if len(samples) != calls {
		t.Fatalf("%d traced adds, want %d (every AddEntry call and AddEntries run)", len(samples), calls)
	}
	var gaps []int64
	for i, ps := range samples {
		s := ps.s
		for st, d := range s.D {
			if d < 0 {
				t.Fatalf("sample %d: stage %s = %d ns", i, AddStage(st), d)
			}
		}
		lat := ps.done - ps.call
		if s.Start < ps.call || s.Total() > lat {
			t.Fatalf("sample %d: stages from %d for %d ns, outside the caller's %d..%d", i, s.Start, s.Total(), ps.call, ps.done)
		}
		gaps = append(gaps, lat-s.Total())
	}
	// What the stages leave out is the caller's own code around the call
	// and in the callback: the median (a preempted goroutine on a loaded
	// machine makes a few large ones) stays within 100 µs even under the
	// race detector.
	slices.Sort(gaps)
	if gap := gaps[len(gaps)/2]; gap > int64(100*time.Microsecond) {
		t.Errorf("median add: %d ns of its latency outside the stages", gap)
	}
	st := b.Stats().AddStages
	if st == nil {
		t.Fatal("Stats.AddStages is nil with StageSampling on")
	}
	var sum int64
	for i, h := range st.Stages {
		if h.Count != st.Total.Count {
			t.Errorf("stage %s: %d samples, total %d", AddStage(i), h.Count, st.Total.Count)
		}
		sum += h.Sum
	}
	if sum != st.Total.Sum || st.Total.Count < uint64(len(samples)) {
		t.Errorf("stage histograms sum to %d ns over %d samples, total %d ns", sum, st.Total.Count, st.Total.Sum)
	}
	if len(cps) == 0 {
		t.Fatal("no checkpoint reported (the 1 MiB write cache filled several times)")
	}
	for _, c := range cps {
		var steps int64
		for _, d := range c.D {
			steps += d
		}
		if c.Err != nil || steps > c.Total || c.Total <= 0 {
			t.Errorf("checkpoint %+v: steps %d ns", c, steps)
		}
	}
}

// TestAddStagesAttributeSlowSync slows every fdatasync of the journal by
// 20 ms (the other files are not slowed) and checks the time lands in the
// right stages: an add alone waits in the writer's Submit (the pwrite
// path writes and syncs there), and adds made while a group is syncing
// wait behind it, then in their own group's Submit; the cache, queue and
// callback stages stay small.
func TestAddStagesAttributeSlowSync(t *testing.T) {
	const slow = 20 * time.Millisecond
	syncing := make(chan struct{}, 100) // a journal sync began
	fs := vfs.NewErrorFS(vfs.NewMem(), vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, ".txn") {
			select {
			case syncing <- struct{}{}:
			default:
			}
			time.Sleep(slow) // a slow disk, not synchronisation
		}
		return nil
	}))
	p := &stageProbe{}
	b := openTraced(t, fs, uring.ModePwrite, p)
	defer b.Close()
	payload := make([]byte, 100)
	var wg sync.WaitGroup
	drain := func() {
		for {
			select {
			case <-syncing:
			default:
				return
			}
		}
	}
	drain()                   // the syncs of Open
	for e := range int64(4) { // alone: one add per group
		wg.Add(1)
		b.AddEntry(1, e, mk, payload, false, p.done(t, journal.Nanotime(), &wg))
		wg.Wait()
	}
	drain()
	wg.Add(1)
	b.AddEntry(1, 4, mk, payload, false, p.done(t, journal.Nanotime(), &wg))
	<-syncing // entry 4's group is syncing: the next adds wait behind it
	for e := int64(5); e < 24; e++ {
		wg.Add(1)
		b.AddEntry(1, e, mk, payload, false, p.done(t, journal.Nanotime(), &wg))
	}
	wg.Wait()
	p.mu.Lock()
	samples := slices.Clone(p.samples)
	p.mu.Unlock()
	if len(samples) != 24 {
		t.Fatalf("%d samples, want 24", len(samples))
	}
	for i, ps := range samples {
		d := ps.s.D
		if d[StageWrite] < int64(slow) {
			t.Errorf("add %d: write stage %v, below the injected %v sync", i, time.Duration(d[StageWrite]), slow)
		}
		if i >= 5 && d[StageBehind] < int64(slow/2) {
			t.Errorf("add %d (joined while a group synced): behind stage %v", i, time.Duration(d[StageBehind]))
		}
		for _, st := range []AddStage{StageCache, StageQueue, StageComplete} {
			if d[st] >= int64(slow/2) {
				t.Errorf("add %d: stage %s took %v", i, st, time.Duration(d[st]))
			}
		}
	}
}
