package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/internal/testenv"
)

func subscribeEarliest(t testing.TB, c pulsar.Client, topic, sub string) pulsar.Consumer {
	t.Helper()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cons.Close() })
	return cons
}

func newProducer(t testing.TB, c pulsar.Client, topic, name string) pulsar.Producer {
	t.Helper()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: name, SendTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// produce sends n messages "<name>:<i>" asynchronously and returns once
// all are acknowledged.
func produce(t testing.TB, p pulsar.Producer, name string, from, n int, opts func(*pulsar.ProducerMessage)) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := from; i < from+n; i++ {
		m := &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "%s:%d", name, i)}
		if opts != nil {
			opts(m)
		}
		wg.Add(1)
		p.SendAsync(context.Background(), m, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("send: %v", firstErr)
	}
}

// TestGeoReplicationActiveActive: two standalones sharing a ZooKeeper
// configuration store; producers in both clusters at the same time, a
// consumer in each sees every message once, in per-producer order, and
// nothing loops back. replicate_to narrows where a message goes, and a
// partitioned topic replicates partition by partition.
func TestGeoReplicationActiveActive(t *testing.T) {
	a, b := startGeoPair(t, "aa")
	// Both clusters see the registry and the namespace (shared store).
	for _, g := range []*geoCluster{a, b} {
		out := g.admin("GET", "/admin/v2/clusters", "", http.StatusOK)
		if string(out) != `["ca","cb"]`+"\n" && string(out) != `["ca","cb"]` {
			t.Fatalf("clusters on %s: %s", g.name, out)
		}
		g.admin("GET", "/admin/v2/namespaces/geo/aa/replication", "", http.StatusOK)
	}
	topic := "persistent://geo/aa/active"
	ca, cb := a.client(t), b.client(t)
	consA := subscribeEarliest(t, ca, topic, "s")
	consB := subscribeEarliest(t, cb, topic, "s")
	const n = 2000
	var wg sync.WaitGroup
	for _, side := range []struct {
		c    pulsar.Client
		name string
	}{{ca, "pa1"}, {ca, "pa2"}, {cb, "pb1"}, {cb, "pb2"}} {
		p := newProducer(t, side.c, topic, side.name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			produce(t, p, side.name, 0, n, nil)
		}()
	}
	// Selective replication: only ca, only cb, and local-only.
	pSel := newProducer(t, ca, topic, "psel")
	produce(t, pSel, "onlyA", 0, 1, func(m *pulsar.ProducerMessage) { m.ReplicationClusters = []string{"ca"} })
	produce(t, pSel, "toB", 0, 1, func(m *pulsar.ProducerMessage) { m.ReplicationClusters = []string{"cb"} })
	produce(t, pSel, "local", 0, 1, func(m *pulsar.ProducerMessage) { m.DisableReplication = true })
	wg.Wait()
	oa := consumeOrdered(t, consA, 60*time.Second, map[string]int{"pa1": n, "pa2": n, "pb1": n, "pb2": n, "onlyA": 1, "toB": 1, "local": 1})
	ob := consumeOrdered(t, consB, 60*time.Second, map[string]int{"pa1": n, "pa2": n, "pb1": n, "pb2": n, "toB": 1})
	if oa.dups != 0 || ob.dups != 0 {
		t.Fatalf("duplicates: ca %d, cb %d", oa.dups, ob.dups)
	}
	// Nothing more arrives: no message came back around.
	expectNothing(t, consA, time.Second)
	expectNothing(t, consB, 100*time.Millisecond)
	if ob.next["onlyA"] != 0 || ob.next["local"] != 0 {
		t.Fatalf("cb got messages not meant for it: %v", ob.next)
	}
	testenv.WaitFor(t, 10*time.Second, "replication stats", func() bool {
		ra, rb := a.replStats(topic)["cb"], b.replStats(topic)["ca"]
		return ra.Connected && rb.Connected && ra.ReplicationBacklog == 0 && rb.ReplicationBacklog == 0 &&
			ra.MsgOutCount == 2*n+1 && rb.MsgOutCount == 2*n && ra.MsgInCount == 2*n && rb.MsgInCount == 2*n+1
	})
	// The replicator cursor is not a subscription.
	if !slices.Contains(a.cursors(topic), "pulsar.repl.cb") {
		t.Fatalf("cursors on ca: %v", a.cursors(topic))
	}
	subs := a.admin("GET", "/admin/v2/persistent/geo/aa/active/subscriptions", "", http.StatusOK)
	if string(subs) != `["s"]`+"\n" && string(subs) != `["s"]` {
		t.Fatalf("subscriptions on ca: %s", subs)
	}

	// Partitioned topic: created in ca, its metadata is seen by cb; each
	// partition replicates on its own.
	a.admin("PUT", "/admin/v2/persistent/geo/aa/parted/partitions", "3", http.StatusNoContent)
	b.admin("GET", "/admin/v2/persistent/geo/aa/parted/partitions", "", http.StatusOK)
	pt := "persistent://geo/aa/parted"
	consP := subscribeEarliest(t, cb, pt, "s")
	pp, err := ca.CreateProducer(pulsar.ProducerOptions{Topic: pt, Name: "pp", SendTimeout: -1,
		MessageRouter: func(m *pulsar.ProducerMessage, _ pulsar.TopicMetadata) int {
			return int(m.Payload[len(m.Payload)-1]) % 3
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer pp.Close()
	produce(t, pp, "pp", 0, 300, nil)
	seen := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for len(seen) < 300 {
		m, err := consP.Receive(ctx)
		if err != nil {
			t.Fatalf("partitioned: %d of 300: %v", len(seen), err)
		}
		if seen[string(m.Payload())] {
			t.Fatalf("partitioned: duplicate %q", m.Payload())
		}
		seen[string(m.Payload())] = true
		consP.Ack(m)
	}
	for i := range 3 {
		part := fmt.Sprintf("%s-partition-%d", pt, i)
		if _, ok := a.replStats(part)["cb"]; !ok {
			t.Fatalf("no replicator on %s", part)
		}
	}
}

// TestGeoReplicationRemoteDown: cb is stopped while ca is under load;
// producing in ca goes on (local consumers unaffected), the replication
// backlog grows and the replicator reports disconnected; ca is restarted
// with no client; once cb is back everything arrives, once, in
// per-producer order.
func TestGeoReplicationRemoteDown(t *testing.T) {
	// Deduplication makes the replicator's resends after cb's stop
	// harmless (without it they may arrive twice).
	a, b := startGeoPair(t, "down", "--dedup")
	topic := "persistent://geo/down/t"
	ca := a.clientWithTimeout(t, 10*time.Second)
	consA := subscribeEarliest(t, ca, topic, "s")
	// Create cb's subscription while it runs.
	cbClient := b.clientWithTimeout(t, 10*time.Second)
	c0 := subscribeEarliest(t, cbClient, topic, "s")
	c0.Close()
	cbClient.Close()
	p := newProducer(t, ca, topic, "p")
	produce(t, p, "p", 0, 500, nil)
	testenv.WaitFor(t, 10*time.Second, "first batch replicated", func() bool {
		return a.replStats(topic)["cb"].ReplicationBacklog == 0 && a.replStats(topic)["cb"].MsgOutCount == 500
	})

	// Stop cb while ca is under load; local traffic keeps flowing.
	start := time.Now()
	var mu sync.Mutex
	var sendErr error
	var wg sync.WaitGroup
	wg.Add(3000)
	go func() {
		for i := 500; i < 3500; i++ {
			p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "p:%d", i)},
				func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
					if err != nil {
						mu.Lock()
						sendErr = err
						mu.Unlock()
					}
					wg.Done()
				})
			if i%50 == 0 {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}()
	testenv.WaitFor(t, 30*time.Second, "replication under way", func() bool { return a.replStats(topic)["cb"].MsgOutCount > 700 })
	b.stop()
	wg.Wait()
	if sendErr != nil {
		t.Fatal(sendErr)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("local produce took %v with the remote down", d)
	}
	o := consumeOrdered(t, consA, 30*time.Second, map[string]int{"p": 3500})
	if o.dups != 0 {
		t.Fatalf("local duplicates: %d", o.dups)
	}
	testenv.WaitFor(t, 10*time.Second, "disconnected with a backlog", func() bool {
		rs := a.replStats(topic)["cb"]
		// Backlog counts entries; the client batches messages.
		return !rs.Connected && rs.ReplicationBacklog > 0
	})

	// Restart ca with no client attached: it loads the replicated topic
	// by itself, and the unsent entries survived on the replicator's
	// cursor.
	p.Close()
	consA.Close()
	ca.Close()
	a.stop()
	a.start()
	b.start()
	consB := subscribeEarliest(t, b.client(t), topic, "s")
	ob := consumeOrdered(t, consB, 90*time.Second, map[string]int{"p": 3500})
	if ob.dups != 0 {
		t.Fatalf("remote duplicates: %d", ob.dups)
	}
	testenv.WaitFor(t, 10*time.Second, "backlog drained", func() bool {
		rs := a.replStats(topic)["cb"]
		return rs.Connected && rs.ReplicationBacklog == 0
	})
}

// TestGeoReplicationSourceKilled: ca is SIGKILLed while replicating and
// restarted on its data; with deduplication on in both clusters, every
// message acknowledged to the producer arrives in cb exactly once, in
// order.
func TestGeoReplicationSourceKilled(t *testing.T) {
	a, b := startGeoPair(t, "kill", "--dedup")
	topic := "persistent://geo/kill/t"
	consB := subscribeEarliest(t, b.client(t), topic, "s")
	ca := a.clientWithTimeout(t, 60*time.Second)
	p := newProducer(t, ca, topic, "pk")
	const n = 6000
	var acked sync.WaitGroup
	var mu sync.Mutex
	var failed []int
	acked.Add(n)
	go func() {
		for i := range n {
			m := &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "pk:%d", i)}
			p.SendAsync(context.Background(), m, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err != nil {
					mu.Lock()
					failed = append(failed, i)
					mu.Unlock()
				}
				acked.Done()
			})
			if i%50 == 0 {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}()
	// Kill ca once replication is under way.
	testenv.WaitFor(t, 30*time.Second, "replication under way", func() bool { return a.replStats(topic)["cb"].MsgOutCount > 500 })
	a.kill()
	a.start()
	acked.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d sends failed (first %d); the producer should have re-sent them", len(failed), failed[0])
	}
	o := consumeOrdered(t, consB, 90*time.Second, map[string]int{"pk": n})
	expectNothing(t, consB, time.Second)
	if o.dups != 0 {
		t.Fatalf("cb received %d duplicates", o.dups)
	}
}

