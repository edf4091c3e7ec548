package bookie

import (
	"context"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	bk "github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/internal/uring"
	"github.com/magnetar-mq/magnetar/journal"
)

// sample is one run's figures.
type sample struct {
	ops, errs   int64
	elapsed     time.Duration
	hist        *hdrhistogram.Histogram
	allocs      uint64
	cpu         time.Duration
	detail      RunDetail
	stages      []bk.AddStages
	jbefore     journal.Stats
	jafter      journal.Stats
	journalSeen bool
	// schedP99, schedP999: the goroutines' scheduling latency over the
	// measured window (schedQuantile).
	schedP99, schedP999 time.Duration
	// lagP99 and lagMax: in a paced run, how late the driver issued a
	// unit after its scheduled time (a late unit's adds count that wait
	// in their latency, as they should: no coordinated omission). A
	// lag the stages do not show is the driver's or the machine's, not
	// the bookie's, unless the units were all outstanding (waitFree).
	lagP99, lagMax time.Duration
	// waitFree counts the paced units that found no free unit: all k
	// adds were outstanding, so the bookie, not the driver, held them.
	waitFree int64
}

// cpuTime returns the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// unit is a group of adds issued together to one ledger (one AddEntry, or
// one AddEntries run of Config.Batch): they share the issue time, and the
// unit is free again once all of them completed.
type unit struct {
	d     *driver
	start int64 // journal.Nanotime issued (paced: scheduled)
	left  atomic.Int32
	done  func(error) // of every add of the unit
}

// driver is one bookie run's load.
type driver struct {
	free chan *unit
	rec  *recorder
	errs atomic.Int64
}

// complete is an add's callback: on the bookie's completion goroutine,
// or the caller's for a refusal.
func (u *unit) complete(err error) {
	d := u.d
	if err != nil {
		if d.rec.measuring(u.start) {
			d.errs.Add(1)
		}
	} else {
		d.rec.done(u.start, journal.Nanotime(), 1)
	}
	if u.left.Add(-1) == 0 {
		d.free <- u
	}
}

// unitSize is the adds per unit (per AddEntries call): a power of two up
// to 64 and at most k (the closed loop's clock check falls on multiples
// of 64).
func unitSize(cfg Config, k int) int {
	batch := 1
	for batch*2 <= min(cfg.Batch, k, 64) {
		batch *= 2
	}
	return batch
}

// bookieRun measures one bookie run: k adds kept outstanding (rate 0),
// or adds issued at rate per second with up to k outstanding, latency
// then measured from each add's scheduled time (no coordinated omission).
func bookieRun(ctx context.Context, cfg Config, dir string, mode uring.Mode, size, k int, rate float64) (sample, error) {
	ledgerDir := filepath.Join(dir, "ledgers")
	if cfg.LedgerDir != "" {
		ledgerDir = filepath.Join(cfg.LedgerDir, filepath.Base(dir), "ledgers")
	}
	rec := newRecorder(cfg.Duration, cfg.Window)
	log := &stageLog{rec: rec}
	groupWait := cfg.GroupWait
	if groupWait == 0 {
		groupWait = -1 // bookie.Options: negative = no wait
	}
	b, err := bk.Open(bk.Options{
		JournalDir:          filepath.Join(dir, "journal"),
		LedgerDirs:          []string{ledgerDir},
		JournalWriteMode:    mode,
		JournalDirectIO:     cfg.DirectIO,
		JournalZeroFill:     cfg.ZeroFill,
		EntryLogFlushBytes:  cfg.FlushBytes,
		JournalNoSync:       cfg.NoSync,
		JournalMaxGroupWait: groupWait,
		DiskCheckInterval:   -1,
		GCInterval:          -1,
		WriteCacheSize:      cfg.WriteCacheSize,
		CheckpointSpread:    cfg.CheckpointSpread,
		StageSampling:       cfg.StageSampling,
		OnAddStages:         log.add,
		OnCheckpoint:        log.checkpoint,
	})
	if err != nil {
		return sample{}, err
	}
	defer b.Close()
	batch := unitSize(cfg, k)
	d := &driver{free: make(chan *unit, k/batch), rec: rec}
	for range k / batch {
		u := &unit{d: d}
		u.done = u.complete
		d.free <- u
	}
	key := []byte("bench-master-key")
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(i)
	}
	const ledgers = 4
	var next [ledgers]int64
	adds := make([]bk.Add, batch)
	for i := range adds {
		adds[i].MasterKey, adds[i].Payload = key, payload
	}
	i := 0 // units issued
	issue := func(u *unit, start int64) {
		l := i % ledgers
		i++
		u.start = start
		u.left.Store(int32(batch))
		if batch == 1 {
			b.AddEntry(int64(l+1), next[l], key, payload, false, u.done)
			next[l]++
			return
		}
		for j := range adds {
			adds[j].Ledger, adds[j].Entry, adds[j].Done = int64(l+1), next[l], u.done
			next[l]++
		}
		b.AddEntries(adds)
	}
	var interval int64 // per unit
	if rate > 0 {
		interval = int64(float64(time.Second) * float64(batch) / rate)
	}
	var ms0, ms1 runtime.MemStats
	var cpu0, cpu1 time.Duration
	var sched0 *metrics.Float64Histogram
	lag := newHist()
	var s sample
	clk := newClock(cfg, rec)
	open := func() { // the measured window opens
		runtime.ReadMemStats(&ms0)
		s.jbefore = b.Stats().Journal
		sched0 = schedLatencies()
		cpu0 = cpuTime()
	}
	// Closed loop: the clock is read once per unit (its issue time), and
	// the phase is checked every 64 adds; with few units outstanding
	// (slow adds) on every unit, so the window opens and closes on time.
	check := max(64/batch, 1)
	if k < 64 {
		check = 1
	}
	for n := 0; ; n++ {
		if interval == 0 && n%check != 0 {
			u := <-d.free
			issue(u, journal.Nanotime())
			continue
		}
		if !clk.next(ctx, open) {
			break
		}
		if interval > 0 {
			var u *unit
			select {
			case u = <-d.free:
			default:
				if clk.measuring {
					s.waitFree++
				}
				u = <-d.free
			}
			issue(u, clk.pace(interval, lag))
			continue
		}
		u := <-d.free
		issue(u, journal.Nanotime())
	}
	cpu1 = cpuTime()
	sched1 := schedLatencies()
	runtime.ReadMemStats(&ms1)
	s.jafter = b.Stats().Journal
	for range k / batch { // drain: every outstanding add completes
		<-d.free
	}
	if err := ctx.Err(); err != nil {
		return sample{}, err
	}
	if !clk.measuring {
		return sample{}, context.DeadlineExceeded
	}
	s.ops, s.errs = rec.ops, d.errs.Load()
	s.elapsed = cfg.Duration
	s.hist = rec.hist
	s.cpu = cpu1 - cpu0
	if interval > 0 {
		s.lagP99, s.lagMax = time.Duration(lag.ValueAtQuantile(99)), time.Duration(lag.Max())
	}
	s.schedP99, s.schedP999 = schedQuantile(sched0, sched1, 0.99), schedQuantile(sched0, sched1, 0.999)
	s.allocs = ms1.Mallocs - ms0.Mallocs
	s.journalSeen = true
	s.detail = RunDetail{
		OpsPerSec:   float64(s.ops) / cfg.Duration.Seconds(),
		Windows:     rec.windows(),
		Checkpoints: log.spans(),
	}
	if cfg.StageSampling > 0 {
		s.detail.StageMeans = log.stageMeans(cfg.Duration, cfg.Window)
		s.stages = log.samples
	}
	return s, nil
}
