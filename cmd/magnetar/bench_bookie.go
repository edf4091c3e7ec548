package main

// magnetar bench bookie: durable add throughput and latency of AddEntry
// for several entry sizes and numbers of outstanding adds, over io_uring
// and pwrite journals, next to a raw-disk baseline (the same bytes, in the
// same group sizes, with one fdatasync per group) on the same directory.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/internal/uring"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/journal"
)

func init() {
	benchCmd.AddCommand(benchBookieCmd())
}

func benchBookieCmd() *cobra.Command {
	var (
		cfg      benchConfig
		modes    []string
		jsonOut  bool
		keepTemp bool
	)
	c := &cobra.Command{
		Use:   "bookie",
		Short: "Durable add throughput and latency of the bookie vs a raw write+fdatasync baseline",
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, m := range modes {
				switch strings.ToLower(m) {
				case "uring", "io_uring":
					cfg.Modes = append(cfg.Modes, uring.ModeUring)
				case "pwrite":
					cfg.Modes = append(cfg.Modes, uring.ModePwrite)
				case "auto":
					cfg.Modes = append(cfg.Modes, uring.ModeAuto)
				default:
					return fmt.Errorf("unknown mode %q (uring, pwrite, auto)", m)
				}
			}
			if len(cfg.Sizes) == 0 || len(cfg.Outstanding) == 0 || (len(cfg.Modes) == 0 && !cfg.Raw) {
				return errors.New("nothing to run")
			}
			if cfg.Dir == "" {
				d, err := os.MkdirTemp("", "magnetar-bench-")
				if err != nil {
					return err
				}
				if !keepTemp {
					defer os.RemoveAll(d)
				}
				cfg.Dir = d
			} else if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
				return err
			}
			cfg.Progress = os.Stderr
			fmt.Fprintf(os.Stderr, "bench bookie in %s (ledger dirs in %s, journal O_DIRECT %v, zero fill %v): sizes %v, outstanding %v, modes %v, %v per cell (+%v warmup), %d runs each (medians), group wait %v\n",
				cfg.Dir, cmp.Or(cfg.LedgerDir, cfg.Dir), cfg.DirectIO, cfg.ZeroFill, cfg.Sizes, cfg.Outstanding, modes, cfg.Duration, cfg.Warmup, cfg.Runs, cfg.GroupWait)
			if cfg.Batch > 1 {
				fmt.Fprintf(os.Stderr, "adds in AddEntries batches of up to %d per ledger\n", cfg.Batch)
			}
			rs, err := runBench(cmd.Context(), cfg)
			fillMBps(rs)
			if jsonOut {
				if jerr := json.NewEncoder(cmd.OutOrStdout()).Encode(rs); jerr != nil {
					return jerr
				}
			} else {
				printBenchTable(cmd.OutOrStdout(), rs)
			}
			return err
		},
	}
	f := c.Flags()
	f.StringVar(&cfg.Dir, "dir", "", "directory to write in (default: a new temp dir, removed after)")
	f.StringVar(&cfg.LedgerDir, "ledger-dir", "", "put the bookies' ledger dirs (entry logs, index) under this directory instead of --dir, e.g. on another device; the journal and the raw baseline stay in --dir")
	f.Int64Var(&cfg.FlushBytes, "flush-entrylog-bytes", 0, "pace entry-log writeback in steps of this many bytes (flushEntrylogBytes; 0 = off)")
	f.BoolVar(&cfg.DirectIO, "direct-io", false, "write the journal with O_DIRECT in aligned groups (journalDirectIO)")
	f.BoolVar(&cfg.ZeroFill, "zero-fill", false, "zero-fill the journal ahead of the writer (--journal-zero-fill)")
	f.IntSliceVar(&cfg.Sizes, "sizes", []int{100, 1024, 16384, 65536}, "entry sizes in bytes")
	f.IntSliceVar(&cfg.Outstanding, "outstanding", []int{1, 16, 256, 4096, 16384}, "outstanding adds")
	f.StringSliceVar(&modes, "modes", []string{"uring", "pwrite"}, "journal write paths: uring, pwrite, auto")
	f.DurationVar(&cfg.Duration, "duration", 2*time.Second, "measured time per cell and run")
	f.DurationVar(&cfg.Warmup, "warmup", 300*time.Millisecond, "unmeasured warmup per cell and run")
	f.IntVar(&cfg.Runs, "runs", 3, "runs per cell (medians reported)")
	f.BoolVar(&cfg.NoSync, "nosync", false, "skip fdatasync (NOT DURABLE; labelled in the output)")
	f.BoolVar(&cfg.Raw, "raw", true, "include the raw write+fdatasync baseline")
	f.BoolVar(&cfg.HalfPeak, "half-peak", true, "per size, a paced run at half the best rate")
	f.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the whole run")
	f.StringVar(&cfg.Trace, "trace", "", "write a Go execution trace of the whole run (go tool trace)")
	f.DurationVar(&cfg.GroupWait, "group-wait", 0, "journal max group wait (0: write as soon as the queue drains)")
	f.IntVar(&cfg.Batch, "batch", 1, "adds of one ledger per AddEntries call, a power of two up to 64 (the bookie server's path: the adds of one network read); paced runs send a batch every batch intervals; 1 = one AddEntry per add")
	f.Int64Var(&cfg.WriteCacheSize, "write-cache", 64<<20, "bookie write cache in bytes, both halves (default: the bookie's default)")
	f.BoolVar(&jsonOut, "json", false, "print results as JSON")
	f.BoolVar(&keepTemp, "keep", false, "keep the temp dir")
	return c
}