// TestGeoReplicationRemoveCluster: taking cb out of the namespace's
// replication clusters stops ca's replicator and deletes its cursor;
// later messages stay in ca. A topic-level override narrows it as well.
func TestGeoReplicationRemoveCluster(t *testing.T) {
	a, b := startGeoPair(t, "rm")
	topic := "persistent://geo/rm/t"
	ca := a.client(t)
	consB := subscribeEarliest(t, b.client(t), topic, "s")
	p := newProducer(t, ca, topic, "p")
	produce(t, p, "p", 0, 100, nil)
	consumeOrdered(t, consB, 30*time.Second, map[string]int{"p": 100})

	a.admin("POST", "/admin/v2/namespaces/geo/rm/replication", `["ca"]`, http.StatusNoContent)
	// (cb's own replicator may still publish here until cb re-reads the
	// policies, so stats may keep an inbound entry for cb.)
	testenv.WaitFor(t, 5*time.Second, "replicator removed", func() bool {
		rs := a.replStats(topic)["cb"]
		return !rs.Connected && rs.OutboundConnection == "" && !slices.Contains(a.cursors(topic), "pulsar.repl.cb")
	})
	// cb sees the change through its watch on the shared store (well
	// before its 10 s policy refresh) and removes its replicator too.
	testenv.WaitFor(t, 5*time.Second, "cb's replicator removed", func() bool {
		rs := b.replStats(topic)["ca"]
		return !rs.Connected && rs.OutboundConnection == "" && !slices.Contains(b.cursors(topic), "pulsar.repl.ca")
	})
	produce(t, p, "p", 100, 100, nil)
	expectNothing(t, consB, 2*time.Second)
	// Back on: a fresh cursor starts at the end, so only new messages go.
	a.admin("POST", "/admin/v2/namespaces/geo/rm/replication", `["ca","cb"]`, http.StatusNoContent)
	testenv.WaitFor(t, 5*time.Second, "replicator back", func() bool { return a.replStats(topic)["cb"].Connected })
	produce(t, p, "q", 0, 10, nil)
	o := consumeOrdered(t, consB, 30*time.Second, map[string]int{"q": 10})
	if o.next["p"] != 0 {
		t.Fatalf("messages sent while cb was removed were replicated: %v", o.next)
	}
	// Topic-level override: this topic only in ca.
	a.admin("POST", "/admin/v2/persistent/geo/rm/t/replication", `["ca"]`, http.StatusNoContent)
	testenv.WaitFor(t, 5*time.Second, "override applied", func() bool {
		return !a.replStats(topic)["cb"].Connected && !slices.Contains(a.cursors(topic), "pulsar.repl.cb")
	})
	produce(t, p, "r", 0, 10, nil)
	expectNothing(t, consB, 2*time.Second)
}

