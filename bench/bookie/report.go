package bookie

import (
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/magnetar-mq/magnetar/bench/report"
	bk "github.com/magnetar-mq/magnetar/bookie"
)

// Report builds the HTML report of a run's results (Detail must be set,
// as Run sets it). command is the command line, m the machine as probed
// at the start (LoadEnd is filled here).
func Report(cfg Config, rs []Result, m report.Machine, command string, started, ended time.Time) *report.Report {
	cfg.EnsureDefaults()
	m.LoadEnd = report.LoadAverage()
	r := &report.Report{
		Title:   "magnetar bench bookie",
		Command: command,
		Started: started, Ended: ended,
		Machine:  m,
		Settings: settings(cfg),
		Notes: []string{
			"Each bookie cell opens a fresh bookie and keeps the given number of adds outstanding (closed loop), or paces them at half the best rate of the size (half-peak). Its runs were interleaved with runs of the raw baseline at the same size and depth: a loop writing the same bytes (the journal's record headers and payloads, that many records per group) with pwrite and one fdatasync per group, whose latency is per group. Figures are medians over the runs; ratios are to that baseline. A half-peak cell's runs were also interleaved with the paced raw loop: the same arrivals (units on the same schedule, no more outstanding), one pwrite and one fdatasync per group of whatever arrived, latency per record from its scheduled time: group commit with nothing else on the path.",
			"Timelines show the run with the median rate, in windows of " + cfg.Window.String() + " by completion time; shaded bands are the bookie's checkpoints. Percentile curves merge all runs. Stages come from one traced add in " + fmt.Sprint(cfg.StageSampling) + " (0: none traced) and add up to its whole latency.",
		},
	}
	for _, size := range cfg.Sizes {
		sec := &report.Section{Title: fmt.Sprintf("%d-byte entries", size)}
		tab := report.Table{Header: []string{"cell", "mode", "outstanding", "ops/s", "MB/s", "÷ raw", "p50", "p99", "p99 ÷ raw p99", "p99 ÷ paced raw p99", "p99.9", "max", "CPU per op", "allocs per op"}}
		for _, res := range rs {
			if res.Size != size {
				continue
			}
			ratio, p99r := "", ""
			if b := res.Raw; b != nil && b.OpsPerSec > 0 {
				if res.Kind != "half-peak" {
					ratio = fmt.Sprintf("%.2f", res.OpsPerSec/b.OpsPerSec)
				}
				if b.P99 > 0 {
					p99r = fmt.Sprintf("%.2f (raw %v)", float64(res.P99)/float64(b.P99), roundDur(b.P99))
				}
			}
			pacedr := ""
			if p := res.PacedRaw; p != nil && p.P99 > 0 {
				pacedr = fmt.Sprintf("%.2f (paced raw %v)", float64(res.P99)/float64(p.P99), roundDur(p.P99))
			}
			tab.Rows = append(tab.Rows, []string{res.Kind, res.Mode, fmt.Sprint(res.Outstanding), fmt.Sprintf("%.0f", res.OpsPerSec), fmt.Sprintf("%.1f", res.MBPerSec),
				ratio, roundDur(res.P50).String(), roundDur(res.P99).String(), p99r, pacedr, roundDur(res.P999).String(), roundDur(res.Max).String(),
				roundDur(res.CPUPerOp).String(), fmt.Sprintf("%.2f", res.AllocsOp)})
		}
		sec.Tables = append(sec.Tables, tab)
		for _, res := range rs {
			if res.Size != size || res.Kind == "raw" || res.Detail == nil {
				continue
			}
			cellCharts(sec, res)
		}
		r.Sections = append(r.Sections, sec)
	}
	return r
}

