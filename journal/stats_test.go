package journal

import (
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

func TestHistogram(t *testing.T) {
	h := NewHistogram([]int64{10, 100})
	for _, v := range []int64{0, 10, 11, 100, 101, 5000} {
		h.Observe(v)
	}
	s := h.Snapshot()
	if want := []uint64{2, 2, 2}; s.Counts[0] != want[0] || s.Counts[1] != want[1] || s.Counts[2] != want[2] {
		t.Fatalf("counts %v, want %v", s.Counts, want)
	}
	if s.Count != 6 || s.Sum != 5222 {
		t.Fatalf("count %d sum %d, want 6 5222", s.Count, s.Sum)
	}
	c := s.Cumulative(0.5)
	if c[5] != 2 || c[50] != 4 || len(c) != 2 {
		t.Fatalf("cumulative %v", c)
	}
}

// TestStats checks that every synced group is counted with its records
// and bytes, and that the histograms agree with the counters.
func TestStats(t *testing.T) {
	j := mustOpen(t, testOptions(vfs.NewMem()))
	defer j.Close()
	if s := j.Stats(); s.Groups != 0 || s.Entries != 0 || s.SyncLatency.Count != 0 {
		t.Fatalf("fresh journal stats %+v", s)
	}
	recs := makeRecords(100, 50, 1)
	appendAll(t, j, recs)
	s := j.Stats()
	if s.Entries != 100 {
		t.Fatalf("Entries = %d, want 100", s.Entries)
	}
	var want uint64
	for _, r := range recs {
		want += uint64(RecordHeaderSize + len(r.Payload))
	}
	if s.Bytes != want {
		t.Fatalf("Bytes = %d, want %d", s.Bytes, want)
	}
	if s.Groups == 0 || s.Groups > 100 || s.Groups != uint64(j.c.groups.Load()) {
		t.Fatalf("Groups = %d, writer counted %d", s.Groups, j.c.groups.Load())
	}
	if s.SyncLatency.Count != s.Groups || s.GroupEntries.Count != s.Groups || s.GroupBytes.Count != s.Groups {
		t.Fatalf("histogram counts %d %d %d, want %d", s.SyncLatency.Count, s.GroupEntries.Count, s.GroupBytes.Count, s.Groups)
	}
	if s.GroupEntries.Sum != 100 || s.GroupBytes.Sum != int64(s.Bytes) {
		t.Fatalf("group sums %d %d", s.GroupEntries.Sum, s.GroupBytes.Sum)
	}
	if s.SyncLatency.Sum <= 0 || time.Duration(s.SyncLatency.Sum) > time.Minute {
		t.Fatalf("sync latency sum %v", time.Duration(s.SyncLatency.Sum))
	}
}

// BenchmarkHistogramObserve is the per-add instrumentation cost of the
// bookie: a clock read at AddEntry, one at completion, one Observe.
func BenchmarkHistogramObserve(b *testing.B) {
	h := NewHistogram(LatencyBounds)
	for b.Loop() {
		start := time.Now()
		h.ObserveDuration(time.Since(start))
	}
}

// BenchmarkHistogramObserveParallel observes from every P at once (shared
// buckets: the worst case for the atomics).
func BenchmarkHistogramObserveParallel(b *testing.B) {
	h := NewHistogram(LatencyBounds)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h.Observe(int64(400 * time.Microsecond))
		}
	})
}
