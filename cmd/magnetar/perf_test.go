package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/bench/perf"
)

// runPerfCmd executes a fresh perf subcommand with args and returns its
// JSON summary and its stderr (the progress lines).
func runPerfCmd(t *testing.T, cmd *cobra.Command, args ...string) (perf.Summary, string, error) {
	var stdout, stderr bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs(append(args, "--json"))
	if err := cmd.Execute(); err != nil {
		return perf.Summary{}, stderr.String(), err
	}
	var sum perf.Summary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		return sum, stderr.String(), err
	}
	return sum, stderr.String(), nil
}

// TestPerfProduceConsume runs `perf produce` and `perf consume` against a
// real standalone for about two seconds, on a partitioned topic, and checks
// that every produced message was consumed and reported.
func TestPerfProduceConsume(t *testing.T) {
	p := startStandalone(t, t.TempDir(), "--log-level", "warn")
	const n = 10_000
	common := []string{"--service-url", p.service, "--topic", "perf-e2e",
		"--partitions", "2", "--admin-url", p.http, "--num-messages", "10000"}

	type result struct {
		sum    perf.Summary
		stderr string
		err    error
	}
	consumed := make(chan result, 1)
	go func() {
		s, e, err := runPerfCmd(t, newPerfConsumeCmd(), append(common,
			"--subscription-position", "earliest", "--subscription-type", "shared",
			"--num-consumers", "2", "--test-duration", "90s")...)
		consumed <- result{s, e, err}
	}()
	prod, prodErr, err := runPerfCmd(t, newPerfProduceCmd(), append(common,
		"--rate", "5000", "--size", "200", "--num-producers", "2", "--batch-max-messages", "100")...)
	if err != nil {
		t.Fatalf("perf produce: %v\nstderr:\n%s\nstandalone log:\n%s", err, prodErr, p.log())
	}
	if prod.Kind != "produce" || prod.Messages != n || prod.Bytes != n*200 || prod.Errors != 0 {
		t.Fatalf("produce summary = %+v", prod)
	}
	if prod.Latency.Samples != n || prod.Latency.P50 <= 0 || prod.Latency.P99 < prod.Latency.P50 {
		t.Fatalf("produce latency = %+v", prod.Latency)
	}
	// 10,000 messages at 5,000/s cannot finish much faster than 2 s.
	if prod.Seconds < 1.9 {
		t.Fatalf("rate limit not applied: %d msgs in %.2fs", prod.Messages, prod.Seconds)
	}
	if !strings.Contains(prodErr, "produce: ") || !strings.Contains(prodErr, "msg/s") {
		t.Fatalf("no progress line on stderr: %q", prodErr)
	}
	r := <-consumed
	if r.err != nil {
		t.Fatalf("perf consume: %v\nstderr:\n%s\nstandalone log:\n%s", r.err, r.stderr, p.log())
	}
	if r.sum.Kind != "consume" || r.sum.Messages < n || r.sum.Bytes < n*200 {
		t.Fatalf("consume summary = %+v", r.sum)
	}
}

func TestPerfFlagValidation(t *testing.T) {
	for _, args := range [][]string{
		{"--rate", "-1"},
		{"--compression", "brotli"},
		{"--partitions", "2"}, // no --admin-url
	} {
		if _, _, err := runPerfCmd(t, newPerfProduceCmd(), args...); err == nil || !strings.Contains(err.Error(), "invalid configuration") {
			t.Errorf("produce %v: err = %v", args, err)
		}
	}
	if _, _, err := runPerfCmd(t, newPerfConsumeCmd(), "--num-consumers", "2"); err == nil || !strings.Contains(err.Error(), "exclusive") {
		t.Errorf("consume with 2 exclusive consumers: err = %v", err)
	}
}
