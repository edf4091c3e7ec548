package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/autorecovery"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/bkproto"
)

func entryPayload(id, e int64) []byte { return fmt.Appendf(nil, "ledger %d entry %d", id, e) }

// writer adds entries to h with up to 32 in flight and records the acked
// ids in completion order.
type writer struct {
	h    *ledger.WriteHandle
	mu   sync.Mutex
	acks []int64
	err  error
	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

func startWriter(h *ledger.WriteHandle) *writer {
	w := &writer{h: h, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *writer) run() {
	defer close(w.done)
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	defer wg.Wait()
	for e := int64(0); ; e++ {
		select {
		case <-w.stop:
			return
		case sem <- struct{}{}:
		}
		w.mu.Lock()
		failed := w.err != nil
		w.mu.Unlock()
		if failed {
			return
		}
		wg.Add(1)
		w.h.AddAsync(entryPayload(w.h.ID(), e), func(id int64, err error) {
			defer wg.Done()
			<-sem
			w.mu.Lock()
			if err != nil && w.err == nil {
				w.err = fmt.Errorf("add %d: %w", e, err)
			}
			if err == nil {
				w.acks = append(w.acks, id)
			}
			w.mu.Unlock()
			select {
			case w.wake <- struct{}{}:
			default:
			}
		})
	}
}

// waitAcks waits until n entries are acked (fatal on a failed add or after
// 30 s).
func (w *writer) waitAcks(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		w.mu.Lock()
		got, err := len(w.acks), w.err
		w.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
		select {
		case <-w.wake:
		case <-deadline:
			t.Fatalf("only %d of %d adds acked after 30s", got, n)
		}
	}
}

func (w *writer) finish(t *testing.T) []int64 {
	t.Helper()
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		t.Fatal(w.err)
	}
	return w.acks
}

// SIGKILL one bookie of four while a writer adds at E=3, Qw=2, Qa=2:
// adds go on through an ensemble change, the acked ids are 0..n-1 in
// order, every acked entry reads back, and autorecovery (broker process
// and autorecovery process) re-replicates the first segment so that every entry again
// has Qw intact copies on live bookies.
func TestClusterBookieKilledDuringAdds(t *testing.T) {
	c := newTestCluster(t)
	bookies := map[string]*bookieProc{}
	for range 4 {
		b := c.startBookie("")
		bookies[b.id] = b
	}
	// Two autorecovery participants: the broker process and a separate
	// `magnetar autorecovery` process; one is elected auditor, both run
	// workers that compete for the ledger's lock.
	c.startBroker("--log-level", "debug")
	startMagnetar(t, "autorecovery", "magnetar autorecovery ready", "autorecovery", "--metadata-url", c.url)
	n := c.clusterClient()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	h, err := n.lc.Create(ctx, ledger.CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: []byte("pw")})
	if err != nil {
		t.Fatal(err)
	}
	var evMu sync.Mutex
	var events []string
	if err := n.store.(metadata.Watcher).Watch(ctx, ledger.AvailablePath, func(ev metadata.Event) {
		evMu.Lock()
		events = append(events, fmt.Sprintf("%s %v", time.Now().Format("15:04:05.000"), ev.Type))
		evMu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	w := startWriter(h)
	w.waitAcks(t, 300)
	victim := h.Metadata().Ensembles[0].Bookies[0]
	bookies[victim].kill()
	w.mu.Lock()
	atKill := len(w.acks)
	w.mu.Unlock()
	w.waitAcks(t, atKill+500)
	acks := w.finish(t)
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for i, id := range acks {
		if id != int64(i) {
			t.Fatalf("ack %d has id %d: acks lost or reordered", i, id)
		}
	}
	last := int64(len(acks) - 1)
	m := h.Metadata()
	if len(m.Ensembles) < 2 || slices.Contains(m.Last().Bookies, victim) || m.LastEntryID != last {
		t.Fatalf("metadata after the kill: %+v (victim %s, last acked %d)", m, victim, last)
	}
	t.Logf("killed %s after %d acks; %d acked in all; ensembles %+v", victim, atKill, len(acks), m.Ensembles)

	// Re-replication: the victim leaves every segment, nothing stays marked.
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, _, err = n.lc.Metadata(ctx, h.ID())
		if err != nil {
			t.Fatal(err)
		}
		marks, err := autorecovery.UnderReplicated(ctx, n.store)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(m.Ensembles, func(s ledger.Segment) bool { return slices.Contains(s.Bookies, victim) }) && len(marks) == 0 {
			break
		}
		if time.Now().After(deadline) {
			reg, _ := autorecovery.ListBookies(ctx, n.store)
			evMu.Lock()
			t.Logf("test's watch events on %s: %v", ledger.AvailablePath, events)
			evMu.Unlock()
			t.Fatalf("not re-replicated after 30s: ensembles %+v, marks %v, bookies %+v; broker log:\n%s", m.Ensembles, marks, reg, c.broker.log())
		}
		time.Sleep(50 * time.Millisecond) // polling the metadata store
	}
	checkReplicas(t, n, h.ID(), &m, last, entryPayload)
	r, err := n.lc.Open(ctx, h.ID())
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Read(ctx, 0, last)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range got {
		if string(p) != string(entryPayload(h.ID(), int64(i))) {
			t.Fatalf("entry %d = %q", i, p)
		}
	}
}

