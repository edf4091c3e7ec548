package broker

import (
	"math"
	"testing"
	"time"
)

func TestHistoryRing(t *testing.T) {
	var h history
	// The first reading only primes the counters.
	h.record("t", 3, 1000, counters{msgIn: 10, bytesIn: 100})
	if got := h.get("t"); len(got) != 0 {
		t.Fatalf("primed ring holds %d samples", len(got))
	}
	for i := int64(1); i <= 5; i++ {
		h.record("t", 3, 1000+i*2000, counters{msgIn: 10 + i*20, bytesIn: 100 + i*200, msgOut: i * 4, backlog: i, storage: i * 1000})
	}
	got := h.get("t")
	if len(got) != 3 {
		t.Fatalf("ring of 3 holds %d samples", len(got))
	}
	for i, s := range got {
		wantAt := int64(1000 + (i+3)*2000)
		if s.At != wantAt {
			t.Errorf("sample %d at %d, want %d (oldest first)", i, s.At, wantAt)
		}
		if s.MsgRateIn != 10 || s.MsgThroughputIn != 100 || s.MsgRateOut != 2 {
			t.Errorf("sample %d rates %+v, want 10 msg/s in, 100 B/s, 2 msg/s out", i, s)
		}
		if s.MsgBacklog != int64(i+3) || s.StorageSize != int64(i+3)*1000 {
			t.Errorf("sample %d backlog/storage %+v", i, s)
		}
	}
	// A counter that went backwards (topic reloaded) gives 0, not a
	// negative rate.
	h.record("t", 3, 20000, counters{msgIn: 1})
	last := h.get("t")[2]
	if last.MsgRateIn != 0 {
		t.Errorf("rate after counter reset %v, want 0", last.MsgRateIn)
	}
	// Extreme counters do not overflow the rate arithmetic.
	h.record("big", 2, 0, counters{msgIn: 0})
	h.record("big", 2, 1000, counters{msgIn: math.MaxInt64})
	if r := h.get("big")[0].MsgRateIn; r != float64(math.MaxInt64) {
		t.Errorf("rate at int64 max %v", r)
	}
	h.retain(map[string]bool{"big": true})
	if h.get("t") != nil {
		t.Error("retain kept a dropped topic")
	}
}

func TestHistoryConfig(t *testing.T) {
	for _, c := range []struct {
		interval time.Duration
		length   int
		wantLen  int
		bad      bool
	}{
		{0, 0, 180, false},
		{time.Second, 0, 900, false},
		{time.Minute, 0, 15, false},
		{time.Hour, 0, 2, false},
		{-1, 0, 0, false}, // off
		{time.Millisecond, 0, 0, true},
		{time.Second, MaxHistoryLength + 1, 0, true},
	} {
		cfg := Config{HistoryInterval: c.interval, HistoryLength: c.length}
		cfg.EnsureDefaults()
		err := cfg.Validate()
		if (err != nil) != c.bad {
			t.Errorf("interval %s length %d: err %v, want error %v", c.interval, c.length, err, c.bad)
		}
		if !c.bad && cfg.HistoryLength != c.wantLen {
			t.Errorf("interval %s: length %d, want %d", c.interval, cfg.HistoryLength, c.wantLen)
		}
	}
}