// benchConfig says what to measure.
type benchConfig struct {
	// Dir is where the bookies and the raw baseline write (one disk).
	Dir string
	// LedgerDir, if set, holds the bookies' ledger dirs (a second device).
	LedgerDir string
	// DirectIO runs the journal with O_DIRECT.
	DirectIO bool
	// ZeroFill zero-fills the journal ahead of the writer.
	ZeroFill bool
	// FlushBytes is the bookie's EntryLogFlushBytes.
	FlushBytes  int64
	Sizes       []int
	Outstanding []int
	Modes       []uring.Mode
	// Duration of each measured cell, after Warmup.
	Duration, Warmup time.Duration
	// Runs per cell; results are medians.
	Runs int
	// NoSync runs the journal without fdatasync (and the raw baseline
	// without it too): results are labelled "not durable".
	NoSync bool
	// Raw adds the raw-disk baseline; HalfPeak adds, per size, a paced run
	// at half the best measured rate.
	Raw, HalfPeak bool
	// GroupWait is the journal's MaxGroupWait; 0 writes a group as soon
	// as the queue drains (records still batch behind an in-flight sync).
	GroupWait time.Duration
	// CPUProfile, if set, profiles the whole run into this file.
	CPUProfile string
	// Trace, if set, writes an execution trace of the whole run here.
	Trace string
	// WriteCacheSize is the bookie's write cache (both halves).
	WriteCacheSize int64
	// Batch, above 1, hands the bookie this many adds of one ledger per
	// AddEntries call (as its server does with the adds of one network
	// read), paced runs a batch every Batch intervals; 1 calls AddEntry
	// per add.
	Batch int
	// Progress receives one line per finished cell (nil: none).
	Progress io.Writer
}

// benchResult is one cell (median over runs).
type benchResult struct {
	Kind        string `json:"kind"` // "bookie", "raw", "half-peak"
	Mode        string `json:"mode"`
	Size        int    `json:"size"`
	Outstanding int    `json:"outstanding"`
	// TargetRate is the paced rate of a half-peak cell.
	TargetRate float64       `json:"target_rate,omitempty"`
	OpsPerSec  float64       `json:"ops_per_sec"`
	MBPerSec   float64       `json:"mb_per_sec"`
	P50        time.Duration `json:"p50_ns"`
	P99        time.Duration `json:"p99_ns"`
	P999       time.Duration `json:"p999_ns"`
	AllocsOp   float64       `json:"allocs_per_op"`
	// CPUPerOp is process CPU time (user+sys, all threads) per op: what
	// binds on a shared 2-core machine.
	CPUPerOp time.Duration `json:"cpu_ns_per_op"`
	Errors   int64         `json:"errors"`
	Durable  bool          `json:"durable"`
}

