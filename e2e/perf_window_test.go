package e2e

import (
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/bench/perf"
)

// TestPerfWindowsPayloadTimestamp: against a real standalone, a tailing
// consumer measures end-to-end latency from the send times the producer
// stamped into the payloads (every message gets a sample), and both sides
// report per-window percentiles whose samples add up to the run's.
func TestPerfWindowsPayloadTimestamp(t *testing.T) {
	p := startStandalone(t, t.TempDir(), "--log-level", "warn")
	const n = 6_000
	common := []string{"--service-url", p.service, "--topic", "perf-windows", "--num-messages", "6000", "--window", "1s"}
	type result struct {
		sum    perf.Summary
		stderr string
		err    error
	}
	consumed := make(chan result, 1)
	go func() {
		s, e, err := runPerfCmd(t, perf.NewConsumeCommand(), append(common,
			"--subscription-position", "earliest", "--payload-timestamp", "--test-duration", "90s")...)
		consumed <- result{s, e, err}
	}()
	prod, prodErr, err := runPerfCmd(t, perf.NewProduceCommand(), append(common,
		"--rate", "2000", "--size", "200", "--payload-timestamp")...)
	if err != nil {
		t.Fatalf("perf produce: %v\nstderr:\n%s\nstandalone log:\n%s", err, prodErr, p.log())
	}
	if prod.Messages != n || prod.Latency.Samples != n {
		t.Fatalf("produce summary = %+v", prod)
	}
	// 3 s at 2,000/s: windows at 1 s and 2 s, and the tail if >= 0.5 s.
	if len(prod.Windows) < 2 || len(prod.Windows) > 4 {
		t.Fatalf("produce windows = %+v", prod.Windows)
	}
	var inWindows int64
	for i, w := range prod.Windows {
		inWindows += w.Msgs
		if w.Msgs > 0 && (w.P50 <= 0 || w.P99 < w.P50 || w.P999 < w.P99 || w.Max < w.P999) {
			t.Errorf("produce window %d = %+v", i, w)
		}
		if i > 0 && w.Start <= prod.Windows[i-1].Start {
			t.Errorf("windows out of order: %+v", prod.Windows)
		}
	}
	// A dropped tail under half a window may hold the last acks.
	if inWindows > n || inWindows < n/2 {
		t.Errorf("windows hold %d samples of %d", inWindows, n)
	}
	r := <-consumed
	if r.err != nil {
		t.Fatalf("perf consume: %v\nstderr:\n%s\nstandalone log:\n%s", r.err, r.stderr, p.log())
	}
	cons := r.sum
	if cons.Messages != n || cons.Latency.Samples != n {
		t.Fatalf("consume summary = %+v (every stamped message must give a sample)", cons)
	}
	// Stamped at send, so the end-to-end latency is at least the publish
	// p50's order of magnitude, never 0 for all, and under the run time.
	if cons.Latency.Max <= 0 || cons.Latency.P50 > 30_000_000 {
		t.Fatalf("end-to-end latency = %+v", cons.Latency)
	}
	if len(cons.Windows) == 0 || !strings.Contains(r.stderr, "consume: ") {
		t.Fatalf("consume windows = %+v", cons.Windows)
	}
}
