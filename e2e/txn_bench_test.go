package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-mq/magnetar/bench/txnperf"
)

// txnBenchClient connects to p, with transactions when txn is set.
func txnBenchClient(t testing.TB, p *proc, txn bool) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: p.service, EnableTransaction: txn,
		OperationTimeout: 30 * time.Second, ConnectionTimeout: 10 * time.Second, Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatalf("client: %v\n%s", err, p.log())
	}
	t.Cleanup(c.Close)
	return c
}

// txnBenchSetup starts two standalones, one with the transaction
// coordinator and one without, and returns the benchmark's setup on them.
// With cpuProfile set, the standalone with the coordinator writes its CPU
// profile there when the test ends (it is stopped after the clients are
// closed).
func txnBenchSetup(t testing.TB, cpuProfile string) txnperf.Setup {
	flags := []string{"--transaction-coordinator-enabled", "--log-level", "warn"}
	if cpuProfile != "" {
		flags = append(flags, "--cpuprofile", cpuProfile)
	}
	on := startStandalone(t, t.TempDir(), flags...)
	if cpuProfile != "" {
		t.Cleanup(on.stop)
	}
	off := startStandalone(t, t.TempDir(), "--log-level", "warn")
	return txnperf.Setup{On: txnBenchClient(t, on, true), Off: txnBenchClient(t, off, false), TopicPrefix: "txnbench",
		OnCPU:  func() time.Duration { return procCPU(on.cmd.Process.Pid) },
		OffCPU: func() time.Duration { return procCPU(off.cmd.Process.Pid) }}
}

// BenchmarkTransactions: transactional produce with transactions of 1,
// 10 and 100 messages against plain produce on the same standalone in
// the same round, plain produce on a standalone without the coordinator,
// the same send-k-and-wait pattern without transactions (groups-k), and
// commit latency; medians of 5 rounds (bench/txnperf/NOTES.md).
//
//	go test ./e2e/ -run '^$' -bench Transactions -benchtime 1x -timeout 30m
//
// TXNBENCH_DURATION (default 5s) is each case's duration,
// TXNBENCH_SIZES (1,10,100) the transaction sizes, TXNBENCH_ROUNDS (5)
// the rounds, TXNBENCH_PRODUCERS (4) the concurrent producers (each
// with its own stream of transactions), TXNBENCH_PLAIN=0 skips the plain
// cases;
// TXNBENCH_CPUPROFILE=file writes the CPU profile of the standalone with
// the coordinator.
func BenchmarkTransactions(b *testing.B) {
	d := 5 * time.Second
	if v := os.Getenv("TXNBENCH_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			b.Fatal(err)
		}
	}
	s := txnBenchSetup(b, os.Getenv("TXNBENCH_CPUPROFILE"))
	s.Sizes, s.Rounds = []int{1, 10, 100}, 5
	if v := os.Getenv("TXNBENCH_SIZES"); v != "" {
		s.Sizes = nil
		for _, f := range strings.Split(v, ",") {
			k, err := strconv.Atoi(f)
			if err != nil || k <= 0 {
				b.Fatalf("TXNBENCH_SIZES: %q", v)
			}
			s.Sizes = append(s.Sizes, k)
		}
	}
	s.Case = txnperf.Config{Duration: d, Producers: 4, PayloadSize: 100, MaxPending: 1000}
	s.NoPlain = os.Getenv("TXNBENCH_PLAIN") == "0"
	if v := os.Getenv("TXNBENCH_PRODUCERS"); v != "" {
		var err error
		if s.Case.Producers, err = strconv.Atoi(v); err != nil || s.Case.Producers <= 0 {
			b.Fatalf("TXNBENCH_PRODUCERS: %q", v)
		}
	}
	if v := os.Getenv("TXNBENCH_ROUNDS"); v != "" {
		var err error
		if s.Rounds, err = strconv.Atoi(v); err != nil || s.Rounds <= 0 {
			b.Fatalf("TXNBENCH_ROUNDS: %q", v)
		}
	}
	for b.Loop() {
		rounds, err := txnperf.Run(context.Background(), s, func(round int, r txnperf.Result) {
			cpu := 0.0
			if r.Messages > 0 {
				cpu = float64(r.ServerCPU.Microseconds()) / float64(r.Messages)
			}
			b.Logf("round %d %-22s %8d msgs %9.0f msgs/s broker CPU %8.2f µs/msg commits %6d commit p50 %v p99 %v", round, r.Case,
				r.Messages, r.MsgsPerSec(), cpu, r.Commits, r.CommitP50.Round(10*time.Microsecond), r.CommitP99.Round(10*time.Microsecond))
		})
		if err != nil {
			b.Fatal(err)
		}
		sums := txnperf.Summarise(rounds)
		// On stdout: a benchmark's log is cut to a few lines without -v.
		fmt.Printf("BenchmarkTransactions: %d rounds of %v per case, %d producers, %d-byte messages\n%s",
			s.Rounds, d, s.Case.Producers, s.Case.PayloadSize, txnperf.Table(sums))
		for _, sm := range sums {
			b.ReportMetric(sm.Rate, sm.Case+"-msgs/s")
			b.ReportMetric(float64(sm.CPUPerMsg.Nanoseconds()), sm.Case+"-broker-cpu-ns/msg")
			if strings.HasPrefix(sm.Case, "txn-") {
				b.ReportMetric(float64(sm.CommitP50.Microseconds()), sm.Case+"-commit-p50-µs")
				b.ReportMetric(float64(sm.CommitP99.Microseconds()), sm.Case+"-commit-p99-µs")
			}
		}
	}
}

// TestTransactionsBenchDriver runs the benchmark driver briefly so it
// does not rot: every case completes, the transactional cases commit
// whole transactions, and each topic reads back exactly what was counted.
func TestTransactionsBenchDriver(t *testing.T) {
	s := txnBenchSetup(t, "")
	s.Sizes, s.Rounds = []int{1, 10}, 1
	s.Case = txnperf.Config{Duration: 300 * time.Millisecond, Producers: 2, PayloadSize: 64, MaxPending: 100, Verify: true}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rounds, err := txnperf.Run(ctx, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rounds) != 1 || len(rounds[0]) != 6 {
		t.Fatalf("rounds: %+v", rounds)
	}
	for _, r := range rounds[0] {
		if r.Messages == 0 || r.Elapsed <= 0 || r.ServerCPU <= 0 {
			t.Fatalf("%s: nothing measured: %+v", r.Case, r)
		}
		if strings.HasPrefix(r.Case, "txn-") && (int64(r.Commits*r.TxnSize) != r.Messages || r.CommitP50 <= 0 || r.CommitP99 < r.CommitP50 || r.TxnP50 < r.CommitP50) {
			t.Fatalf("%s: %+v", r.Case, r)
		}
	}
	if got := txnperf.Table(txnperf.Summarise(rounds)); !strings.Contains(got, "| txn-10 |") || !strings.Contains(got, "| "+txnperf.PlainOff+" |") {
		t.Fatalf("table:\n%s", got)
	}
}
