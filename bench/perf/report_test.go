package perf

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/bench/report"
	"github.com/magnetar-mq/magnetar/internal/testbrowser"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/fakebroker"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestReportRenders publishes for ~1.5 s to the fake broker with a
// timeline at 100 ms and 500 ms windows, writes the HTML report and opens
// it in headless chromium: the rate and latency timelines, the latency
// distribution and the per-window chart are all drawn, and the page
// fetched nothing.
func TestReportRenders(t *testing.T) {
	fb := startFakeBroker(t, func(fc *fakebroker.Conn, f pulsarproto.Frame) {
		if f.Type != pb.BaseCommand_SEND {
			return
		}
		s, _ := checkSend(f)
		fc.Write(receipt(s))
	})
	cfg := produceCfg(fb.URL, 0)
	cfg.Rate = 2000
	cfg.Duration = 1500 * time.Millisecond
	cfg.ProgressInterval = 100 * time.Millisecond
	cfg.Window = 500 * time.Millisecond
	cfg.Timeline = true
	started := time.Now()
	sum, err := RawProduce(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Timeline) < 10 || len(sum.Windows) < 2 || sum.LatencyHistogram().TotalCount() != sum.Latency.Samples {
		t.Fatalf("timeline %d points, %d windows, histogram %d of %d samples", len(sum.Timeline), len(sum.Windows), sum.LatencyHistogram().TotalCount(), sum.Latency.Samples)
	}
	p, err := Report(sum, []report.KV{{Key: "--rate", Value: "2000"}}, report.Probe(""), "magnetar perf produce (test)", started, time.Now()).Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	ctx := testbrowser.New(t, 1280, 1200)
	figs, res := testbrowser.Report(t, ctx, p)
	if len(res) != 0 {
		t.Errorf("the report fetched %v", res)
	}
	if len(figs) != 4 {
		t.Fatalf("%d figures, want 4 (rate, latency, distribution, windows): %+v", len(figs), figs)
	}
	testbrowser.RequireDrawn(t, figs)
	for _, f := range figs {
		if f.Series == 0 {
			t.Errorf("%q has no series", f.Title)
		}
	}
}
