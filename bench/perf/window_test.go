package perf

import (
	"testing"
	"time"
)

// TestWindows: each closed window holds only its own samples; a tail of
// at least half a window is reported, a shorter one dropped.
func TestWindows(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		tail  time.Duration
		wantN int
	}{{5 * time.Second, 3}, {4 * time.Second, 2}} {
		st := NewStats(2, t0)
		w := startWindows(st, 10*time.Second)
		// The ticker would fire only after 10 s of wall time; the test
		// closes windows itself.
		for range 100 {
			st.Shard(0).Record(10, time.Millisecond)
		}
		w.close(t0.Add(10 * time.Second))
		for range 99 {
			st.Shard(1).Record(10, 2*time.Millisecond)
		}
		st.Shard(0).Record(10, 50*time.Millisecond)
		w.close(t0.Add(20 * time.Second))
		st.Shard(1).Record(10, 7*time.Millisecond)
		end := t0.Add(20*time.Second + tc.tail)
		wins := w.finish(end)
		if len(wins) != tc.wantN {
			t.Fatalf("tail %v: %d windows, want %d: %+v", tc.tail, len(wins), tc.wantN, wins)
		}
		a, b := wins[0], wins[1]
		if a.Start != 0 || a.Seconds != 10 || a.Msgs != 100 || a.P50 < 995 || a.P50 > 1005 || a.P99 > 1005 || a.Max > 1005 {
			t.Errorf("window 1 = %+v", a)
		}
		if b.Start != 10 || b.Msgs != 100 || b.P50 < 1995 || b.P50 > 2005 || b.P99 > 2005 || b.P999 < 49_900 || b.Max < 49_900 {
			t.Errorf("window 2 = %+v", b)
		}
		if tc.wantN == 3 {
			if c := wins[2]; c.Start != 20 || c.Seconds != tc.tail.Seconds() || c.Msgs != 1 || c.P50 < 6990 || c.P50 > 7010 {
				t.Errorf("tail window = %+v", c)
			}
		}
		st.windows = wins
		if sum := st.Summary("produce", end); len(sum.Windows) != tc.wantN || sum.Latency.Samples != 201 {
			t.Errorf("summary: %d windows, %d samples", len(sum.Windows), sum.Latency.Samples)
		}
	}
}

// TestWindowsOff: without a window size nothing is set up or reported,
// and recording works as before.
func TestWindowsOff(t *testing.T) {
	st := NewStats(1, time.Unix(0, 0))
	w := startWindows(st, 0)
	if w != nil || st.Shard(0).win != nil {
		t.Fatal("windows set up for size 0")
	}
	st.Shard(0).Record(1, time.Millisecond)
	if wins := w.finish(time.Unix(10, 0)); wins != nil {
		t.Fatalf("windows = %+v", wins)
	}
}

func TestPayloadStamp(t *testing.T) {
	payload := []byte("0123456789abcdef")
	sent := time.Unix(1_700_000_000, 123_456_789)
	b := stampPayload(payload, sent)
	if string(payload) != "0123456789abcdef" || string(b[8:]) != "89abcdef" || len(b) != len(payload) {
		t.Fatalf("stamped %q from %q", b, payload)
	}
	if got := stampLatency(b, sent.Add(1500*time.Microsecond)); got != 1500*time.Microsecond {
		t.Fatalf("latency %v, want 1.5ms", got)
	}
	// A clock step back under a second reads as 0, not negative.
	if got := stampLatency(b, sent.Add(-time.Millisecond)); got != 0 {
		t.Fatalf("latency %v, want 0", got)
	}
	for _, tc := range []struct {
		name string
		p    []byte
		now  time.Time
	}{
		{"short", b[:7], sent},
		{"future", b, sent.Add(-2 * time.Second)},
		{"stale", b, sent.Add(time.Hour + time.Nanosecond)},
		{"unstamped", payload, sent},
		{"max stamp", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, sent},
	} {
		if got := stampLatency(tc.p, tc.now); got != -1 {
			t.Errorf("%s: latency %v, want -1 (no sample)", tc.name, got)
		}
	}
}

func TestPayloadStampValidation(t *testing.T) {
	c := ProduceConfig{Common: Common{Topics: []string{"t"}}, Size: 7, PayloadTimestamp: true}
	c.EnsureDefaults()
	if err := c.Validate(); err == nil {
		t.Fatal("7-byte payload with timestamps accepted")
	}
	c.Size = 8
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := c.validateRaw(); err == nil {
		t.Fatal("raw produce with payload timestamps accepted")
	}
	cc := ConsumeConfig{Common: Common{Topics: []string{"t"}, Window: -time.Second}}
	cc.EnsureDefaults()
	if err := cc.Validate(); err == nil {
		t.Fatal("negative window accepted")
	}
	cc.Window, cc.PayloadTimestamp = time.Second, true
	if err := cc.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := cc.validateRaw(); err == nil {
		t.Fatal("raw consume with payload timestamps accepted")
	}
}
