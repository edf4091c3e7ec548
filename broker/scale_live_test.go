package broker

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/internal/testenv"
)

// liveBudget is what a live topic (one connected producer, one connected
// consumer on a durable subscription, over a client connection shared by
// many topics) may cost the broker, in heap and stacks and in resident
// memory: issue 35's 8 KiB, asserted at 20,000 topics as the issue asks.
// Measured there (6 Dec 2026): 6.7-6.8 KiB of heap and stacks, 7.1-7.2
// KiB of RSS, which moves with how the heap fragmented (9.7 / 10.1 KiB
// before the subscription's channels and the topic's maps went, 26.5 KiB
// before the idle goroutines went; bench/topics/NOTES.md, "Live topics",
// says where each KiB goes). The test broker's in-memory ledger and
// metadata stores are counted too (~1.2 KiB of the figure, by the heap
// profile).
const (
	liveBudget    = 8 << 10
	liveRSSBudget = 8 << 10
)

// scaleLiveChildEnv, set, makes TestScaleLiveChild the client of
// TestScaleLiveTopicsMemory in a separate process ("url,prefix,n,conns").
const scaleLiveChildEnv = "BROKER_SCALE_LIVE_CHILD"

// TestScaleLiveChild is the client process of TestScaleLiveTopicsMemory;
// without scaleLiveChildEnv it does nothing. It opens n topics over conns
// clients (one connection each), each with a producer and a consumer on a
// durable subscription, sends one message on each and receives it, says
// "ready" on stdout and waits for a line on stdin; then sends and receives
// a second message on each topic (dispatch from idle subscriptions), says
// "done" and waits for stdin to close.
func TestScaleLiveChild(t *testing.T) {
	spec := os.Getenv(scaleLiveChildEnv)
	if spec == "" {
		return
	}
	parts := strings.Split(spec, ",")
	if len(parts) != 4 {
		t.Fatalf("bad %s %q", scaleLiveChildEnv, spec)
	}
	n, _ := strconv.Atoi(parts[2])
	conns, _ := strconv.Atoi(parts[3])
	url, prefix := parts[0], parts[1]
	logger := plog.DefaultNopLogger()
	if os.Getenv("SCALE_LIVE_CLIENT_LOG") != "" { // the client's warnings, on stderr
		logger = plog.NewLoggerWithSlog(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	}
	cls := make([]pulsar.Client, max(conns, 1))
	for i := range cls {
		cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, OperationTimeout: 2 * time.Minute, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		cls[i] = cl
	}
	prods := make([]pulsar.Producer, n)
	conss := make([]pulsar.Consumer, n)
	each := func(f func(i int) error) {
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= n {
						return
					}
					if err := f(i); err != nil {
						errs <- fmt.Errorf("topic %d: %w", i, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	roundTrip := func(i int, payload string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := prods[i].Send(ctx, &pulsar.ProducerMessage{Payload: []byte(payload)}); err != nil {
			return err
		}
		m, err := conss[i].Receive(ctx)
		if err != nil {
			return err
		}
		if got := string(m.Payload()); got != payload {
			return fmt.Errorf("received %q, want %q", got, payload)
		}
		return conss[i].Ack(m)
	}
	each(func(i int) error {
		topic := fmt.Sprintf("persistent://public/default/%s-%d", prefix, i)
		cl := cls[i%len(cls)]
		// The client's own timers are set so it does not spend its CPU on
		// them at 100,000 topics (the broker sees the same commands): a
		// producer without batching still ticks its batch flush every
		// 10 ms by default, and a consumer's ack grouping every 100 ms
		// (past ~50,000 topics the client did little else). Acks go out
		// at once instead of grouped.
		c, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub",
			ReceiverQueueSize:  4, // the client's memory; the broker's is the same
			AckGroupingOptions: &pulsar.AckGroupingOptions{MaxSize: 1}})
		if err != nil {
			return err
		}
		conss[i] = c
		p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true, MaxPendingMessages: 4, SendTimeout: 2 * time.Minute,
			BatchingMaxPublishDelay: time.Hour})
		if err != nil {
			return err
		}
		prods[i] = p
		return roundTrip(i, fmt.Sprintf("first %d", i))
	})
	in := bufio.NewReader(os.Stdin)
	fmt.Println("ready")
	if _, err := in.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	each(func(i int) error { return roundTrip(i, fmt.Sprintf("second %d", i)) })
	fmt.Println("done")
	io.Copy(io.Discard, in)
}

