package bookie

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	bk "github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/journal"
)

// Histogram bounds: 1 ns to a minute; runs at 3 significant digits,
// windows at 2 (they are many and only give percentiles over time).
const (
	histMax    = int64(time.Minute)
	histDigits = 3
	winDigits  = 2
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, histMax, histDigits) }

func clampNs(v int64) int64 { return min(max(v, 1), histMax) }

// recorder collects one run's latencies: all ops issued in the measured
// window in hist, and per window of completion time their count and
// latencies. done is called from one goroutine at a time (the bookie's
// completion goroutine, or the raw loop), so it takes no lock; the
// results are read after the run, once every op completed.
type recorder struct {
	// start and end bound the measured window (journal.Nanotime); both
	// MaxInt64 until it opens (begin stores end, then start).
	start, end atomic.Int64
	win        int64
	hist       *hdrhistogram.Histogram
	wins       []*hdrhistogram.Histogram
	winOps     []int64
	ops        int64 // completed within [start, end)
}

func newRecorder(d, win time.Duration) *recorder {
	n := int((d + win - 1) / win)
	r := &recorder{win: int64(win), hist: newHist(), wins: make([]*hdrhistogram.Histogram, n), winOps: make([]int64, n)}
	for i := range r.wins {
		r.wins[i] = hdrhistogram.New(1, histMax, winDigits)
	}
	r.start.Store(math.MaxInt64)
	r.end.Store(math.MaxInt64)
	return r
}

// begin opens the measured window at now for d.
func (r *recorder) begin(now int64, d time.Duration) {
	r.end.Store(now + int64(d))
	r.start.Store(now)
}

// clock drives a run's loop through its warmup and measured window, and
// paces the units of a paced run.
type clock struct {
	cfg       Config
	rec       *recorder
	warmEnd   int64
	end       int64
	sched     int64 // the last unit's scheduled time (paced runs)
	measuring bool  // the measured window is open
}

func newClock(cfg Config, rec *recorder) *clock {
	begin := journal.Nanotime()
	warmEnd := begin + int64(cfg.Warmup)
	return &clock{cfg: cfg, rec: rec, warmEnd: warmEnd, end: warmEnd + int64(cfg.Duration), sched: begin}
}

// next reads the time; at the end of the warmup it calls open (the
// caller's snapshot of its counters) and opens the recorder's window. It
// reports false once the window closed or ctx is done.
func (c *clock) next(ctx context.Context, open func()) bool {
	now := journal.Nanotime()
	if !c.measuring && now >= c.warmEnd {
		open()
		now = journal.Nanotime()
		c.end = now + int64(c.cfg.Duration)
		c.rec.begin(now, c.cfg.Duration)
		c.measuring = true
	}
	return now < c.end && ctx.Err() == nil
}

// pace waits for the next unit's scheduled time, interval after the last
// one's, and returns it; in the window it records in lag how late the
// wait ended (a late unit's latency counts from its scheduled time).
func (c *clock) pace(interval int64, lag *hdrhistogram.Histogram) int64 {
	c.sched += interval
	if w := c.sched - journal.Nanotime(); w > 0 {
		time.Sleep(time.Duration(w))
	}
	if c.measuring {
		lag.RecordValue(clampNs(journal.Nanotime() - c.sched))
	}
	return c.sched
}

// measuring reports whether an op issued at t counts.
func (r *recorder) measuring(t int64) bool { return t >= r.start.Load() }

// done records n ops issued at issued and completed at now.
func (r *recorder) done(issued, now int64, n int64) {
	start := r.start.Load()
	lat := clampNs(now - issued)
	if issued >= start {
		r.hist.RecordValues(lat, n)
	}
	if now < start || now >= r.end.Load() {
		return
	}
	r.ops += n
	if w := (now - start) / r.win; w < int64(len(r.wins)) {
		r.wins[w].RecordValues(lat, n)
		r.winOps[w] += n
	}
}

