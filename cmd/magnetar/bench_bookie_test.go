package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/uring"
)

// TestBenchBookieDevicesAndDirectIO runs tiny `bench bookie` cells with the
// journal on O_DIRECT, the ledger dirs under a second directory and
// entry-log pacing on: every cell measures acknowledged adds without
// errors, slow cells (one 64 KiB add outstanding) report a plausible rate,
// and each run's ledger dir under --ledger-dir is removed afterwards.
func TestBenchBookieDevicesAndDirectIO(t *testing.T) {
	ledgers := t.TempDir()
	cfg := benchConfig{
		Dir: t.TempDir(), LedgerDir: ledgers, DirectIO: true, FlushBytes: 4096,
		Sizes: []int{100, 65536}, Outstanding: []int{1, 64}, Modes: []uring.Mode{uring.ModeAuto},
		Duration: 400 * time.Millisecond, Warmup: 20 * time.Millisecond, Runs: 1,
		Raw: true, HalfPeak: false, WriteCacheSize: 4 << 20,
	}
	rs, err := runBench(context.Background(), cfg)
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
