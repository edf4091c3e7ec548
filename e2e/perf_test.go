package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/bench/perf"
	"github.com/magnetar-mq/magnetar/bench/report"
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
		s, e, err := runPerfCmd(t, perf.NewConsumeCommand(), append(common,
			"--subscription-position", "earliest", "--subscription-type", "shared",
			"--num-consumers", "2", "--test-duration", "90s")...)
		consumed <- result{s, e, err}
	}()
	reportDir := t.TempDir()
	prod, prodErr, err := runPerfCmd(t, perf.NewProduceCommand(), append(common,
		"--rate", "5000", "--size", "200", "--num-producers", "2", "--batch-max-messages", "100", "--report", reportDir)...)
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
	// The report (drawn in a browser by bench/perf's TestReportRenders)
	// has the run's timeline, its distribution and its settings.
	var rep report.Report
	if data, err := os.ReadFile(filepath.Join(reportDir, "report.json")); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Sections) == 0 || len(rep.Sections[0].Charts) != 3 || len(rep.Settings) == 0 || !strings.Contains(prodErr, "report: ") {
		t.Fatalf("report: %d sections, settings %v; stderr %q", len(rep.Sections), rep.Settings, prodErr)
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
		{"--payload-timestamp", "--size", "7"},
		{"--raw", "--payload-timestamp"},
		{"--window", "-1s"},
	} {
		if _, _, err := runPerfCmd(t, perf.NewProduceCommand(), args...); err == nil || !strings.Contains(err.Error(), "invalid configuration") {
			t.Errorf("produce %v: err = %v", args, err)
		}
	}
	if _, _, err := runPerfCmd(t, perf.NewConsumeCommand(), "--num-consumers", "2"); err == nil || !strings.Contains(err.Error(), "exclusive") {
		t.Errorf("consume with 2 exclusive consumers: err = %v", err)
	}
	for _, args := range [][]string{
		{"--raw", "--compression", "lz4"},
		{"--raw", "--service-url", "pulsar+ssl://127.0.0.1:6651"},
	} {
		if _, _, err := runPerfCmd(t, perf.NewProduceCommand(), args...); err == nil || !strings.Contains(err.Error(), "invalid configuration") {
			t.Errorf("produce %v: err = %v", args, err)
		}
	}
	for _, args := range [][]string{
		{"--ack-mode", "sometimes"},
		{"--ack-mode", "cumulative", "--subscription-type", "shared"},
		{"--raw", "--ack-mode", "cumulative", "--subscription-type", "key_shared"},
		{"--raw", "--service-url", "pulsar+ssl://127.0.0.1:6651"},
	} {
		if _, _, err := runPerfCmd(t, perf.NewConsumeCommand(), args...); err == nil || !strings.Contains(err.Error(), "invalid configuration") {
			t.Errorf("consume %v: err = %v", args, err)
		}
	}
}

// subscriptionBacklog returns msgBacklog of sub on topic (a short name in
// public/default) from the admin API, or -1 when it is not there.
func subscriptionBacklog(t *testing.T, adminURL, topic, sub string) int64 {
	t.Helper()
	resp, err := http.Get(adminURL + "/admin/v2/persistent/public/default/" + topic + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Subscriptions map[string]struct {
			MsgBacklog int64 `json:"msgBacklog"`
		} `json:"subscriptions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("stats of %s: %s: %v", topic, resp.Status, err)
	}
	s, ok := st.Subscriptions[sub]
	if !ok {
		return -1
	}
	return s.MsgBacklog
}

// waitBacklogZero polls until every topic's sub has no backlog: acks are
// applied asynchronously after the consumer closed.
func waitBacklogZero(t *testing.T, adminURL, sub string, topics ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, topic := range topics {
		for {
			b := subscriptionBacklog(t, adminURL, topic, sub)
			if b == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("subscription %s on %s: backlog %d, want 0 (acks lost)", sub, topic, b)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// TestPerfRawInterop checks the raw client against a real standalone and
// against pulsar-client-go both ways: raw-produced messages read back by a
// raw and a pulsar-client-go consumer, client-produced ones by a raw
// consumer, each exactly N with the right payload sizes, and the acks of
// every consumer (raw cumulative, raw individual, client cumulative)
// leave no backlog.
func TestPerfRawInterop(t *testing.T) {
	p := startStandalone(t, t.TempDir(), "--log-level", "warn")
	const n = 20_000
	nStr := "20000"
	svc := []string{"--service-url", p.service, "--num-messages", nStr}

	run := func(cmd *cobra.Command, what string, args ...string) perf.Summary {
		t.Helper()
		sum, stderr, err := runPerfCmd(t, cmd, append(append([]string{}, svc...), args...)...)
		if err != nil {
			t.Fatalf("%s: %v\nstderr:\n%s\nstandalone log:\n%s", what, err, stderr, p.log())
		}
		if sum.Errors != 0 || sum.FirstError != "" {
			t.Fatalf("%s: errors in %+v", what, sum)
		}
		return sum
	}
	check := func(what string, sum perf.Summary, kind string, size int64) {
		t.Helper()
		if sum.Kind != kind || sum.Messages != n || sum.Bytes != n*size || sum.Latency.Samples != n {
			t.Fatalf("%s: summary = %+v, want %d messages of %d bytes", what, sum, n, size)
		}
		t.Logf("%s: %.0f msgs/s", what, sum.MsgRate)
	}

	// Raw producers on a partitioned topic (one per partition and
	// --num-producers), read back by a raw consumer and by the client.
	prod := run(perf.NewProduceCommand(), "raw produce", "--raw", "--topic", "raw-a", "--partitions", "2", "--admin-url", p.http,
		"--size", "200", "--num-producers", "2", "--batch-max-messages", "500", "--max-pending", "2000")
	check("raw produce", prod, "produce", 200)
	if prod.Latency.P50 <= 0 || prod.Latency.P99 < prod.Latency.P50 {
		t.Fatalf("raw produce latency = %+v", prod.Latency)
	}
	cons := run(perf.NewConsumeCommand(), "raw consume", "--raw", "--topic", "raw-a", "--subscription-name", "raw-sub",
		"--subscription-position", "earliest", "--test-duration", "120s", "--receiver-queue-size", "2000")
	check("raw consume of raw", cons, "consume", 200)
	cons = run(perf.NewConsumeCommand(), "client consume", "--topic", "raw-a", "--subscription-name", "go-sub",
		"--subscription-position", "earliest", "--test-duration", "120s", "--ack-mode", "cumulative")
	check("client consume of raw", cons, "consume", 200)
	waitBacklogZero(t, p.http, "raw-sub", "raw-a-partition-0", "raw-a-partition-1")
	waitBacklogZero(t, p.http, "go-sub", "raw-a-partition-0", "raw-a-partition-1")

	// Client-produced batches, read by two raw consumers on a shared
	// subscription (individual acks).
	prod = run(perf.NewProduceCommand(), "client produce", "--topic", "raw-b", "--size", "300", "--batch-max-messages", "100")
	check("client produce", prod, "produce", 300)
	cons = run(perf.NewConsumeCommand(), "raw shared consume", "--raw", "--topic", "raw-b", "--subscription-name", "shared-sub",
		"--subscription-type", "shared", "--num-consumers", "2", "--subscription-position", "earliest", "--test-duration", "120s")
	check("raw consume of client", cons, "consume", 300)
	waitBacklogZero(t, p.http, "shared-sub", "raw-b")
}