type sample struct {
	ops, errs      int64
	elapsed        time.Duration
	p50, p99, p999 time.Duration
	allocs         uint64
	cpu            time.Duration
}

// cpuTime returns the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runBench measures every cell and returns the medians.
func runBench(ctx context.Context, cfg benchConfig) ([]benchResult, error) {
	if cfg.Runs < 1 {
		cfg.Runs = 1
	}
	for _, rec := range []struct {
		path  string
		start func(io.Writer) error
		stop  func()
	}{{cfg.CPUProfile, pprof.StartCPUProfile, pprof.StopCPUProfile}, {cfg.Trace, trace.Start, trace.Stop}} {
		if rec.path == "" {
			continue
		}
		f, err := os.Create(rec.path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := rec.start(f); err != nil {
			return nil, err
		}
		defer rec.stop()
	}
	var out []benchResult
	report := func(r benchResult) {
		r.MBPerSec = r.OpsPerSec * float64(r.Size) / 1e6
		out = append(out, r)
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "%-9s %-8s size=%-6d out=%-4d %10.0f ops/s %8.1f MB/s p50=%v p99=%v p99.9=%v allocs/op=%.1f cpu/op=%v errors=%d\n",
				r.Kind, r.Mode, r.Size, r.Outstanding, r.OpsPerSec, r.MBPerSec, r.P50, r.P99, r.P999, r.AllocsOp, r.CPUPerOp, r.Errors)
		}
	}
	for _, size := range cfg.Sizes {
		best := 0.0
		for _, k := range cfg.Outstanding {
			if cfg.Raw {
				r, err := cell(ctx, cfg, func(dir string) (sample, error) { return rawRun(ctx, cfg, dir, size, k) })
				if err != nil {
					return out, err
				}
				r.Kind, r.Mode, r.Size, r.Outstanding = "raw", "pwrite", size, k
				report(r)
			}
			for _, m := range cfg.Modes {
				r, err := cell(ctx, cfg, func(dir string) (sample, error) { return bookieRun(ctx, cfg, dir, m, size, k, 0) })
				if err != nil {
					return out, err
				}
				r.Kind, r.Mode, r.Size, r.Outstanding = "bookie", m.String(), size, k
				best = max(best, r.OpsPerSec)
				report(r)
			}
		}
		if cfg.HalfPeak && best > 0 && len(cfg.Modes) > 0 {
			rate := best / 2
			m := cfg.Modes[0]
			r, err := cell(ctx, cfg, func(dir string) (sample, error) { return bookieRun(ctx, cfg, dir, m, size, 4096, rate) })
			if err != nil {
				return out, err
			}
			r.Kind, r.Mode, r.Size, r.Outstanding, r.TargetRate = "half-peak", m.String(), size, 4096, rate
			report(r)
		}
	}
	return out, nil
}

// cell runs fn cfg.Runs times, each in a fresh directory, and takes
// medians.
func cell(ctx context.Context, cfg benchConfig, fn func(dir string) (sample, error)) (benchResult, error) {
	var ss []sample
	for i := 0; i < cfg.Runs; i++ {
		if err := ctx.Err(); err != nil {
			return benchResult{}, err
		}
		dir, err := os.MkdirTemp(cfg.Dir, "run-")
		if err != nil {
			return benchResult{}, err
		}
		s, err := fn(dir)
		os.RemoveAll(dir)
		if cfg.LedgerDir != "" {
			os.RemoveAll(filepath.Join(cfg.LedgerDir, filepath.Base(dir)))
		}
		if err != nil {
			return benchResult{}, err
		}
		ss = append(ss, s)
	}
	med := func(f func(s sample) float64) float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	r := benchResult{
		OpsPerSec: med(func(s sample) float64 { return float64(s.ops) / s.elapsed.Seconds() }),
		P50:       time.Duration(med(func(s sample) float64 { return float64(s.p50) })),
		P99:       time.Duration(med(func(s sample) float64 { return float64(s.p99) })),
		P999:      time.Duration(med(func(s sample) float64 { return float64(s.p999) })),
		AllocsOp:  med(func(s sample) float64 { return float64(s.allocs) / float64(max(s.ops, 1)) }),
		CPUPerOp:  time.Duration(med(func(s sample) float64 { return float64(s.cpu) / float64(max(s.ops, 1)) })),
		Durable:   !cfg.NoSync,
	}
	for _, s := range ss {
		r.Errors += s.errs
	}
	return r, nil
}