// cellCharts adds one bookie cell's charts: throughput and latency over
// time beside the baseline's, the latency distributions, and where the
// sampled adds' time went.
func cellCharts(sec *report.Section, res Result) {
	d := res.Detail
	name := fmt.Sprintf("%s %s, %d outstanding", res.Kind, res.Mode, res.Outstanding)
	if res.Kind == "half-peak" {
		name = fmt.Sprintf("half peak (%.0f/s), %s, ≤ %d outstanding", res.TargetRate, res.Mode, res.Outstanding)
	}
	run := d.Runs[d.Median]
	var bands []report.Band
	span := report.Axis{Label: "seconds", Min: 0, Max: float64(len(run.Windows)) * window(run.Windows).Seconds()}
	for _, c := range run.Checkpoints {
		bands = append(bands, report.Band{From: max(c.Start, 0).Seconds(), To: min(c.Start+c.Length, time.Duration(span.Max*1e9)).Seconds(),
			Label: fmt.Sprintf("checkpoint of %d entries, %v: append %v, entry-log sync %v, index %v, index flush %v",
				c.Entries, roundDur(c.Length), roundDur(c.Steps[bk.CkptAppend]), roundDur(c.Steps[bk.CkptLogSync]), roundDur(c.Steps[bk.CkptIndex]), roundDur(c.Steps[bk.CkptIndexFlush]))})
	}
	rate := report.Chart{Title: "throughput over time: " + name, X: span, Y: report.Axis{Label: "ops per second"}, Bands: bands}
	lat := report.Chart{Title: "latency over time: " + name, X: span, Y: report.Axis{Label: "milliseconds", Log: true}, Bands: bands}
	perSec := func(w Window, win time.Duration) float64 { return float64(w.Ops) / win.Seconds() }
	timeline := func(ws []Window) (ops, p50, p99, mx []report.Point) {
		if len(ws) == 0 {
			return
		}
		win := window(ws)
		for _, w := range ws {
			x := (w.Start + win/2).Seconds()
			if win > 0 {
				ops = append(ops, report.Point{X: x, Y: perSec(w, win)})
			}
			if w.Ops > 0 {
				p50 = append(p50, report.Point{X: x, Y: ms(w.P50)})
				p99 = append(p99, report.Point{X: x, Y: ms(w.P99)})
				mx = append(mx, report.Point{X: x, Y: ms(w.Max)})
			}
		}
		return
	}
	ops, p50, p99, mx := timeline(run.Windows)
	rate.Series = append(rate.Series, report.Series{Name: "bookie", Points: ops, Color: 0})
	lat.Series = append(lat.Series,
		report.Series{Name: "bookie p50", Points: p50, Color: 2},
		report.Series{Name: "bookie p99", Points: p99, Color: 0},
		report.Series{Name: "bookie max", Points: mx, Color: 3})
	dist := report.Chart{Title: "latency distribution: " + name, X: report.Axis{Label: "percentile", Percentile: true}, Y: report.Axis{Label: "milliseconds", Log: true},
		Series: []report.Series{curve("bookie", d.Latency, 0)}}
	if raw := d.Raw; raw != nil {
		rrun := raw.Runs[raw.Median]
		rops, _, rp99, _ := timeline(rrun.Windows)
		rate.Series = append(rate.Series, report.Series{Name: "raw baseline (records)", Points: rops, Dashed: true, Color: 1})
		lat.Series = append(lat.Series, report.Series{Name: "raw p99", Points: rp99, Dashed: true, Color: 1})
		dist.Series = append(dist.Series, curve("raw baseline (per group)", raw.Latency, 1))
		dist.Series[len(dist.Series)-1].Dashed = true
	}
	if paced := d.PacedRaw; paced != nil {
		prun := paced.Runs[paced.Median]
		_, _, pp99, _ := timeline(prun.Windows)
		lat.Series = append(lat.Series, report.Series{Name: "paced raw p99", Points: pp99, Dashed: true, Color: 4})
		dist.Series = append(dist.Series, curve("paced raw (per record)", paced.Latency, 4))
		dist.Series[len(dist.Series)-1].Dashed = true
	}
	sec.Charts = append(sec.Charts, rate, lat, dist)
	if len(res.Stages) == 0 {
		return
	}
	segs := make([]string, bk.NumAddStages)
	mean, tail := make([]float64, bk.NumAddStages), make([]float64, bk.NumAddStages)
	for i := range segs {
		segs[i] = bk.AddStage(i).String()
		mean[i], tail[i] = us(res.Stages[i].Mean), us(res.Stages[i].TailMean)
	}
	sec.Bars = append(sec.Bars, report.Bars{
		Title: "where the time of an add goes: " + name, Unit: "microseconds", Segments: segs,
		Rows:    []report.BarRow{{Label: "mean of sampled adds", Values: mean}, {Label: "mean of the slowest 1%", Values: tail}},
		Caption: "cache: checks, locks, copy into the write cache; queue: into a journal group; behind: waiting for the group in flight; group: the committer taking the group; write: Submit; sync: write and fdatasync; complete: the callbacks before this add's.",
	})
	if len(run.StageMeans) > 0 {
		st := report.Chart{Title: "stages over time (means per window): " + name, X: span, Y: report.Axis{Label: "milliseconds", Log: true}, Bands: bands}
		win := window(run.Windows)
		for i := range bk.NumAddStages {
			var pts []report.Point
			for w, m := range run.StageMeans {
				if m[i] > 0 {
					pts = append(pts, report.Point{X: (time.Duration(w)*win + win/2).Seconds(), Y: ms(m[i])})
				}
			}
			if len(pts) > 1 { // a stage seen in one window only is in the bars
				st.Series = append(st.Series, report.Series{Name: i.String(), Points: pts, Color: int(i)})
			}
		}
		if len(st.Series) > 0 {
			sec.Charts = append(sec.Charts, st)
		}
	}
}

