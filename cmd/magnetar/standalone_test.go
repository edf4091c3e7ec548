package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestStandaloneProduceConsumeStats: the real binary serves the Go client
// and the stats endpoint, and a graceful restart keeps the durable
// subscription's position.
func TestStandaloneProduceConsumeRestart(t *testing.T) {
	dir := t.TempDir()
	p := startStandalone(t, dir)
	c := p.client(t)
	const topic = "persistent://public/default/e2e-restart"
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub",
		Type: pulsar.Exclusive, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, AckWithResponse: true})
	if err != nil {
		t.Fatal(err)
	}
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n = 200
	for i := range n {
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(payload(i))}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	// Consume and ack the first half only.
	for i := range n / 2 {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		m, err := cons.Receive(rctx)
		cancel()
		if err != nil {
			t.Fatalf("receive %d: %v", i, err)
		}
		if got := string(m.Payload()); got != payload(i) {
			t.Fatalf("message %d = %q, want %q", i, got, payload(i))
		}
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	code, body := p.get(t, "/admin/v2/persistent/public/default/e2e-restart/stats")
	if code != 200 {
		t.Fatalf("stats: HTTP %d: %s", code, body)
	}
	var st struct {
		MsgInCounter  int64 `json:"msgInCounter"`
		StorageSize   int64 `json:"storageSize"`
		Subscriptions map[string]struct {
			MsgBacklog int64  `json:"msgBacklog"`
			Type       string `json:"type"`
		} `json:"subscriptions"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("stats JSON: %v: %s", err, body)
	}
	if st.MsgInCounter != n || st.StorageSize <= 0 || st.Subscriptions["sub"].Type != "Exclusive" {
		t.Fatalf("stats = %s; want msgInCounter %d, storageSize > 0, sub Exclusive", body, n)
	}
	if bl := st.Subscriptions["sub"].MsgBacklog; bl != n/2 {
		t.Fatalf("backlog = %d, want %d", bl, n/2)
	}
	// /metrics carries Pulsar's topic metrics and the in-process bookie's.
	code, body = p.get(t, "/metrics")
	if code != 200 {
		t.Fatalf("metrics: HTTP %d", code)
	}
	for _, want := range []string{"pulsar_msg_backlog{", "bookie_journal_sync_latency_seconds_bucket{", "bookie_read_only{"} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("/metrics lacks %q", want)
		}
	}
	if !regexp.MustCompile(`(?m)^bookie_add_entry_latency_seconds_count [1-9]`).Match(body) {
		t.Fatalf("/metrics: no bookie add latency samples after %d sends", n)
	}
	c.Close()
	p.stop()

	// Restart on the same dir: the second half, and only it, is delivered.
	p2 := startStandalone(t, dir)
	c2 := p2.client(t)
	cons2, err := c2.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Exclusive})
	if err != nil {
		t.Fatal(err)
	}
	for i := n / 2; i < n; i++ {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		m, err := cons2.Receive(rctx)
		cancel()
		if err != nil {
			t.Fatalf("receive %d after restart: %v", i, err)
		}
		if got := string(m.Payload()); got != payload(i) {
			t.Fatalf("after restart message = %q, want %q", got, payload(i))
		}
		cons2.Ack(m)
	}
	c2.Close()
	p2.stop()
}

// TestStandaloneCrash: produce asynchronously at full speed, SIGKILL the
// standalone mid-stream, restart on the same dir: every message the client
// saw acknowledged is delivered to the durable subscription that existed
// before the crash. Repeated at several kill points.
func TestStandaloneCrash(t *testing.T) {
	iterations := 3
	if soak() {
		iterations = 20
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for it := range iterations {
		killAfter := 50 + rng.IntN(3000)
		t.Logf("iteration %d: kill after %d acks", it, killAfter)
		crashOnce(t, killAfter)
	}
}

func crashOnce(t *testing.T, killAfter int) {
	dir := t.TempDir()
	const topic = "persistent://public/default/e2e-crash"
	p := startStandalone(t, dir)
	// This client outlives the server it talks to: a short operation
	// timeout keeps its Close from waiting long on the dead connection.
	c := p.clientWithTimeout(t, 3*time.Second)
	sub, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "durable",
		Type: pulsar.Shared, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, SendTimeout: 5 * time.Second,
		BatchingMaxPublishDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[string]bool{}
	reached := make(chan struct{})
	var once sync.Once
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			msg := payload(i)
			prod.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(msg)},
				func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
					if err != nil {
						return
					}
					mu.Lock()
					acked[msg] = true
					if len(acked) >= killAfter {
						once.Do(func() { close(reached) })
					}
					mu.Unlock()
				})
		}
	}()
	select {
	case <-reached:
	case <-time.After(60 * time.Second):
		t.Fatalf("only %d acks within 60s; log:\n%s", len(acked), p.log())
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	close(stop)
	wg.Wait()
	c.Close() // fails what is still pending; acked is final from here
	mu.Lock()
	want := make(map[string]bool, len(acked))
	for k := range acked {
		want[k] = true
	}
	mu.Unlock()

	p2 := startStandalone(t, dir)
	c2 := p2.client(t)
	cons, err := c2.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "durable", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	seen := receiveUntil(t, cons, 120*time.Second, func(seen map[string]int) bool {
		for k := range want {
			if seen[k] == 0 {
				return false
			}
		}
		return true
	})
	for k := range want {
		if seen[k] == 0 {
			t.Fatalf("acked message %s lost after SIGKILL", k)
		}
	}
	t.Logf("%d acked before the kill, all %d delivered after restart (%d distinct seen)", len(want), len(want), len(seen))
	c2.Close()
	p2.stop()
}