// slot is one outstanding add.
type slot struct {
	start time.Time
	done  func(error)
}

// bookieRun measures one bookie cell: k adds kept outstanding (rate 0), or
// adds issued at rate per second with up to k outstanding, latency then
// measured from each add's scheduled time (no coordinated omission).
func bookieRun(ctx context.Context, cfg benchConfig, dir string, mode uring.Mode, size, k int, rate float64) (sample, error) {
	ledgerDir := filepath.Join(dir, "ledgers")
	if cfg.LedgerDir != "" {
		ledgerDir = filepath.Join(cfg.LedgerDir, filepath.Base(dir), "ledgers")
	}
	b, err := bookie.Open(bookie.Options{
		JournalDir:         filepath.Join(dir, "journal"),
		LedgerDirs:         []string{ledgerDir},
		JournalWriteMode:   mode,
		JournalDirectIO:    cfg.DirectIO,
		JournalZeroFill:    cfg.ZeroFill,
		EntryLogFlushBytes: cfg.FlushBytes,
		JournalNoSync:      cfg.NoSync,
		JournalMaxGroupWait: func() time.Duration {
			if cfg.GroupWait == 0 {
				return -1 // bookie.Options: negative = no wait
			}
			return cfg.GroupWait
		}(),
		DiskCheckInterval: -1,
		GCInterval:        -1,
		WriteCacheSize:    cfg.WriteCacheSize,
	})
	if err != nil {
		return sample{}, err
	}
	defer b.Close()
	hist := hdrhistogram.New(1, int64(time.Minute), 3)
	var (
		mu       sync.Mutex // guards hist (completions run on one goroutine, refusals inline)
		free     = make(chan *slot, k)
		measured atomic.Bool
		ops      atomic.Int64
		errs     atomic.Int64
	)
	for range k {
		s := &slot{}
		s.done = func(err error) {
			if measured.Load() {
				if err != nil {
					errs.Add(1)
				} else {
					lat := time.Since(s.start)
					mu.Lock()
					hist.RecordValue(int64(lat))
					mu.Unlock()
					ops.Add(1)
				}
			}
			free <- s
		}
		free <- s
	}
	key := []byte("bench-master-key")
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(i)
	}
	const ledgers = 4
	var next [ledgers]int64
	// batch adds per AddEntries call: a power of two up to 64 and at
	// most k (the closed loop's clock check falls on multiples of 64).
	batch := 1
	for batch*2 <= min(cfg.Batch, k, 64) {
		batch *= 2
	}
	var adds []bookie.Add
	i := 0 // adds issued
	// addBatch adds batch entries to one ledger in one AddEntries call,
	// all stamped with start, or with one clock read when start is zero
	// (they are handed over together); i stays a multiple of batch,
	// which divides 64, so the clock check below still comes every 64
	// adds.
	slots := make([]*slot, 0, 64)
	addBatch := func(start time.Time) {
		l := (i / batch) % ledgers
		slots, adds = slots[:0], adds[:0]
		for range batch {
			slots = append(slots, <-free)
		}
		if start.IsZero() {
			start = time.Now()
		}
		for _, s := range slots {
			s.start = start
			adds = append(adds, bookie.Add{Ledger: int64(l + 1), Entry: next[l], MasterKey: key, Payload: payload, Done: s.done})
			next[l]++
		}
		i += batch
		b.AddEntries(adds)
	}
	var interval time.Duration
	if rate > 0 {
		interval = time.Duration(float64(time.Second) / rate)
	}
	var ms0, ms1 runtime.MemStats
	var cpu0 time.Duration
	begin := time.Now()
	warmEnd := begin.Add(cfg.Warmup)
	end := warmEnd.Add(cfg.Duration)
	sched := begin
	var measStart time.Time
	for {
		// Closed loop: read the clock for the phase checks only every 64
		// adds (each add still stamps its own start); the driver's clock
		// reads are part of the cpu/op figure.
		// With few outstanding adds (slow ones) every add reads it, so
		// the measured window starts and ends on time.
		if interval == 0 && k >= 64 && i&63 != 0 {
			if batch > 1 {
				addBatch(time.Time{})
				continue
			}
			s := <-free
			s.start = time.Now()
			l := i % ledgers
			i++
			b.AddEntry(int64(l+1), next[l], key, payload, false, s.done)
			next[l]++
			continue
		}
		now := time.Now()
		if !measured.Load() && !now.Before(warmEnd) {
			runtime.ReadMemStats(&ms0)
			cpu0 = cpuTime()
			measStart = time.Now()
			measured.Store(true)
		}
		if !now.Before(end) || ctx.Err() != nil {
			break
		}
		if batch > 1 {
			// Paced: a batch every batch intervals, each add's latency
			// counted from the batch's scheduled time.
			var start time.Time
			if interval > 0 {
				sched = sched.Add(interval * time.Duration(batch))
				if d := time.Until(sched); d > 0 {
					time.Sleep(d)
				}
				start = sched
			}
			addBatch(start)
			continue
		}
		s := <-free
		if interval > 0 {
			sched = sched.Add(interval)
			if d := time.Until(sched); d > 0 {
				time.Sleep(d)
			}
			s.start = sched
		} else {
			s.start = time.Now()
		}
		l := i % ledgers
		i++
		b.AddEntry(int64(l+1), next[l], key, payload, false, s.done)
		next[l]++
	}
	elapsed := time.Since(measStart)
	for range k { // drain: every outstanding add completes
		<-free
	}
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&ms1)
	if err := ctx.Err(); err != nil {
		return sample{}, err
	}
	return sample{
		ops: ops.Load(), errs: errs.Load(), elapsed: elapsed, cpu: cpu,
		p50: time.Duration(hist.ValueAtQuantile(50)), p99: time.Duration(hist.ValueAtQuantile(99)),
		p999: time.Duration(hist.ValueAtQuantile(99.9)), allocs: ms1.Mallocs - ms0.Mallocs,
	}, nil
}

