package broker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
)

// topicBudget is the memory one idle topic (with the producer that sent
// its message gone and its durable subscription without consumer) may
// cost: 4 GiB for a million topics.
const topicBudget = 4 << 30 / 1_000_000

// loadedBudget guards the memory of a loaded idle topic.
const loadedBudget = 24 << 10

// memInUse is the heap and goroutine stacks in use after a full GC.
func memInUse() (heap, stacks uint64, goroutines int) {
	var ms runtime.MemStats
	for range 2 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse, ms.StackInuse, runtime.NumGoroutine()
}

// scaleChildEnv, set, makes TestScaleTopicsChild the client of
// TestScaleTopicsMemory in a separate process ("url,prefix,n,conns"), so
// the broker's memory is measured without the client's.
const scaleChildEnv = "BROKER_SCALE_CHILD"

// TestScaleTopicsChild is the client process of TestScaleTopicsMemory;
// without scaleChildEnv it does nothing.
func TestScaleTopicsChild(t *testing.T) {
	spec := os.Getenv(scaleChildEnv)
	if spec == "" {
		return
	}
	var url, prefix string
	var n, conns int
	parts := strings.Split(spec, ",")
	if len(parts) != 4 {
		t.Fatalf("bad %s %q", scaleChildEnv, spec)
	}
	url, prefix = parts[0], parts[1]
	n, _ = strconv.Atoi(parts[2])
	conns, _ = strconv.Atoi(parts[3])
	createScaleTopics(t, url, prefix, n, conns)
}

// runScaleChild runs createScaleTopics in a child process.
func runScaleChild(t *testing.T, url, prefix string, n, conns int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestScaleTopicsChild$", "-test.count=1", "-test.timeout=20m")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%s,%d,%d", scaleChildEnv, url, prefix, n, conns))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("client process: %v\n%s", err, out)
	}
}

// createScaleTopics gives each of n topics a durable subscription (a
// consumer that subscribes and closes) and one message from a producer
// that then closes, over conns client connections.
func createScaleTopics(t *testing.T, url, prefix string, n, conns int) {
	t.Helper()
	cls := make([]pulsar.Client, conns)
	for i := range cls {
		c, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, OperationTimeout: time.Minute, Logger: plog.DefaultNopLogger()})
		if err != nil {
			t.Fatal(err)
		}
		cls[i] = c
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4*conns)
	for w := range 4 * conns {
		wg.Add(1)
		go func(c pulsar.Client) {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				topic := fmt.Sprintf("persistent://public/default/%s-%d", prefix, i)
				cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub"})
				if err != nil {
					errs <- err
					return
				}
				cons.Close()
				p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
				if err != nil {
					errs <- err
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				_, err = p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("one")})
				cancel()
				p.Close()
				if err != nil {
					errs <- err
					return
				}
			}
		}(cls[w%conns])
	}
	wg.Wait()
	for _, c := range cls {
		c.Close()
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestScaleTopicsMemory: 20,000 topics (SCALE_TOPICS overrides), each
// with a producer that sent a message and closed and a durable
// subscription, created by a client in a child process. Loaded, such a
// topic must cost at most loadedBudget; once idle-unloaded at most
// topicBudget (4 GiB per million topics) of heap and stacks, measured
// after a GC against the broker before any topic (the in-memory ledger
// and metadata stores of the test broker included).
func TestScaleTopicsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 20,000 topics")
	}
	n := scaleTopics // 20,000; 2,000 under the race detector
	if v := os.Getenv("SCALE_TOPICS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	tb := startBroker(t, func(c *Config) {
		c.HistoryInterval = time.Second // the sampler walks every topic
	})
	h0, s0, g0 := memInUse()
	if os.Getenv("SCALE_PROFILE_DIR") != "" {
		runtime.MemProfileRate = 64
	}
	t0 := time.Now()
	runScaleChild(t, tb.url, "scale", n, 64)
	created := time.Since(t0)
	h1, s1, g1 := memInUse()
	writeProfiles(t, "loaded-")
	loaded := float64(h1+s1-h0-s0) / float64(n)
	t.Logf("%d topics created in %s (%.0f/s); loaded: %.0f B/topic (heap %.0f, stacks %.0f), %d goroutines (%+d)",
		n, created.Round(time.Millisecond), float64(n)/created.Seconds(), loaded,
		float64(h1-h0)/float64(n), float64(s1-s0)/float64(n), g1, g1-g0)
	if got := len(tb.loadedTopics("")); got != n {
		t.Fatalf("%d topics loaded, want %d", got, n)
	}
	// A loaded idle topic keeps no goroutine of its own (its
	// subscription loop stopped); its open ledger's writer keeps one
	// (memstore here, ledger.WriteHandle in a standalone).
	if g1-g0 > n+n/100+50 {
		t.Errorf("%d goroutines more for %d idle topics (want at most one each)", g1-g0, n)
	}
	// Regression guard for loaded idle topics (~35 KiB before the
	// subscription loop stopped when idle and history runs).
	if loaded > loadedBudget {
		t.Errorf("loaded idle topic costs %.0f B, guard %d B", loaded, loadedBudget)
	}
	// Unload them all as the idle unloader would, an hour from now.
	t1 := time.Now()
	if u := tb.unloadIdleTopics(time.Now().Add(time.Hour)); u != n {
		t.Fatalf("unloaded %d of %d idle topics", u, n)
	}
	// What the loops drop within a tick: the history sampler forgets
	// unloaded topics; the entry cache (bounded, shared) ages out.
	tb.sampleHistory(time.Now().UnixMilli())
	tb.factory.Cache().EvictOlderThan(time.Now().Add(time.Hour), 0)
	h2, s2, g2 := memInUse()
	writeProfiles(t, "unloaded-")
	unloaded := (float64(h2+s2) - float64(h0+s0)) / float64(n)
	t.Logf("unloaded in %s; then %.0f B/topic (budget %d), %d goroutines", time.Since(t1).Round(time.Millisecond), unloaded, topicBudget, g2)
	if unloaded > topicBudget {
		t.Errorf("idle topic costs %.0f B, budget %d B (4 GiB per million)", unloaded, topicBudget)
	}
	if g2-g0 > 50 {
		t.Errorf("%d goroutines more after unloading every topic", g2-g0)
	}
	// And a topic reloads with its message and subscription.
	cl := tb.client(t)
	c := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: fmt.Sprintf("persistent://public/default/scale-%d", n/2), SubscriptionName: "sub"})
	defer c.Close()
	if m := receiveN(t, c, 1)[0]; string(m.Payload()) != "one" {
		t.Fatalf("reloaded topic gave %q", m.Payload())
	}
}

// writeProfiles writes heap and goroutine profiles to $SCALE_PROFILE_DIR
// (for finding where a topic's memory goes; nothing when unset).
func writeProfiles(t *testing.T, prefix string) {
	dir := os.Getenv("SCALE_PROFILE_DIR")
	if dir == "" {
		return
	}
	for _, name := range []string{"heap", "goroutine"} {
		f, err := os.Create(dir + "/" + prefix + name + ".pb.gz")
		if err != nil {
			t.Fatal(err)
		}
		pprof.Lookup(name).WriteTo(f, 0)
		f.Close()
	}
}
