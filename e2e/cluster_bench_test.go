package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Cluster benchmarks (docs/benchmarks/cluster.md): real processes,
// real ZooKeeper, three bookies. Run with
//
//	go test ./e2e/ -run '^$' -bench BenchmarkCluster -benchtime 1x -timeout 60m

// procCPU is the user+system CPU a process has used so far.
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the ")" of the command name: state is field 3; utime
	// and stime are fields 14 and 15, in clock ticks (100 per second).
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func (bc *brokerCluster) serverCPU() time.Duration {
	var d time.Duration
	for _, b := range bc.brokers {
		d += procCPU(b.cmd.Process.Pid)
	}
	for _, b := range bc.bookies {
		d += procCPU(b.cmd.Process.Pid)
	}
	return d
}

// runPerf runs `magnetar perf args... --json -q` to completion and returns
// its summary and CPU.
func runPerfJSON(tb testing.TB, args ...string) (perfSummary, time.Duration) {
	tb.Helper()
	all := append(append([]string{"perf"}, args...), "--json", "-q")
	cmd := magnetarCommand(tb, all...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		tb.Fatalf("perf %v: %v\n%s", args, err, errb.String())
	}
	var s perfSummary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		tb.Fatalf("perf output %q: %v", out.String(), err)
	}
	return s, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

type perfSummary struct {
	Messages int64   `json:"messages"`
	Errors   int64   `json:"errors"`
	MsgRate  float64 `json:"msgs_per_sec"`
	Latency  struct {
		P50 int64 `json:"p50_us"`
		P99 int64 `json:"p99_us"`
	} `json:"latency"`
}

// BenchmarkClusterThroughput: aggregate produce, then catch-up consume,
// msgs/s with 1, 2 and 3 brokers over the same three bookies (E=3, Qw=2,
// Qa=2), 200-byte messages, 12 partitions over a 16-bundle namespace,
// with the CPU of every server process (and of the client) per message.
func BenchmarkClusterThroughput(b *testing.B) {
	dur := 20 * time.Second
	if v := os.Getenv("MAGNETAR_CLUSTER_BENCH_SECONDS"); v != "" {
		n, _ := strconv.Atoi(v)
		dur = time.Duration(n) * time.Second
	}
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("brokers=%d", n), func(b *testing.B) {
			bc := startBrokerCluster(b, 3, n, "--load-shedding-interval", "-1s", "--disable-bundle-auto-split")
			bc.createNamespace("public/bench", 16)
			const topic = "persistent://public/bench/tput"
			if code, _, body := httpDo(b, "PUT", bc.brokers[0].http+"/admin/v2/persistent/public/bench/tput/partitions", "12", true); code != 204 {
				b.Fatalf("create partitioned topic: %d %s", code, body)
			}
			// Create the subscription first so the consume run catches up
			// on everything produced.
			cl := newClusterClient(b, bc.serviceURL())
			c, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "perf-sub"})
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
			cl.Close()
			cpu0 := bc.serverCPU()
			prod, pcpu := runPerfJSON(b, "produce", "--service-url", bc.serviceURL(), "--topic", topic,
				"--size", "200", "--num-producers", "1", "--test-duration", dur.String())
			cpu1 := bc.serverCPU()
			cons, ccpu := runPerfJSON(b, "consume", "--service-url", bc.serviceURL(), "--topic", topic,
				"--subscription-name", "perf-sub", "--num-messages", strconv.FormatInt(prod.Messages, 10), "--idle-timeout", "20s")
			cpu2 := bc.serverCPU()
			if prod.Errors != 0 || cons.Messages < prod.Messages {
				b.Fatalf("produce %+v, consume %+v", prod, cons)
			}
			b.ReportMetric(prod.MsgRate, "produce-msgs/s")
			b.ReportMetric(cons.MsgRate, "consume-msgs/s")
			b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(prod.Messages), "server-cpu-us/produced-msg")
			b.ReportMetric(float64(pcpu.Microseconds())/float64(prod.Messages), "client-cpu-us/produced-msg")
			b.ReportMetric(float64((cpu2-cpu1).Microseconds())/float64(cons.Messages), "server-cpu-us/consumed-msg")
			b.ReportMetric(float64(ccpu.Microseconds())/float64(cons.Messages), "client-cpu-us/consumed-msg")
			b.ReportMetric(float64(prod.Latency.P99)/1000, "produce-p99-ms")
		})
	}
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return s[i]
}