// rssBytes is the process's resident set (VmRSS), 0 where /proc has none.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestScaleLiveTopicsMemory: 20,000 live topics, issue 35's figure
// (SCALE_LIVE_TOPICS overrides; 100,000 with MAGNETAR_SOAK set,
// BENCHMARKS.md gives the commands), each with a connected
// producer and a connected consumer on a durable subscription, over 16
// client connections (SCALE_LIVE_CONNS) in a child process: many topics
// per connection, as pulsar-client-go multiplexes them. (One connection
// would do, but it loads the topics one at a time; 20,000 over 4, on a
// loaded machine, saw clients reconnect and sends time out, not looked
// into further.)
// Each topic has published and dispatched a message. The heap and stacks
// the broker holds for them after a GC, and its resident set once the
// free heap went back to the OS, must stay within liveBudget and
// liveRSSBudget a topic (the test broker's in-memory ledger and metadata
// stores included), with no goroutine of their own. Then every topic
// publishes and dispatches a second message. Under the race detector it
// runs in this package's tests built without it.
func TestScaleLiveTopicsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 20,000 live topics")
	}
	if raceEnabled {
		// The race detector's own allocations swamp the budget: run
		// this package's tests built without it.
		testenv.RunWithoutRace(t, "^TestScaleLiveTopicsMemory$")
		return
	}
	// The broker's fixed cost (~6.8 MB here) is spread over the topics:
	// ~0.35 KiB a topic at 20,000 (0.7 at 10,000). The client process
	// needs ~2.5 GB; on an idle two-core machine the topics open in
	// 10-40 s (a loaded CI machine once took 14 minutes for 20,000,
	// before the broker's subscribe path got cheaper).
	n := 20000
	if testenv.Soak() {
		n = 100000
	}
	if v := os.Getenv("SCALE_LIVE_TOPICS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	tb := startBroker(t, func(c *brokerconf.Config) {
		c.HideTopicLevelMetrics = true
	})
	debug.FreeOSMemory()
	h0, s0, g0 := memInUse()
	r0 := rssBytes()
	if os.Getenv("SCALE_PROFILE_DIR") != "" {
		runtime.MemProfileRate = 64
	}
	childTimeout := "30m" // SCALE_LIVE_CHILD_TIMEOUT: longer for 100,000 on a busy machine
	if v := os.Getenv("SCALE_LIVE_CHILD_TIMEOUT"); v != "" {
		childTimeout = v
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestScaleLiveChild$", "-test.count=1", "-test.timeout="+childTimeout)
	conns := 16
	if v := os.Getenv("SCALE_LIVE_CONNS"); v != "" {
		conns, _ = strconv.Atoi(v)
	}
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,live,%d,%d", scaleLiveChildEnv, tb.url, n, conns))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	out := bufio.NewScanner(stdout)
	await := func(word string) {
		t.Helper()
		for out.Scan() {
			if out.Text() == word {
				return
			}
			t.Log("client: ", out.Text())
		}
		t.Fatalf("client process ended before %q: %v", word, cmd.Wait())
	}
	await("ready")
	created := time.Since(t0)
	if got := len(tb.loadedTopics("")); got != n {
		t.Fatalf("%d topics loaded, want %d", got, n)
	}
	// Every producer and consumer is connected while measured.
	producers, consumers := 0, 0
	tb.EachTopic(func(v Topic) bool {
		st := v.Snapshot(false)
		producers += len(st.Publishers)
		for _, ss := range st.Subscriptions {
			consumers += len(ss.Consumers)
		}
		return true
	})
	if producers != n || consumers != n {
		t.Fatalf("%d producers and %d consumers connected, want %d each", producers, consumers, n)
	}
	h1, s1, g1 := memInUse()
	debug.FreeOSMemory()
	r1 := rssBytes()
	logRuntimeMem(t, n)
	writeProfiles(t, "live-")
	perHeap := float64(h1+s1-h0-s0) / float64(n)
	perRSS := float64(r1-r0) / float64(n)
	t.Logf("%d live topics opened in %s (%.0f/s): %.0f B/topic heap and stacks (heap %.0f, stacks %.0f), RSS %.0f B/topic (%d MiB), %d goroutines (%+d)",
		n, created.Round(time.Millisecond), float64(n)/created.Seconds(), perHeap,
		float64(h1-h0)/float64(n), float64(s1-s0)/float64(n), perRSS, (r1-r0)>>20, g1, g1-g0)
	// Parked topics hold no goroutine: not the subscription loop (its
	// consumer waits), not the ledgers' completion goroutines. Each
	// client connection has two (its reader and writer).
	if g1-g0 > 2*conns+18 {
		var buf bytes.Buffer
		pprof.Lookup("goroutine").WriteTo(&buf, 1)
		t.Errorf("%d goroutines more for %d live topics (want none of their own); by stack:\n%.6000s", g1-g0, n, buf.String())
	}
	if perHeap > liveBudget {
		t.Errorf("a live topic costs %.0f B of heap and stacks, budget %d B", perHeap, liveBudget)
	}
	switch {
	case r0 > 0 && os.Getenv("SCALE_PROFILE_DIR") != "":
		// The heap profile's buckets (MemProfileRate 64) are ~2 KiB of
		// RSS a topic here, outside the heap: not the broker's.
		t.Logf("RSS not held to the budget while profiling")
	case r0 > 0 && perRSS > liveRSSBudget:
		t.Errorf("a live topic costs %.0f B of RSS, budget %d B", perRSS, liveRSSBudget)
	}
	// Every topic publishes and dispatches again, from idle.
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	await("done")
}

// logRuntimeMem logs what the runtime holds besides the heap in use, a
// topic at a time: where a resident set larger than heap and stacks goes.
func logRuntimeMem(t *testing.T, n int) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	per := func(v uint64) float64 { return float64(v) / float64(n) }
	t.Logf("runtime per topic: heap in use %.0f B (allocated %.0f), idle not released %.0f, spans %.0f, GC metadata %.0f, other %.0f, profiling buckets %.0f",
		per(ms.HeapInuse), per(ms.HeapAlloc), per(ms.HeapIdle-ms.HeapReleased), per(ms.MSpanInuse), per(ms.GCSys), per(ms.OtherSys), per(ms.BuckHashSys))
}