// TestGeoAdminCLI: `magnetar admin clusters ...`, `namespaces
// set-clusters|get-clusters` and the topic replication commands against
// two clusters sharing a configuration store.
func TestGeoAdminCLI(t *testing.T) {
	a, b := startGeoPair(t, "cli")
	if out := runAdmin(t, b.proc, false, "clusters", "list"); !strings.Contains(out, "ca") || !strings.Contains(out, "cb") {
		t.Fatalf("clusters list on cb: %s", out)
	}
	runAdmin(t, a.proc, false, "clusters", "create", "cc", "--url", "http://cc.example:8080", "--broker-url", "pulsar://cc.example:6650")
	if out := runAdmin(t, b.proc, false, "clusters", "get", "cc"); !strings.Contains(out, "pulsar://cc.example:6650") {
		t.Fatalf("clusters get cc on cb: %s", out)
	}
	if out := runAdmin(t, a.proc, true, "clusters", "create", "cx", "--broker-url", "http://wrong:1"); !strings.Contains(out, "illegal") {
		t.Fatalf("bad URL: %s", out)
	}
	runAdmin(t, a.proc, false, "tenants", "update", "geo", "--allowed-clusters", "ca,cb,cc")
	runAdmin(t, a.proc, false, "namespaces", "set-clusters", "geo/cli", "--clusters", "ca,cc")
	if out := runAdmin(t, b.proc, false, "namespaces", "get-clusters", "geo/cli"); !strings.Contains(out, "cc") || strings.Contains(out, "cb") {
		t.Fatalf("get-clusters on cb: %s", out)
	}
	if out := runAdmin(t, a.proc, true, "namespaces", "set-clusters", "geo/cli", "--clusters", "ca,nope"); !strings.Contains(out, "Invalid cluster id") {
		t.Fatalf("unknown cluster: %s", out)
	}
	if out := runAdmin(t, a.proc, true, "clusters", "delete", "cc"); !strings.Contains(out, "replicates") {
		t.Fatalf("delete in-use cluster: %s", out)
	}
	runAdmin(t, a.proc, false, "topics", "set-replication-clusters", "persistent://geo/cli/t", "--clusters", "ca")
	if out := runAdmin(t, a.proc, false, "topics", "get-replication-clusters", "persistent://geo/cli/t"); !strings.Contains(out, "ca") || strings.Contains(out, "cc") {
		t.Fatalf("topic override: %s", out)
	}
	runAdmin(t, a.proc, false, "topics", "remove-replication-clusters", "persistent://geo/cli/t")
	if out := runAdmin(t, a.proc, false, "topics", "get-replication-clusters", "--applied", "persistent://geo/cli/t"); !strings.Contains(out, "cc") {
		t.Fatalf("applied after removal: %s", out)
	}
	runAdmin(t, a.proc, false, "namespaces", "set-clusters", "geo/cli", "--clusters", "ca,cb")
	runAdmin(t, a.proc, false, "clusters", "delete", "cc")
	if out := runAdmin(t, a.proc, false, "clusters", "list"); strings.Contains(out, "cc") {
		t.Fatalf("cc still listed: %s", out)
	}
}

