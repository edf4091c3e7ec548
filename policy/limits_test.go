package policy

import (
	"math"
	"testing"
	"time"
)

// TTL and expiry arithmetic at the int64 limits never lands in the future
// (a wrapped cutoff cleared every backlog of a namespace).
func TestExpiryCutoffSaturates(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	for _, secs := range []int64{math.MaxInt64, math.MaxInt64 / 1000, math.MaxInt64/1000 + 1, now/1000 + 1, -1} {
		if c, ok := ExpiryCutoff(now, secs); ok {
			t.Fatalf("secs=%d: cutoff %d, want none", secs, c)
		}
	}
	if c, ok := ExpiryCutoff(now, 1e9); !ok || c != now-1e12 {
		t.Fatalf("1e9 s: %d %v", c, ok)
	}
	if c, ok := ExpiryCutoff(now, 0); !ok || c != now {
		t.Fatalf("0: %d %v", c, ok)
	}
	if d := Seconds(math.MaxInt64); d != math.MaxInt64 {
		t.Fatalf("Seconds saturates to %d", d)
	}
	r := RetentionPolicies{RetentionTimeInMinutes: math.MaxInt, RetentionSizeInMB: math.MaxInt64}
	if r.Time() <= 0 || r.Size() <= 0 {
		t.Fatalf("retention wraps: %v %d", r.Time(), r.Size())
	}
	if r.Validate() == nil {
		t.Fatal("retention of MaxInt minutes accepted")
	}
	if _, err := ParseBacklogQuota([]byte(`{"limitSize":-5,"policy":"producer_request_hold"}`)); err == nil {
		t.Fatal("limitSize -5 accepted")
	}
	if _, err := ParseBacklogQuota([]byte(`{"limitTime":9223372036854775807,"policy":"producer_request_hold"}`)); err == nil {
		t.Fatal("limitTime MaxInt64 accepted")
	}
}