// rawRun is the baseline: groups of k records (the journal's record
// header plus size bytes each, as the journal writes them) written with
// pwrite into a file preallocated in 16 MiB steps, one fdatasync per
// group. Ops are records; latency is per group (what every record in it
// waits).
func rawRun(ctx context.Context, cfg benchConfig, dir string, size, k int) (sample, error) {
	fs := vfs.NewOS()
	f, err := fs.Create(filepath.Join(dir, "raw.dat"))
	if err != nil {
		return sample{}, err
	}
	defer f.Close()
	group := make([]byte, k*(journal.RecordHeaderSize+size))
	for i := range group {
		group[i] = byte(i * 7)
	}
	const step = 16 << 20
	hist := hdrhistogram.New(1, int64(time.Minute), 3)
	var off, prealloc, ops int64
	begin := time.Now()
	warmEnd := begin.Add(cfg.Warmup)
	end := warmEnd.Add(cfg.Duration)
	var measStart time.Time
	var cpu0 time.Duration
	measured := false
	for {
		now := time.Now()
		if !measured && !now.Before(warmEnd) {
			measured, measStart, cpu0 = true, now, cpuTime()
		}
		if !now.Before(end) || ctx.Err() != nil {
			break
		}
		if off+int64(len(group)) > prealloc {
			if err := f.Preallocate(prealloc, step+int64(len(group))); err != nil {
				return sample{}, err
			}
			prealloc += step + int64(len(group))
		}
		start := time.Now()
		if _, err := f.WriteAt(group, off); err != nil {
			return sample{}, err
		}
		if !cfg.NoSync {
			if err := f.Sync(); err != nil {
				return sample{}, err
			}
		}
		off += int64(len(group))
		if off > 1<<30 { // stay within 1 GiB, like a rolled journal file
			off, prealloc = 0, 0
			if err := f.Truncate(0); err != nil {
				return sample{}, err
			}
		}
		if measured {
			hist.RecordValue(int64(time.Since(start)))
			ops += int64(k)
		}
	}
	if err := ctx.Err(); err != nil {
		return sample{}, err
	}
	return sample{ops: ops, elapsed: time.Since(measStart), cpu: cpuTime() - cpu0,
		p50: time.Duration(hist.ValueAtQuantile(50)), p99: time.Duration(hist.ValueAtQuantile(99)),
		p999: time.Duration(hist.ValueAtQuantile(99.9))}, nil
}

