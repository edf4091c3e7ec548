package bookie

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/bench/report"
	"github.com/magnetar-mq/magnetar/internal/testbrowser"
	"github.com/magnetar-mq/magnetar/internal/uring"
)

// TestDevicesAndDirectIO runs tiny `bench bookie` cells with the
// journal on O_DIRECT, the ledger dirs under a second directory and
// entry-log pacing on: every cell measures acknowledged adds without
// errors, slow cells (one 64 KiB add outstanding) report a plausible rate,
// and each run's ledger dir under --ledger-dir is removed afterwards.
func TestDevicesAndDirectIO(t *testing.T) {
	ledgers := t.TempDir()
	cfg := Config{
		Dir: t.TempDir(), LedgerDir: ledgers, DirectIO: true, FlushBytes: 4096,
		Sizes: []int{100, 65536}, Outstanding: []int{1, 64}, Modes: []uring.Mode{uring.ModeAuto},
		Duration: 400 * time.Millisecond, Warmup: 20 * time.Millisecond, Runs: 1,
		Raw: true, HalfPeak: false, WriteCacheSize: 4 << 20,
	}
	rs, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 8 {
		t.Fatalf("%d cells, want 8", len(rs))
	}
	for _, r := range rs {
		if r.OpsPerSec <= 0 || r.Errors != 0 || !r.Durable {
			t.Errorf("%s size %d out %d: %.0f ops/s, %d errors, durable %v", r.Kind, r.Size, r.Outstanding, r.OpsPerSec, r.Errors, r.Durable)
		}
		// One 64 KiB add at a time (a write and an fdatasync each) stays
		// far below 200k/s even on tmpfs; a window that opened and closed
		// at the same clock read reported millions.
		if r.Outstanding == 1 && r.Size == 65536 && r.OpsPerSec > 200000 {
			t.Errorf("%s size %d out 1: %.0f ops/s, more than one add in flight allows", r.Kind, r.Size, r.OpsPerSec)
		}
	}
	left, err := os.ReadDir(ledgers)
	if err != nil || len(left) != 0 {
		t.Errorf("ledger dir holds %d entries after the runs (%v)", len(left), err)
	}
}

// TestReportRenders runs small batched cells with every add traced, a
// half-peak cell and a write cache small enough to checkpoint during the
// runs, then writes the HTML report and opens it in headless chromium:
// every bookie cell has its throughput, latency and distribution charts
// (each beside its raw baseline), its stage bars and its stages over
// time, all drawn; the page fetched nothing. The results also carry what
// the report needs: the interleaved baseline (and the paced raw loop on
// the half-peak cell), stage summaries that add up
// to the whole, checkpoints on the timeline and the journal's groups.
func TestReportRenders(t *testing.T) {
	cfg := Config{
		Dir: t.TempDir(), Sizes: []int{100}, Outstanding: []int{256}, Modes: []uring.Mode{uring.ModeAuto},
		Duration: 600 * time.Millisecond, Warmup: 50 * time.Millisecond, Runs: 2, Raw: true, HalfPeak: true,
		HalfPeakOutstanding: 256, WriteCacheSize: 256 << 10, Batch: 16, StageSampling: 1, Window: 50 * time.Millisecond,
	}
	started := time.Now()
	rs, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 {
		t.Fatalf("%d cells, want raw, bookie, half-peak", len(rs))
	}
	checkpoints := 0
	for _, r := range rs[1:] {
		if r.Raw == nil || r.Raw.OpsPerSec <= 0 || r.Detail == nil || r.Detail.Raw == nil {
			t.Fatalf("%s cell without its baseline: %+v", r.Kind, r)
		}
		if paced := r.PacedRaw != nil && r.PacedRaw.OpsPerSec > 0 && r.Detail.PacedRaw != nil; paced != (r.Kind == "half-peak") {
			t.Errorf("%s cell: paced raw baseline %v, want it on the half-peak cell only", r.Kind, paced)
		}
		if r.Journal == nil || r.Journal.Groups == 0 || len(r.Stages) != 8 {
			t.Fatalf("%s cell: journal %+v, %d stage summaries", r.Kind, r.Journal, len(r.Stages))
		}
		var sum time.Duration
		for _, s := range r.Stages[:7] {
			sum += s.Mean
		}
		if total := r.Stages[7].Mean; sum < total*9/10 || sum > total*11/10 {
			t.Errorf("%s: stage means sum to %v, the whole's mean is %v", r.Kind, sum, total)
		}
		for _, run := range r.Detail.Runs {
			checkpoints += len(run.Checkpoints)
			if len(run.Windows) != 12 || len(run.StageMeans) != 12 {
				t.Errorf("%s run: %d windows, %d stage windows, want 12", r.Kind, len(run.Windows), len(run.StageMeans))
			}
		}
	}
	if checkpoints == 0 {
		t.Error("no checkpoint on any timeline (a 256 KiB write cache fills many times a run)")
	}
	dir := t.TempDir()
	p, err := Report(cfg, rs, report.Probe(cfg.Dir), "magnetar bench bookie (test)", started, time.Now()).Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testbrowser.New(t, 1280, 1200)
	figs, res := testbrowser.Report(t, ctx, p)
	if len(res) != 0 {
		t.Errorf("the report fetched %v", res)
	}
	if len(figs) != 2*5 {
		t.Fatalf("%d figures, want 5 for each of the 2 bookie cells: %+v", len(figs), figs)
	}
	testbrowser.RequireDrawn(t, figs)
	bars := 0
	for _, f := range figs {
		bars += f.Bars
	}
	if bars == 0 {
		t.Error("no stage bar drawn")
	}
}
