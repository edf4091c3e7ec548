package bookie

import (
	"testing"
	"time"
)

// TestJournalGroupWaitDefault: by default the journal writes a group as
// soon as the previous one is durable (no fixed wait, which only adds
// latency at low rates); negative means the same; a positive wait is
// passed on as is.
func TestJournalGroupWaitDefault(t *testing.T) {
	for _, tc := range []struct {
		set, want time.Duration
	}{
		{0, 0},
		{-1, 0},
		{-time.Duration(1 << 62), 0},
		{2 * time.Millisecond, 2 * time.Millisecond},
		{time.Duration(1<<63 - 1), time.Duration(1<<63 - 1)},
	} {
		o := Options{JournalDir: "j", LedgerDirs: []string{"l"}, JournalMaxGroupWait: tc.set}
		o.EnsureDefaults()
		if err := o.Validate(); err != nil {
			t.Fatalf("wait %v: %v", tc.set, err)
		}
		if got := journalOptions(&o).MaxGroupWait; got != tc.want {
			t.Errorf("JournalMaxGroupWait %v: journal MaxGroupWait %v, want %v", tc.set, got, tc.want)
		}
	}
}
