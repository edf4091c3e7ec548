package bookie

import (
	"context"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestPacedRawCountsStallsPerRecord runs the paced raw loop over a file
// whose every fdatasync takes 20 ms, with units arriving every 1 ms: a
// record waits for the rest of the sync in flight when it arrived, then
// for the sync that covers it, so every latency is at least one sync and
// the median near one and a half (a per-group count, as the closed loop
// makes, would give one sync for all). The loop keeps the schedule: about
// rate × duration records complete, each written once.
func TestPacedRawCountsStallsPerRecord(t *testing.T) {
	const syncTime = 20 * time.Millisecond
	var syncs int
	fs := vfs.NewErrorFS(vfs.NewOS(), vfs.InjectorFunc(func(op vfs.Op, _ string) error {
		if op == vfs.OpSync {
			syncs++ // the writer goroutine alone syncs
			time.Sleep(syncTime)
		}
		return nil
	}))
	cfg := Config{Duration: 800 * time.Millisecond, Warmup: 50 * time.Millisecond, Batch: 16, Window: 100 * time.Millisecond}
	const rate = 16000 // records/s: a unit of 16 every millisecond
	s, err := pacedRawRun(context.Background(), cfg, fs, t.TempDir(), 100, 4096, rate)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(rate * cfg.Duration.Seconds())
	if s.ops < want*8/10 || s.ops > want*11/10 {
		t.Errorf("%d records completed in the window, want about %d", s.ops, want)
	}
	if min := time.Duration(s.hist.Min()); min < syncTime {
		t.Errorf("fastest record %v, below one sync (%v)", min, syncTime)
	}
	if p50 := time.Duration(s.hist.ValueAtQuantile(50)); p50 < syncTime*5/4 || p50 > syncTime*5/2 {
		t.Errorf("median %v, want about one and a half syncs (%v)", p50, syncTime*3/2)
	}
	if syncs < 20 || syncs > 60 {
		t.Errorf("%d syncs over %v of 20 ms syncs: groups were not gathered", syncs, cfg.Warmup+cfg.Duration)
	}
	if len(s.detail.Windows) != 8 {
		t.Errorf("%d windows, want 8", len(s.detail.Windows))
	}
}

// TestPacedRawWriteError: an I/O error of the writer ends the run with it
// rather than leaving the driver waiting for units that never free.
func TestPacedRawWriteError(t *testing.T) {
	fs := vfs.NewErrorFS(vfs.NewOS(), vfs.Error(nil, vfs.OpSync))
	cfg := Config{Duration: 2 * time.Second, Warmup: 10 * time.Millisecond, Batch: 16, Window: 100 * time.Millisecond}
	done := make(chan error, 1)
	go func() {
		_, err := pacedRawRun(context.Background(), cfg, fs, t.TempDir(), 100, 64, 100000)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("run with failing syncs reported no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not end after its writer failed")
	}
}