// BenchmarkClusterFailover: how long a topic's producer stalls when its
// owner goes, from the signal (or the network cut) to the first publish
// acknowledged by the new owner, for each way of going (SIGTERM,
// SIGKILL, a partitioned broker; TestClusterFailoverTimes describes the
// rounds), over MAGNETAR_CLUSTER_BENCH_KILLS rounds of each (default
// 20), with a 6 s ZooKeeper session timeout (FAILOVER_SESSION_TIMEOUT).
// The partition rounds need root (a network namespace). Figures and
// what sets them: bench/failover/NOTES.md.
func BenchmarkClusterFailover(b *testing.B) {
	kills := 20
	if v := os.Getenv("MAGNETAR_CLUSTER_BENCH_KILLS"); v != "" {
		kills, _ = strconv.Atoi(v)
	}
	session, flags := failoverSetup(b)
	for _, mode := range failoverModes {
		b.Run(mode, func(b *testing.B) {
			times := failoverTimes(b, mode, kills, flags)
			logFailovers(b, mode, session, times)
			b.ReportMetric(float64(percentile(times, 0.5).Milliseconds()), "failover-p50-ms")
			b.ReportMetric(float64(percentile(times, 0.99).Milliseconds()), "failover-p99-ms")
			b.ReportMetric(float64(slices.Max(times).Milliseconds()), "failover-max-ms")
		})
	}
}

// BenchmarkClusterLookup: HTTP lookup latency on 3 brokers: of a topic
// whose bundle is owned (any broker answers from the owner node), and of
// topics in unowned bundles (leader placement and ownership acquisition,
// following redirects); plus pulsar-client-go producer creation (binary
// lookup, redirects, PRODUCER) on a fresh bundle.
func BenchmarkClusterLookup(b *testing.B) {
	bc := startBrokerCluster(b, 3, 3, "--load-shedding-interval", "-1s")
	bc.createNamespace("public/lk", 128)
	// Owned: one topic, looked up on every broker in turn.
	code, _, body := httpDo(b, "GET", bc.brokers[0].http+"/lookup/v2/topic/persistent/public/lk/owned", "", true)
	if code != 200 {
		b.Fatalf("lookup: %d %s", code, body)
	}
	var owned []time.Duration
	for i := range 1000 {
		t0 := time.Now()
		code, _, _ := httpDo(b, "GET", bc.brokers[i%3].http+"/lookup/v2/topic/persistent/public/lk/owned", "", true)
		owned = append(owned, time.Since(t0))
		if code != 200 {
			b.Fatalf("lookup %d: %d", i, code)
		}
	}
	// Unowned: topics of fresh bundles (128 bundles; each topic name picked
	// to fall in a bundle not used yet), through a non-leader as a client
	// would, following the redirects.
	var fresh []time.Duration
	used := map[string]bool{bc.bundleOf("persistent://public/lk/owned"): true}
	for i := 0; len(fresh) < 60; i++ {
		tp := fmt.Sprintf("persistent://public/lk/f%d", i)
		if r := bc.bundleOf(tp); used[r] {
			continue
		} else {
			used[r] = true
		}
		t0 := time.Now()
		code, _, _ := httpDo(b, "GET", bc.brokers[i%3].http+"/lookup/v2/topic/persistent/public/lk/"+strings.TrimPrefix(tp, "persistent://public/lk/"), "", true)
		fresh = append(fresh, time.Since(t0))
		if code != 200 {
			b.Fatalf("fresh lookup: %d", code)
		}
	}
	b.ReportMetric(float64(percentile(owned, 0.5).Microseconds()), "owned-p50-us")
	b.ReportMetric(float64(percentile(owned, 0.99).Microseconds()), "owned-p99-us")
	b.ReportMetric(float64(percentile(fresh, 0.5).Microseconds()), "assign-p50-us")
	b.ReportMetric(float64(percentile(fresh, 0.99).Microseconds()), "assign-p99-us")
	cl := newClusterClient(b, bc.brokers[1].service)
	var create []time.Duration
	for i := 0; len(create) < 30; i++ {
		tp := fmt.Sprintf("persistent://public/lk/p%d", i)
		if r := bc.bundleOf(tp); used[r] {
			continue
		} else {
			used[r] = true
		}
		t0 := time.Now()
		p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: tp})
		if err != nil {
			b.Fatal(err)
		}
		create = append(create, time.Since(t0))
		p.Close()
	}
	b.ReportMetric(float64(percentile(create, 0.5).Microseconds()), "create-producer-fresh-p50-us")
	b.ReportMetric(float64(percentile(create, 0.99).Microseconds()), "create-producer-fresh-p99-us")
}
