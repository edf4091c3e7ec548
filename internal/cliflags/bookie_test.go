package cliflags

import (
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/bookie"
)

// TestBookieTuningFlags: the pacing and tracing flags reach the bookie's
// options, and leaving them out keeps the bookie's defaults (0: half the
// flush interval; no tracing).
func TestBookieTuningFlags(t *testing.T) {
	parse := func(args ...string) bookie.Options {
		t.Helper()
		var tun BookieTuning
		cmd := &cobra.Command{Use: "x"}
		tun.Register(cmd.Flags())
		if err := cmd.Flags().Parse(args); err != nil {
			t.Fatal(err)
		}
		var o bookie.Options
		tun.Apply(&o)
		o.EnsureDefaults()
		return o
	}
	o := parse("--checkpoint-spread", "40ms", "--stage-sampling", "8", "--flush-interval", "1s")
	if o.CheckpointSpread != 40*time.Millisecond || o.StageSampling != 8 || o.CheckpointInterval != time.Second {
		t.Fatalf("spread %v, sampling %d, interval %v", o.CheckpointSpread, o.StageSampling, o.CheckpointInterval)
	}
	o = parse("--flush-interval", "1s")
	if o.CheckpointSpread != 500*time.Millisecond || o.StageSampling != 0 {
		t.Fatalf("defaults: spread %v, sampling %d", o.CheckpointSpread, o.StageSampling)
	}
	if o = parse("--checkpoint-spread", "-1ns"); o.CheckpointSpread >= 0 {
		t.Fatalf("--checkpoint-spread -1ns: spread %v, want off (negative)", o.CheckpointSpread)
	}
}
