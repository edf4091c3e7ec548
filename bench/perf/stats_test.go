package perf

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestStatsTickAndSummary(t *testing.T) {
	t0 := time.Unix(1000, 0)
	st := NewStats(2, t0)
	// Shard 0: 100 msgs at 1 ms; shard 1: 100 msgs at 10 ms.
	for range 100 {
		st.Shard(0).Record(200, time.Millisecond)
		st.Shard(1).Record(200, 10*time.Millisecond)
	}
	st.Shard(1).Error()
	iv := st.Tick(t0.Add(2 * time.Second))
	if iv.Msgs != 200 || iv.Bytes != 40_000 || iv.Errors != 1 || iv.Total != 200 {
		t.Fatalf("interval = %+v", iv)
	}
	if r := iv.MsgRate(); r != 100 {
		t.Fatalf("msg rate = %v, want 100", r)
	}
	if r := iv.MBRate(); r != 0.02 {
		t.Fatalf("MB rate = %v, want 0.02", r)
	}
	if iv.P50 < 990*time.Microsecond || iv.P50 > 1010*time.Microsecond {
		t.Fatalf("p50 = %v, want ~1ms", iv.P50)
	}
	if iv.P99 < 9900*time.Microsecond || iv.P99 > 10100*time.Microsecond {
		t.Fatalf("p99 = %v, want ~10ms", iv.P99)
	}
	// The next interval starts empty.
	st.Shard(0).Record(200, -1) // no latency sample
	iv2 := st.Tick(t0.Add(3 * time.Second))
	if iv2.Msgs != 1 || iv2.Samples != 0 || iv2.Total != 201 || iv2.Elapsed != time.Second {
		t.Fatalf("second interval = %+v", iv2)
	}
	if !strings.Contains(FormatInterval("produce", iv), "lat p50") || strings.Contains(FormatInterval("produce", iv2), "lat") {
		t.Fatalf("progress lines: %q / %q", FormatInterval("produce", iv), FormatInterval("produce", iv2))
	}
	// The summary covers everything since the start, latencies of both intervals.
	sum := st.Summary("produce", t0.Add(4*time.Second))
	if sum.Messages != 201 || sum.Errors != 1 || sum.Latency.Samples != 200 || sum.MsgRate != 50.25 {
		t.Fatalf("summary = %+v", sum)
	}
	if sum.Latency.P50 < 990 || sum.Latency.P50 > 1010 || sum.Latency.Max < 9990 {
		t.Fatalf("summary latency = %+v", sum.Latency)
	}
	b, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	var back Summary
	want := sum
	want.latency = nil // the histogram is for reports, not in the JSON
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, want) {
		t.Fatalf("JSON round trip: %v %+v", err, back)
	}
	if !strings.Contains(string(b), `"msgs_per_sec":50.25`) {
		t.Fatalf("JSON = %s", b)
	}
}

func TestStatsClampsOutOfRangeLatency(t *testing.T) {
	st := NewStats(1, time.Unix(0, 0))
	st.Shard(0).Record(1, 0)
	st.Shard(0).Record(1, time.Hour)
	sum := st.Summary("x", time.Unix(1, 0))
	if sum.Latency.Samples != 2 || sum.Latency.Max < histMaxUs*99/100 {
		t.Fatalf("latency = %+v", sum.Latency)
	}
}

func TestStatsConcurrentRecord(t *testing.T) {
	st := NewStats(4, time.Unix(0, 0))
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10_000 {
				st.Shard(i).Record(10, time.Millisecond)
			}
		}()
	}
	done := make(chan struct{})
	var ticks int64
	go func() {
		defer close(done)
		for j := 1; j <= 50; j++ {
			ticks += st.Tick(time.Unix(int64(j), 0)).Samples
		}
	}()
	wg.Wait()
	<-done
	ticks += st.Tick(time.Unix(100, 0)).Samples
	if st.Count() != 40_000 || ticks != 40_000 {
		t.Fatalf("count %d, samples over ticks %d, want 40000", st.Count(), ticks)
	}
}