// windows returns the run's timeline.
func (r *recorder) windows() []Window {
	out := make([]Window, len(r.wins))
	for i, h := range r.wins {
		out[i] = Window{Start: time.Duration(int64(i) * r.win), Ops: r.winOps[i]}
		if h.TotalCount() > 0 {
			out[i].P50 = time.Duration(h.ValueAtQuantile(50))
			out[i].P99 = time.Duration(h.ValueAtQuantile(99))
			out[i].Max = time.Duration(h.Max())
		}
	}
	return out
}

// stageLog keeps a run's traced adds (bookie Options.OnAddStages, on the
// completion goroutine) and checkpoints (OnCheckpoint, on the checkpoint
// goroutine).
type stageLog struct {
	rec     *recorder
	samples []bk.AddStages // issued in the measured window

	mu  sync.Mutex
	cps []bk.CheckpointStages
}

func (l *stageLog) add(s bk.AddStages) {
	if l.rec.measuring(s.Start) {
		l.samples = append(l.samples, s)
	}
}

func (l *stageLog) checkpoint(c bk.CheckpointStages) {
	l.mu.Lock()
	l.cps = append(l.cps, c)
	l.mu.Unlock()
}

// spans returns the checkpoints that overlap the measured window, from
// its start.
func (l *stageLog) spans() []Span {
	l.mu.Lock()
	defer l.mu.Unlock()
	start, end := l.rec.start.Load(), l.rec.end.Load()
	var out []Span
	for _, c := range l.cps {
		if c.Start+c.Total < start || c.Start >= end {
			continue
		}
		s := Span{Start: time.Duration(c.Start - start), Length: time.Duration(c.Total), Entries: c.Entries}
		for i, d := range c.D {
			s.Steps[i] = time.Duration(d)
		}
		out = append(out, s)
	}
	return out
}

// stageMeans returns per window the mean of each stage of the adds
// traced in it (by issue time).
func (l *stageLog) stageMeans(d, win time.Duration) [][bk.NumAddStages]time.Duration {
	n := int((d + win - 1) / win)
	sums := make([][bk.NumAddStages]int64, n)
	counts := make([]int64, n)
	start := l.rec.start.Load()
	for _, s := range l.samples {
		w := (s.Start - start) / int64(win)
		if w < 0 || w >= int64(n) {
			continue
		}
		for i, v := range s.D {
			sums[w][i] += v
		}
		counts[w]++
	}
	out := make([][bk.NumAddStages]time.Duration, n)
	for w := range out {
		if counts[w] > 0 {
			for i := range out[w] {
				out[w][i] = time.Duration(sums[w][i] / counts[w])
			}
		}
	}
	return out
}

// summarizeStages merges the runs' samples into per-stage histograms
// (the whole latency last) and summaries, with each stage's mean over
// the slowest 1 % of the samples.
func summarizeStages(runs [][]bk.AddStages) ([]*hdrhistogram.Histogram, []StageSummary) {
	var all []bk.AddStages
	for _, r := range runs {
		all = append(all, r...)
	}
	if len(all) == 0 {
		return nil, nil
	}
	hs := make([]*hdrhistogram.Histogram, bk.NumAddStages+1)
	for i := range hs {
		hs[i] = newHist()
	}
	for _, s := range all {
		for i, v := range s.D {
			hs[i].RecordValue(clampNs(v))
		}
		hs[bk.NumAddStages].RecordValue(clampNs(s.Total()))
	}
	slices.SortFunc(all, func(a, b bk.AddStages) int { return int(b.Total() - a.Total()) })
	tail := all[:max(len(all)/100, 1)]
	var out []StageSummary
	for i := range hs {
		name := "total"
		if i < int(bk.NumAddStages) {
			name = bk.AddStage(i).String()
		}
		var tsum int64
		for _, s := range tail {
			if i < int(bk.NumAddStages) {
				tsum += s.D[i]
			} else {
				tsum += s.Total()
			}
		}
		out = append(out, StageSummary{
			Stage: name, Mean: time.Duration(hs[i].Mean()), P99: time.Duration(hs[i].ValueAtQuantile(99)),
			Max: time.Duration(hs[i].Max()), TailMean: time.Duration(tsum / int64(len(tail))),
		})
	}
	return hs, out
}
