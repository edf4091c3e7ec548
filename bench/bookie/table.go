package bookie

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// progressLine is the line printed per finished cell.
func progressLine(r Result) string {
	line := fmt.Sprintf("%-9s %-8s size=%-6d out=%-5d %10.0f ops/s %8.1f MB/s p50=%v p99=%v p99.9=%v max=%v allocs/op=%.1f cpu/op=%v errors=%d",
		r.Kind, r.Mode, r.Size, r.Outstanding, r.OpsPerSec, r.MBPerSec, roundDur(r.P50), roundDur(r.P99), roundDur(r.P999), roundDur(r.Max), r.AllocsOp, roundDur(r.CPUPerOp), r.Errors)
	if r.Raw != nil && r.Raw.P99 > 0 {
		line += fmt.Sprintf(" | raw %0.f ops/s p99=%v: p99/raw %.2f", r.Raw.OpsPerSec, roundDur(r.Raw.P99), float64(r.P99)/float64(r.Raw.P99))
	}
	if p := r.PacedRaw; p != nil && p.P99 > 0 {
		line += fmt.Sprintf(" | paced raw %0.f ops/s p99=%v: p99/paced %.2f", p.OpsPerSec, roundDur(p.P99), float64(r.P99)/float64(p.P99))
	}
	return line
}

// FillMBps fills MBPerSec from OpsPerSec and Size (payload bytes).
func FillMBps(rs []Result) {
	for i := range rs {
		rs[i].MBPerSec = rs[i].OpsPerSec * float64(rs[i].Size) / 1e6
	}
}

// PrintTable prints the results with ratios against the raw baseline each
// cell was interleaved with, then the stages of the traced cells.
func PrintTable(w io.Writer, rs []Result) {
	durable := true
	for _, r := range rs {
		durable = durable && r.Durable
	}
	if !durable {
		fmt.Fprintln(w, "*** NOT DURABLE: fdatasync disabled (--nosync); these are not durable-add figures ***")
	}
	fmt.Fprintf(w, "%-9s %-8s %6s %5s %12s %9s %9s %9s %9s %9s %7s %9s %9s %9s\n",
		"kind", "mode", "size", "out", "ops/s", "MB/s", "p50", "p99", "p99.9", "max", "allocs", "cpu/op", "MB/s/raw", "p99/raw")
	sorted := slices.Clone(rs)
	slices.SortStableFunc(sorted, func(a, b Result) int {
		return cmp.Or(cmp.Compare(a.Size, b.Size), cmp.Compare(a.Outstanding, b.Outstanding))
	})
	for _, r := range sorted {
		ratio, p99r := "", ""
		if base := r.Raw; base != nil && base.OpsPerSec > 0 {
			if r.Kind != "half-peak" {
				ratio = fmt.Sprintf("%.2f", r.OpsPerSec/base.OpsPerSec)
			}
			if base.P99 > 0 {
				p99r = fmt.Sprintf("%.2f", float64(r.P99)/float64(base.P99))
			}
		}
		label := r.Kind
		if !r.Durable {
			label += "*"
		}
		fmt.Fprintf(w, "%-9s %-8s %6d %5d %12.0f %9.1f %9v %9v %9v %9v %7.1f %9v %9s %9s\n",
			label, r.Mode, r.Size, r.Outstanding, r.OpsPerSec, r.MBPerSec, roundDur(r.P50), roundDur(r.P99), roundDur(r.P999), roundDur(r.Max), r.AllocsOp, roundDur(r.CPUPerOp), ratio, p99r)
		if r.Kind == "half-peak" && r.Raw != nil {
			fmt.Fprintf(w, "%-9s %-8s %6d %5d %12.0f %9.1f %9v %9v %9v %9v %7s %9v   (the half-peak cell's interleaved baseline)\n",
				"  raw", "pwrite", r.Size, r.Outstanding, r.Raw.OpsPerSec, r.Raw.MBPerSec, roundDur(r.Raw.P50), roundDur(r.Raw.P99), roundDur(r.Raw.P999), roundDur(r.Raw.Max), "", roundDur(r.Raw.CPUPerOp))
		}
		if p := r.PacedRaw; r.Kind == "half-peak" && p != nil && p.P99 > 0 {
			fmt.Fprintf(w, "%-9s %-8s %6d %5d %12.0f %9.1f %9v %9v %9v %9v %7s %9v %9s %9.2f   (paced raw: the same arrivals, group commit alone; the ratio is half-peak p99 ÷ its p99)\n",
				"  paced", "pwrite", p.Size, p.Outstanding, p.OpsPerSec, p.MBPerSec, roundDur(p.P50), roundDur(p.P99), roundDur(p.P999), roundDur(p.Max), "", roundDur(p.CPUPerOp), "", float64(r.P99)/float64(p.P99))
		}
	}
	fmt.Fprintln(w, "raw: pwrite of k records' bytes + one fdatasync per group, latency per group, runs interleaved with the bookie's; half-peak: paced at half the best rate, against raw at its depth; paced raw: that rate's arrivals into one pwrite+fdatasync per gathered group, latency per record from its scheduled time")
	if !durable {
		fmt.Fprintln(w, "* not durable")
	}
	for _, r := range sorted {
		if len(r.Stages) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nstages of %s %s size %d out %d (sampled adds; mean / p99 / mean of the slowest 1%%):\n", r.Kind, r.Mode, r.Size, r.Outstanding)
		var parts []string
		for _, s := range r.Stages {
			parts = append(parts, fmt.Sprintf("%s %v/%v/%v", s.Stage, roundDur(s.Mean), roundDur(s.P99), roundDur(s.TailMean)))
		}
		fmt.Fprintln(w, "  "+strings.Join(parts, "  "))
		if j := r.Journal; j != nil {
			fmt.Fprintf(w, "  journal: %d groups of %.0f records; per group: write to sync %v, committer blocked on sync %v, completions %v\n",
				j.Groups, j.GroupRecords, roundDur(j.SyncMean), roundDur(j.SyncWaitMean), roundDur(j.CompleteMean))
		}
		if r.SchedP99 > 0 {
			fmt.Fprintf(w, "  goroutines runnable before they ran (runtime /sched/latencies): p99 %v, p99.9 %v\n", roundDur(r.SchedP99), roundDur(r.SchedP999))
		}
		if r.TargetRate > 0 {
			fmt.Fprintf(w, "  the driver issued units late by p99 %v, max %v; %d units waited for a free one (all outstanding in the bookie)\n", roundDur(r.IssueLagP99), roundDur(r.IssueLagMax), r.WaitFree)
		}
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