// fillMBps fills MBPerSec from OpsPerSec and Size (payload bytes).
func fillMBps(rs []benchResult) {
	for i := range rs {
		rs[i].MBPerSec = rs[i].OpsPerSec * float64(rs[i].Size) / 1e6
	}
}

// printBenchTable prints the results with ratios against the raw baseline of
// the same size and outstanding count.
func printBenchTable(w io.Writer, rs []benchResult) {
	durable := true
	for _, r := range rs {
		durable = durable && r.Durable
	}
	if !durable {
		fmt.Fprintln(w, "*** NOT DURABLE: fdatasync disabled (--nosync); these are not durable-add figures ***")
	}
	raw := map[[2]int]benchResult{}
	for _, r := range rs {
		if r.Kind == "raw" {
			raw[[2]int{r.Size, r.Outstanding}] = r
		}
	}
	fmt.Fprintf(w, "%-9s %-8s %6s %5s %12s %9s %9s %9s %9s %8s %9s %9s %9s\n",
		"kind", "mode", "size", "out", "ops/s", "MB/s", "p50", "p99", "p99.9", "allocs", "cpu/op", "MB/s/raw", "p99/raw")
	sorted := slices.Clone(rs)
	slices.SortStableFunc(sorted, func(a, b benchResult) int {
		return cmp.Or(cmp.Compare(a.Size, b.Size), cmp.Compare(a.Outstanding, b.Outstanding))
	})
	for _, r := range sorted {
		ratio, p99r := "", ""
		base, ok := raw[[2]int{r.Size, r.Outstanding}]
		if r.Kind == "half-peak" {
			base, ok = raw[[2]int{r.Size, 1}]
		}
		if ok && r.Kind != "raw" && base.MBPerSec > 0 {
			if r.Kind != "half-peak" {
				ratio = fmt.Sprintf("%.2f", r.MBPerSec/base.MBPerSec)
			}
			p99r = fmt.Sprintf("%.2f", float64(r.P99)/float64(base.P99))
		}
		label := r.Kind
		if !r.Durable {
			label += "*"
		}
		fmt.Fprintf(w, "%-9s %-8s %6d %5d %12.0f %9.1f %9v %9v %9v %8.1f %9v %9s %9s\n",
			label, r.Mode, r.Size, r.Outstanding, r.OpsPerSec, r.MBPerSec, roundDur(r.P50), roundDur(r.P99), roundDur(r.P999), r.AllocsOp, roundDur(r.CPUPerOp), ratio, p99r)
	}
	fmt.Fprintln(w, "raw: pwrite of k records' bytes + one fdatasync per group, latency per group; half-peak: paced at half the best rate, p99/raw vs raw k=1")
	if !durable {
		fmt.Fprintln(w, "* not durable")
	}
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d > time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d > time.Microsecond:
		return d.Round(100 * time.Nanosecond)
	}
	return d
}