// TestGeoReplicatedSubscription: a replicated subscription consumed and
// acknowledged in ca; a consumer that fails over to cb starts after the
// acknowledged point (within one snapshot interval: here exactly after
// it, since ca acked everything before the snapshot).
func TestGeoReplicatedSubscription(t *testing.T) {
	a, b := startGeoPair(t, "rsub")
	topic := "persistent://geo/rsub/t"
	ca := a.client(t)
	consA, err := ca.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "rs", ReplicateSubscriptionState: true,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ca.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "p", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce(t, p, "first", 0, 500, nil)
	consumeOrdered(t, consA, 30*time.Second, map[string]int{"first": 500})
	testenv.WaitFor(t, 15*time.Second, "subscription position carried to cb", func() bool {
		code, _, out := httpDo(t, "GET", b.http+"/admin/v2/persistent/geo/rsub/t/stats", "", true)
		if code != http.StatusOK {
			return false
		}
		var st struct {
			Subscriptions map[string]struct {
				MsgBacklog int64 `json:"msgBacklog"`
			} `json:"subscriptions"`
		}
		if json.Unmarshal(out, &st) != nil {
			return false
		}
		// What is left are a few markers (and at most what ca acked
		// after the last snapshot).
		ss, ok := st.Subscriptions["rs"]
		return ok && ss.MsgBacklog <= 10
	})
	consA.Close()
	produce(t, p, "second", 0, 200, nil)
	consB, err := b.client(t).Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "rs", ReplicateSubscriptionState: true})
	if err != nil {
		t.Fatal(err)
	}
	defer consB.Close()
	// cb starts after ca's acknowledged point, give or take the messages
	// acked after the last snapshot (Pulsar's bound): at most the 10 the
	// wait above left, and none before them.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	second, firsts := 0, 0
	for second < 200 {
		m, err := consB.Receive(ctx)
		if err != nil {
			t.Fatalf("cb: %d of 200: %v", second, err)
		}
		var seq int
		switch pl := string(m.Payload()); {
		case strings.HasPrefix(pl, "second:"):
			fmt.Sscanf(pl[len("second:"):], "%d", &seq)
			if seq != second {
				t.Fatalf("cb: got %s, want second:%d", pl, second)
			}
			second++
		default:
			fmt.Sscanf(pl[len("first:"):], "%d", &seq)
			if seq < 490 {
				t.Fatalf("cb re-delivered %s, long before the point ca acknowledged", pl)
			}
			firsts++
		}
		consB.Ack(m)
	}
	t.Logf("cb re-delivered %d of the 500 messages ca acknowledged", firsts)
	expectNothing(t, consB, time.Second)
}