// checkReplicas reads every entry 0..last from every bookie of its write
// set directly and checks the copy.
func checkReplicas(t *testing.T, n *clusterNode, id int64, m *ledger.Metadata, last int64, want func(id, e int64) []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for e := int64(0); e <= last; e++ {
		seg := m.EnsembleAt(e)
		for k := range m.WriteQuorum {
			b := seg.Bookies[(e+int64(k))%int64(m.EnsembleSize)]
			bc, err := n.resolver.Client(b)
			if err != nil {
				t.Fatal(err)
			}
			frame, err := bc.ReadEntry(ctx, id, e, false, nil)
			if err != nil {
				t.Fatalf("entry %d on %s: %v", e, b, err)
			}
			hd, p, err := bkproto.DecodeEntry(frame)
			if err != nil || hd.LedgerID != id || hd.EntryID != e || string(p) != string(want(id, e)) {
				t.Fatalf("entry %d on %s: header %+v, err %v, payload %q", e, b, hd, err, p)
			}
		}
	}
}

// A broker process (the ledger writer) is SIGKILLed while a producer
// sends: a new broker process opens the topic, which recovers (fences and
// closes) the dead broker's ledger, and a consumer reads every message the
// producer had acked, in order; the recovered ledger is CLOSED.
func TestClusterBrokerKilledMidStream(t *testing.T) {
	c := newTestCluster(t)
	for range 3 {
		c.startBookie("")
	}
	// A short session: the dead broker's bundle ownership lasts until its
	// ZooKeeper session expires.
	b1 := c.startBroker("--autorecovery=false", "--zk-session-timeout", "2s")
	cl := b1.clientWithTimeout(t, 3*time.Second)
	const topic = "persistent://public/default/broker-crash"
	prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, SendTimeout: 3 * time.Second, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[int]bool{}
	enough := make(chan struct{})
	stop := make(chan struct{})
	var sent sync.WaitGroup
	sent.Add(1)
	go func() {
		defer sent.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			prod.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(payload(i))}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err != nil {
					return
				}
				mu.Lock()
				acked[i] = true
				if len(acked) == 500 {
					close(enough)
				}
				mu.Unlock()
			})
			if i%64 == 63 {
				prod.FlushWithCtx(context.Background())
			}
		}
	}()
	select {
	case <-enough:
	case <-time.After(30 * time.Second):
		t.Fatal("500 sends not acked within 30s")
	}
	n := c.clusterClient()
	ctx := context.Background()
	openBefore := map[int64]bool{}
	ids, err := n.lc.Ledgers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if m, _, err := n.lc.Metadata(ctx, id); err == nil && m.State == ledger.StateOpen {
			openBefore[id] = true
		}
	}
	b1.kill()
	close(stop)
	sent.Wait()
	mu.Lock()
	want := 0
	for i := range acked {
		want = max(want, i+1)
	}
	nAcked := len(acked)
	mu.Unlock()
	t.Logf("broker killed with %d sends acked (highest %d)", nAcked, want-1)

	b2 := c.startBroker("--autorecovery=false")
	cl2 := b2.client(t)
	// Until the dead broker's session expires, lookups name it as the
	// owner and the first subscribe attempt fails to connect: retry.
	var cons pulsar.Consumer
	for deadline := time.Now().Add(30 * time.Second); ; {
		cons, err = cl2.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "after-crash",
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	prev := -1
	for seen := 0; seen < nAcked; {
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		m, err := cons.Receive(rctx)
		cancel()
		if err != nil {
			t.Fatalf("receive after %d of %d acked messages: %v", seen, nAcked, err)
		}
		var i int
		if _, err := fmt.Sscanf(string(m.Payload()), "msg-%d", &i); err != nil {
			t.Fatalf("payload %q", m.Payload())
		}
		if i <= prev {
			t.Fatalf("message %d after %d: reordered or duplicated", i, prev)
		}
		for j := prev + 1; j < i; j++ {
			if acked[j] {
				t.Fatalf("acked message %d missing (got %d after %d)", j, i, prev)
			}
		}
		if acked[i] {
			seen++
		}
		prev = i
		cons.Ack(m)
	}
	// The dead broker's data ledger was recovered by the new one: CLOSED,
	// holding at least every acked message.
	recovered := false
	for id := range openBefore {
		m, _, err := n.lc.Metadata(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if m.State == ledger.StateClosed && m.LastEntryID+1 >= int64(nAcked) {
			recovered = true
		}
	}
	if !recovered {
		t.Fatalf("no ledger open before the kill (%v) was recovered and closed with %d+ entries", openBefore, nAcked)
	}
}

// TestClusterBookieRestartAfterKill: a bookie SIGKILLed and started again
// at once (same port and directories) finds its previous session's
// registration still in ZooKeeper (the session lives until it expires,
// 10 s here). It takes the node over and is ready without exiting or
// waiting for the expiry, and a new E=3 ledger over the three bookies
// uses it again.
func TestClusterBookieRestartAfterKill(t *testing.T) {
	c := newTestCluster(t)
	var bookies []*bookieProc
	for range 3 {
		bookies = append(bookies, c.startBookie(""))
	}
	victim := bookies[0]
	n := c.clusterClient()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	victim.kill()
	t0 := time.Now()
	if _, _, err := n.store.Get(ctx, ledger.AvailablePath+"/"+victim.id); err != nil {
		t.Fatalf("the killed bookie's registration: %v (want it still there, its session alive)", err)
	}
	p, f := startMagnetar(t, "bookie-restarted", "magnetar bookie ready",
		"bookie", "--metadata-url", c.url, "--listen", victim.id, "--data-dir", victim.dir)
	ready := time.Since(t0)
	if f["id"] != victim.id {
		t.Fatalf("restarted bookie id %s, want %s", f["id"], victim.id)
	}
	t.Logf("bookie ready %v after its SIGKILL", ready)
	// What the bookie did with the node is in its log (bookie/server,
	// register.go), a signal that does not depend on how loaded the
	// machine is; the time to ready is only logged.
	logText, err := os.ReadFile(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(logText), "waiting for its session to expire") {
		t.Errorf("the restarted bookie waited for the old session to expire instead of reclaiming its node (ready after %v)", ready)
	}
	if !strings.Contains(string(logText), "reclaiming the registration left by this bookie's previous session") {
		t.Errorf("the restarted bookie did not say it reclaimed its previous registration; its log:\n%s", logText)
	}
	// The node is the new process's: it outlives the old session.
	h, err := n.lc.Create(ctx, ledger.CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: []byte("pw")})
	if err != nil {
		t.Fatalf("E=3 ledger on three bookies after the restart: %v", err)
	}
	if !slices.Contains(h.Metadata().Ensembles[0].Bookies, victim.id) {
		t.Fatalf("ensemble %v without the restarted bookie %s", h.Metadata().Ensembles[0].Bookies, victim.id)
	}
	for e := range int64(20) {
		if _, err := h.Add(ctx, entryPayload(h.ID(), e)); err != nil {
			t.Fatalf("add %d: %v", e, err)
		}
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Past the old session's expiry (10 s, the default, and ZooKeeper's
	// tick) the node is still there: a wait for an event that must not
	// come.
	time.Sleep(time.Until(t0.Add(12 * time.Second)))
	if _, _, err := n.store.Get(ctx, ledger.AvailablePath+"/"+victim.id); err != nil {
		t.Fatalf("registration after the old session expired: %v", err)
	}
	select {
	case <-p.exited:
		t.Fatalf("restarted bookie exited: %v\n%s", p.waitErr, p.log())
	default:
	}
}

// TestClusterBookieKillLogVolume: a bookie SIGKILLed under load (4 topics,
// 256 sends in flight each, E=3 on 4 bookies) costs the broker's log a
// few lines per ledger, not one per add in flight (6,512 warnings over 7
// kills, up to 2,000 a second, before). Every acknowledged message reads
// back.
func TestClusterBookieKillLogVolume(t *testing.T) {
	bc := startBrokerCluster(t, 4, 1, "--load-shedding-interval", "-1s")
	log := &ackedLog{acked: map[string][]string{}}
	stop := make(chan struct{})
	var wgs []*sync.WaitGroup
	var topics []string
	for i := range 4 {
		topic := fmt.Sprintf("persistent://public/default/logvol-%d", i)
		topics = append(topics, topic)
		wgs = append(wgs, runProducersWindow(t, bc.serviceURL(), topic, []string{fmt.Sprintf("lv%d", i)}, 256, stop, log))
	}
	waitAcked(t, log, 4000, 60*time.Second)
	victim := busiestBookie(t, bc)
	broker := bc.brokers[0]
	st, err := os.Stat(broker.logPath)
	if err != nil {
		t.Fatal(err)
	}
	mark := st.Size()
	victim.kill()
	before := log.total()
	waitAcked(t, log, before+8000, 90*time.Second)
	close(stop)
	for _, wg := range wgs {
		wg.Wait()
	}
	b, err := os.ReadFile(broker.logPath)
	if err != nil {
		t.Fatal(err)
	}
	var warns []string
	for _, l := range strings.Split(string(b[mark:]), "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			warns = append(warns, l)
		}
	}
	t.Logf("bookie %s killed: %d warning lines in the broker's log, %d messages acknowledged since", victim.id, len(warns), log.total()-before)
	if len(warns) > 36 {
		t.Fatalf("%d warning lines for one bookie kill, want at most a few dozen:\n%s", len(warns), strings.Join(warns, "\n"))
	}
	if t.Failed() {
		return
	}
	cl := newClusterClient(t, bc.serviceURL())
	for i, topic := range topics {
		one := &ackedLog{acked: map[string][]string{fmt.Sprintf("lv%d", i): log.acked[fmt.Sprintf("lv%d", i)]}}
		checkDelivered(t, cl, topic, "check", one)
	}
}

// busiestBookie returns the bookie in the most ensembles of open ledgers.
func busiestBookie(t *testing.T, bc *brokerCluster) *bookieProc {
	t.Helper()
	n := bc.c.clusterClient()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ids, err := n.lc.Ledgers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, id := range ids {
		m, _, err := n.lc.Metadata(ctx, id)
		if err != nil || m.State != ledger.StateOpen {
			continue
		}
		for _, b := range m.Last().Bookies {
			count[b]++
		}
	}
	best := bc.bookies[0]
	for _, b := range bc.bookies {
		if count[b.id] > count[best.id] {
			best = b
		}
	}
	if count[best.id] == 0 {
		t.Fatalf("no open ledger on any bookie (%d ledgers)", len(ids))
	}
	return best
}
