package testenv

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitForHolds(t *testing.T) {
	var n atomic.Int32
	WaitFor(t, time.Second, "three polls", func() bool { return n.Add(1) >= 3 })
	if n.Load() != 3 {
		t.Fatalf("polled %d times, want 3", n.Load())
	}
}

// fatalT records Fatalf instead of stopping the test.
type fatalT struct {
	testing.TB
	msg string
}

func (f *fatalT) Helper() {}
func (f *fatalT) Fatalf(format string, args ...any) {
	f.msg = format
}

func TestWaitForTimesOut(t *testing.T) {
	ft := &fatalT{TB: t}
	start := time.Now()
	// Fatalf does not stop the loop here; cond stops it after the report.
	reported := false
	WaitFor(ft, 20*time.Millisecond, "never", func() bool {
		if ft.msg != "" {
			reported = true
		}
		return reported
	})
	if !reported || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("no timeout report (%q) or too early (%v)", ft.msg, time.Since(start))
	}
}
