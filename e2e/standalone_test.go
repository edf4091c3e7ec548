package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/testenv"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-mq/magnetar/entrylog"
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
	if testenv.Soak() {
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

// TestStandaloneKillsLeaveNoUnsealedLogs: five SIGKILLs of a standalone on
// one data directory, each under load. Every start seals the entry log
// the crash before left unsealed (and removes the empty prepared one), so
// after them every entry log in the ledger directory is sealed, there
// are at most as many as crashes plus one, and the last start reports
// one crash's logs, not all of them (45 crashes left 90 logs that every
// start warned about). Every acknowledged message is there.
func TestStandaloneKillsLeaveNoUnsealedLogs(t *testing.T) {
	dir := t.TempDir()
	const topic = "persistent://public/default/kills"
	var acked []string
	const kills = 5
	var p *proc
	for k := range kills {
		p = startStandalone(t, dir)
		c := p.clientWithTimeout(t, 3*time.Second)
		prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			m := fmt.Sprintf("kill-%d-%04d", k, i)
			if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(m)}); err != nil {
				t.Fatal(err)
			}
			acked = append(acked, m)
		}
		p.kill()
		c.Close()
	}
	p = startStandalone(t, dir)
	if n := countLines(t, p, "logs left unsealed by a crash"); n != 1 {
		t.Fatalf("last start reported unsealed logs %d times, want once; log:\n%s", n, p.log())
	}
	if strings.Contains(p.log(), "does not scan") {
		t.Fatalf("last start:\n%s", p.log())
	}
	c := p.client(t)
	checkAcked(t, c, topic, acked)
	c.Close()
	p.stop() // seals the running bookie's own active log
	ledgers := filepath.Join(dir, "ledgers")
	names, err := os.ReadDir(ledgers)
	if err != nil {
		t.Fatal(err)
	}
	nlogs := 0
	for _, e := range names {
		id, ok := entrylog.ParseFileName(e.Name())
		if !ok {
			continue
		}
		nlogs++
		f, err := os.Open(filepath.Join(ledgers, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		hdr := make([]byte, entrylog.HeaderSize)
		n, _ := f.ReadAt(hdr, 0)
		f.Close()
		_, _, mapValid, err := entrylog.DecodeHeader(hdr[:n])
		if err != nil || !mapValid {
			t.Fatalf("entry log %d (%s) not sealed after the last start: %v", id, e.Name(), err)
		}
	}
	if nlogs > kills+1 {
		t.Fatalf("%d entry logs after %d crashes", nlogs, kills)
	}
}

// TestStandaloneHTTPServiceURL: the real binary serves the Go client's
// HTTP lookup (partitioned metadata and /lookup/v2/topic on the HTTP
// port): with an http:// service URL a partitioned and a plain topic are
// found and their messages flow over the binary port.
func TestStandaloneHTTPServiceURL(t *testing.T) {
	p := startStandalone(t, t.TempDir())
	const partitioned = "persistent://public/default/http-lookup-parts"
	tn, err := utils.GetTopicName(partitioned)
	if err != nil {
		t.Fatal(err)
	}
	if err := adminOf(t, p).Topics().Create(*tn, 2); err != nil {
		t.Fatal(err)
	}
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: p.http, OperationTimeout: 30 * time.Second,
		ConnectionTimeout: 10 * time.Second, Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, topic := range []string{partitioned, "persistent://public/default/http-lookup-plain"} {
		cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
		if err != nil {
			t.Fatalf("%s: subscribe: %v", topic, err)
		}
		prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		if err != nil {
			t.Fatalf("%s: producer: %v", topic, err)
		}
		const n = 10
		for i := range n {
			if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(payload(i)), Key: fmt.Sprint(i)}); err != nil {
				t.Fatalf("%s: send %d: %v", topic, i, err)
			}
		}
		got := map[string]bool{}
		for range n {
			m, err := cons.Receive(ctx)
			if err != nil {
				t.Fatalf("%s: receive: %v", topic, err)
			}
			got[string(m.Payload())] = true
			cons.Ack(m)
		}
		for i := range n {
			if !got[payload(i)] {
				t.Fatalf("%s: message %d missing: %v", topic, i, got)
			}
		}
		prod.Close()
		cons.Close()
	}
}