// window returns the length of the windows of a timeline.
func window(ws []Window) time.Duration {
	if len(ws) > 1 {
		return ws[1].Start - ws[0].Start
	}
	return time.Second
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
func us(d time.Duration) float64 { return float64(d) / 1e3 }

func curve(name string, h *hdrhistogram.Histogram, color int) report.Series {
	s := report.PercentileCurve(name, h, 1e-6)
	s.Color = color
	return s
}

// settings lists cfg for the report.
func settings(cfg Config) []report.KV {
	modes := ""
	for i, m := range cfg.Modes {
		if i > 0 {
			modes += ", "
		}
		modes += m.String()
	}
	kv := func(k string, v any) report.KV { return report.KV{Key: k, Value: fmt.Sprint(v)} }
	return []report.KV{
		kv("entry sizes (bytes)", cfg.Sizes), kv("outstanding adds", cfg.Outstanding), kv("journal write modes", modes),
		kv("measured per run", cfg.Duration), kv("warmup per run", cfg.Warmup), kv("runs per cell (medians)", cfg.Runs),
		kv("adds per AddEntries call", cfg.Batch), kv("durable (fdatasync)", !cfg.NoSync), kv("raw baseline", cfg.Raw),
		kv("half-peak cell", fmt.Sprintf("%v, ≤ %d outstanding", cfg.HalfPeak, cfg.HalfPeakOutstanding)),
		kv("journal group wait", cfg.GroupWait), kv("journal O_DIRECT", cfg.DirectIO), kv("journal zero fill", cfg.ZeroFill),
		kv("write cache (both halves)", cfg.WriteCacheSize), kv("checkpoint spread (0: default, <0: off)", cfg.CheckpointSpread), kv("entry-log writeback steps (bytes, 0 = off)", cfg.FlushBytes),
		kv("ledger dirs", cfgLedgerDir(cfg)), kv("stage sampling (1 in)", cfg.StageSampling), kv("timeline window", cfg.Window),
	}
}

func cfgLedgerDir(cfg Config) string {
	if cfg.LedgerDir != "" {
		return cfg.LedgerDir
	}
	return "under the run's directory"
}
