package bookie

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"time"

	bk "github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/internal/uring"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// Run measures every cell and returns the medians: per size, per
// outstanding count, the raw baseline and each mode, their runs
// interleaved; then, with HalfPeak, a paced cell at half the best rate of
// the size interleaved with raw runs at its depth.
func Run(ctx context.Context, cfg Config) ([]Result, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
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
	var out []Result
	report := func(r Result) {
		r.MBPerSec = r.OpsPerSec * float64(r.Size) / 1e6
		if r.Raw != nil {
			r.Raw.MBPerSec = r.Raw.OpsPerSec * float64(r.Size) / 1e6
		}
		if r.PacedRaw != nil {
			r.PacedRaw.MBPerSec = r.PacedRaw.OpsPerSec * float64(r.Size) / 1e6
		}
		out = append(out, r)
		if cfg.Progress != nil {
			fmt.Fprintln(cfg.Progress, progressLine(r))
		}
	}
	for _, size := range cfg.Sizes {
		best := 0.0
		for _, k := range cfg.Outstanding {
			cells, err := interleave(ctx, cfg, size, k, cfg.Raw, cfg.Modes, 0)
			for _, r := range cells {
				if r.Kind == "bookie" {
					best = max(best, r.OpsPerSec)
				}
				report(r)
			}
			if err != nil {
				return out, err
			}
		}
		if cfg.HalfPeak && best > 0 && len(cfg.Modes) > 0 {
			rate := best / 2
			cells, err := interleave(ctx, cfg, size, cfg.HalfPeakOutstanding, cfg.Raw, cfg.Modes[:1], rate)
			for _, r := range cells {
				if r.Kind != "raw" { // the baseline is in r.Raw
					report(r)
				}
			}
			if err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// interleave measures the raw baseline (when raw) and a bookie cell per
// mode at one size and outstanding count, paced at rate (0: closed loop),
// Runs times in turn, and returns the raw cell first, then one per mode
// with Raw set. A paced cell with raw also gets the paced raw loop in
// every round (PacedRaw).
func interleave(ctx context.Context, cfg Config, size, k int, raw bool, modes []uring.Mode, rate float64) ([]Result, error) {
	type loop struct {
		run  func(dir string) (sample, error)
		runs []sample
	}
	var loops []*loop
	if raw {
		loops = append(loops, &loop{run: func(dir string) (sample, error) { return rawRun(ctx, cfg, dir, size, k) }})
		if rate > 0 {
			loops = append(loops, &loop{run: func(dir string) (sample, error) { return pacedRawRun(ctx, cfg, vfs.NewOS(), dir, size, k, rate) }})
		}
	}
	bookies := len(loops)
	for _, m := range modes {
		loops = append(loops, &loop{run: func(dir string) (sample, error) { return bookieRun(ctx, cfg, dir, m, size, k, rate) }})
	}
	for range cfg.Runs {
		for _, l := range loops {
			s, err := inFreshDir(ctx, cfg, l.run)
			if err != nil {
				return nil, err
			}
			l.runs = append(l.runs, s)
		}
	}
	var out []Result
	var base, paced *Result
	if raw {
		r := medians(cfg, loops[0].runs)
		r.Kind, r.Mode, r.Size, r.Outstanding = "raw", "pwrite", size, k
		out = append(out, r)
		base = &r
		if rate > 0 {
			p := medians(cfg, loops[1].runs)
			p.Kind, p.Mode, p.Size, p.Outstanding, p.TargetRate = "paced-raw", "pwrite", size, k, rate
			paced = &p
		}
	}
	for i, m := range modes {
		r := medians(cfg, loops[bookies+i].runs)
		r.Kind, r.Mode, r.Size, r.Outstanding = "bookie", m.String(), size, k
		if rate > 0 {
			r.Kind, r.TargetRate = "half-peak", rate
		}
		if base != nil {
			r.Raw, r.Detail.Raw = withoutDetail(base), base.Detail
		}
		if paced != nil {
			r.PacedRaw, r.Detail.PacedRaw = withoutDetail(paced), paced.Detail
		}
		out = append(out, r)
	}
	return out, nil
}

// withoutDetail is a copy of a baseline's figures for a cell's Raw or
// PacedRaw (its detail goes to the cell's Detail).
func withoutDetail(r *Result) *Result {
	c := *r
	c.Detail = nil
	return &c
}

// inFreshDir runs fn in a new directory under cfg.Dir, removed after
// (with its ledger dir under cfg.LedgerDir).
func inFreshDir(ctx context.Context, cfg Config, fn func(dir string) (sample, error)) (sample, error) {
	if err := ctx.Err(); err != nil {
		return sample{}, err
	}
	dir, err := os.MkdirTemp(cfg.Dir, "run-")
	if err != nil {
		return sample{}, err
	}
	s, err := fn(dir)
	os.RemoveAll(dir)
	if cfg.LedgerDir != "" {
		os.RemoveAll(filepath.Join(cfg.LedgerDir, filepath.Base(dir)))
	}
	return s, err
}

// medians reduces a cell's runs to medians and keeps their detail.
func medians(cfg Config, ss []sample) Result {
	med := func(f func(s sample) float64) float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	q := func(p float64) func(s sample) float64 {
		return func(s sample) float64 { return float64(s.hist.ValueAtQuantile(p)) }
	}
	rate := func(s sample) float64 { return float64(s.ops) / s.elapsed.Seconds() }
	r := Result{
		OpsPerSec:   med(rate),
		P50:         time.Duration(med(q(50))),
		P99:         time.Duration(med(q(99))),
		P999:        time.Duration(med(q(99.9))),
		Max:         time.Duration(med(func(s sample) float64 { return float64(s.hist.Max()) })),
		AllocsOp:    med(func(s sample) float64 { return float64(s.allocs) / float64(max(s.ops, 1)) }),
		CPUPerOp:    time.Duration(med(func(s sample) float64 { return float64(s.cpu) / float64(max(s.ops, 1)) })),
		SchedP99:    time.Duration(med(func(s sample) float64 { return float64(s.schedP99) })),
		SchedP999:   time.Duration(med(func(s sample) float64 { return float64(s.schedP999) })),
		IssueLagP99: time.Duration(med(func(s sample) float64 { return float64(s.lagP99) })),
		IssueLagMax: time.Duration(med(func(s sample) float64 { return float64(s.lagMax) })),
		Durable:     !cfg.NoSync,
	}
	d := &Detail{Latency: newHist()}
	var traced [][]bk.AddStages
	var js JournalSummary
	var syncSum, waitSum, compSum int64
	var syncN, waitN, compN uint64
	for i, s := range ss {
		r.Errors += s.errs
		r.WaitFree += s.waitFree
		d.Runs = append(d.Runs, s.detail)
		d.Latency.Merge(s.hist)
		if rate(s) == r.OpsPerSec {
			d.Median = i
		}
		traced = append(traced, s.stages)
		if s.journalSeen {
			a, b := s.jafter, s.jbefore
			js.Groups += a.Groups - b.Groups
			js.GroupRecords += float64(a.Entries - b.Entries)
			syncSum, syncN = syncSum+a.SyncLatency.Sum-b.SyncLatency.Sum, syncN+a.SyncLatency.Count-b.SyncLatency.Count
			waitSum, waitN = waitSum+a.SyncWait.Sum-b.SyncWait.Sum, waitN+a.SyncWait.Count-b.SyncWait.Count
			compSum, compN = compSum+a.CompleteLatency.Sum-b.CompleteLatency.Sum, compN+a.CompleteLatency.Count-b.CompleteLatency.Count
		}
	}
	if js.Groups > 0 {
		js.GroupRecords /= float64(js.Groups)
		mean := func(sum int64, n uint64) time.Duration { return time.Duration(sum / int64(max(n, 1))) }
		js.SyncMean, js.SyncWaitMean, js.CompleteMean = mean(syncSum, syncN), mean(waitSum, waitN), mean(compSum, compN)
		r.Journal = &js
	}
	d.Stages, r.Stages = summarizeStages(traced)
	r.Detail = d
	return r
}
