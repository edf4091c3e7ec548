package georep

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/policy"
)

// TestReplicationActiveActiveInProcess: messages produced in either
// cluster arrive once in the other, in order, and nothing loops back.
func TestReplicationActiveActiveInProcess(t *testing.T) {
	config := newConfigStore(t)
	a := startGeo(t, "ca", config, geoOptions{})
	b := startGeo(t, "cb", config, geoOptions{})
	geoNamespace(t, a, "aa", "ca", "cb")
	topic := geoTopic("aa")
	ca, cb := a.Client(t), b.Client(t)
	subA, err := ca.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	subB, err := cb.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	pa, err := ca.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "pa"})
	if err != nil {
		t.Fatal(err)
	}
	pb, err := cb.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "pb"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := range n {
		pa.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "a-%d", i)}, nil)
		pb.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "b-%d", i)}, nil)
	}
	// Only to ca: stays out of cb.
	pa.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte("a-local"), ReplicationClusters: []string{"ca"}}, nil)
	if err := pa.FlushWithCtx(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := pb.FlushWithCtx(context.Background()); err != nil {
		t.Fatal(err)
	}
	check := func(c pulsar.Consumer, total int, wantLocal bool) {
		t.Helper()
		next := map[byte]int{}
		local := false
		for range total {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			m, err := c.Receive(ctx)
			cancel()
			if err != nil {
				t.Fatalf("received %v: %v", next, err)
			}
			p := string(m.Payload())
			if p == "a-local" {
				local = true
				c.Ack(m)
				continue
			}
			var want int
			if _, err := fmt.Sscanf(p[2:], "%d", &want); err != nil || want != next[p[0]] {
				t.Fatalf("got %q, want %c-%d", p, p[0], next[p[0]])
			}
			next[p[0]]++
			c.Ack(m)
		}
		if local != wantLocal {
			t.Fatalf("a-local received = %v", local)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		if m, err := c.Receive(ctx); err == nil {
			t.Fatalf("extra message %q (looping?)", m.Payload())
		}
	}
	check(subA, 2*n+1, true)
	check(subB, 2*n, false)
	brokertest.WaitFor(t, "replication stats", func() bool {
		st, err := a.Admin().Reads.TopicStats(context.Background(), topic)
		if err != nil {
			return false
		}
		rs, ok := st.Replication["cb"]
		return ok && rs.Connected && rs.ReplicationBacklog == 0 && rs.MsgOutCount == n && rs.MsgInCount == n && st.MsgInCounter == 2*n+1
	})
	resp, err := http.Get("http://" + a.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{"pulsar_replication_backlog", "pulsar_replication_connected_count", "pulsar_replication_rate_out"} {
		if !strings.Contains(string(body), m+`{cluster="ca",namespace="geo/aa",remote_cluster="cb",topic="`+topic+`"}`) {
			t.Fatalf("metric %s missing from /metrics", m)
		}
	}
}

// TestReplicatedSubscriptionInProcess: a replicated subscription acked in
// ca is carried to cb through snapshot markers; a consumer of the same
// subscription in cb starts after the acked point and never sees a
// marker.
func TestReplicatedSubscriptionInProcess(t *testing.T) {
	config := newConfigStore(t)
	a := startGeo(t, "ca", config, geoOptions{})
	b := startGeo(t, "cb", config, geoOptions{})
	geoNamespace(t, a, "rs", "ca", "cb")
	topic := geoTopic("rs")
	ca, cb := a.Client(t), b.Client(t)
	consA, err := ca.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "rs", ReplicateSubscriptionState: true,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ca.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "p", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	send := func(prefix string, n int) {
		for i := range n {
			if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "%s-%d", prefix, i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	send("first", 50)
	for range 50 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		m, err := consA.Receive(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if err := consA.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	// The acked position reaches cb: its copy of the subscription is
	// created there past the first batch.
	brokertest.WaitFor(t, "subscription carried to cb", func() bool {
		st, err := b.Admin().Reads.TopicStats(context.Background(), topic)
		if err != nil {
			return false
		}
		// Later markers may count as backlog; the first batch must not.
		ss, ok := st.Subscriptions["rs"]
		return ok && ss.MsgBacklog < 50
	})
	send("second", 20)
	consB, err := cb.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "rs", ReplicateSubscriptionState: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		m, err := consB.Receive(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("second-%d", i); string(m.Payload()) != want {
			t.Fatalf("cb got %q, want %q (it should start after what ca acked)", m.Payload(), want)
		}
		consB.Ack(m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if m, err := consB.Receive(ctx); err == nil {
		t.Fatalf("extra message in cb: %q", m.Payload())
	}
}

// TestReplicationRetentionKeepsUnsent: with retention 0 and small
// ledgers, entries every local subscription consumed stay stored while
// the remote is down (the replicator's cursor holds them), and all of
// them reach the remote once it starts.
func TestReplicationRetentionKeepsUnsent(t *testing.T) {
	config := newConfigStore(t)
	addrB, releaseB := holdPort(t)
	a := startGeo(t, "ca", config, geoOptions{ledger: mledger.Config{MaxEntriesPerLedger: 10, MinLedgerRolloverTime: -1, TrimInterval: -1}})
	ctx := context.Background()
	if err := a.Policies().CreateCluster(ctx, "cb", policy.ClusterData{BrokerServiceURL: "pulsar://" + addrB}); err != nil {
		t.Fatal(err)
	}
	geoNamespace(t, a, "ret", "ca", "cb")
	topic := geoTopic("ret")
	ca := a.Client(t)
	cons, err := ca.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ca.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	for i := range n {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "m-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		m, err := cons.Receive(rctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		cons.Ack(m)
	}
	brokertest.WaitFor(t, "local subscription caught up, replicator backlog kept", func() bool {
		st, err := a.Admin().Reads.TopicStats(ctx, topic)
		if err != nil {
			return false
		}
		rs := st.Replication["cb"]
		return st.Subscriptions["s"].MsgBacklog == 0 && rs.ReplicationBacklog == n && !rs.Connected
	})
	// Trim now (not waiting for the background loop): the subscription
	// consumed everything, only the replicator's cursor holds the data.
	ml := managed(t, a, topic)
	if err := ml.Cursor("s").Flush(ctx); err != nil { // persist the subscription's acks
		t.Fatal(err)
	}
	if md := ml.Cursor("s").MarkDeletePosition(); md.EntryID < 0 || md.LedgerID == 0 {
		t.Fatalf("subscription mark-delete %v", md)
	}
	if err := ml.Trim(ctx); err != nil {
		t.Fatal(err)
	}
	is, err := a.Admin().Reads.InternalStats(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(is.Ledgers) < 2 || is.NumberOfEntries < n {
		t.Fatalf("ledgers %d, entries %d: want several ledgers still holding all %d entries", len(is.Ledgers), is.NumberOfEntries, n)
	}
	releaseB()
	b := startGeo(t, "cb", config, geoOptions{mut: func(c *brokerconf.Config) { c.ServiceAddr = addrB }})
	consB, err := b.Client(t).Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		m, err := consB.Receive(rctx)
		cancel()
		if err != nil {
			t.Fatalf("cb: %d of %d: %v", i, n, err)
		}
		if want := fmt.Sprintf("m-%d", i); string(m.Payload()) != want {
			t.Fatalf("cb got %q, want %q", m.Payload(), want)
		}
		consB.Ack(m)
	}
	brokertest.WaitFor(t, "replication backlog drained", func() bool {
		st, err := a.Admin().Reads.TopicStats(ctx, topic)
		return err == nil && st.Replication["cb"].ReplicationBacklog == 0
	})
	// Control: once sent, the same trim deletes the consumed ledgers.
	brokertest.WaitFor(t, "consumed ledgers trimmed", func() bool {
		if err := managed(t, a, topic).Trim(ctx); err != nil {
			return false
		}
		is, err := a.Admin().Reads.InternalStats(ctx, topic)
		return err == nil && is.NumberOfEntries < n
	})
}

// TestReplicationMessageTTL: entries older than the topic's message TTL
// when the replicator reaches them are not sent, and are counted as
// expired.
func TestReplicationMessageTTL(t *testing.T) {
	config := newConfigStore(t)
	addrB, releaseB := holdPort(t)
	a := startGeo(t, "ca", config, geoOptions{})
	ctx := context.Background()
	if err := a.Policies().CreateCluster(ctx, "cb", policy.ClusterData{BrokerServiceURL: "pulsar://" + addrB}); err != nil {
		t.Fatal(err)
	}
	geoNamespace(t, a, "ttl", "ca", "cb")
	if err := a.Policies().Update(ctx, "geo/ttl", func(p *policy.Policies) error {
		ttl := 1
		p.MessageTTLInSeconds = &ttl
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	topic := geoTopic("ttl")
	p, err := a.Client(t).CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "old-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// The TTL is a matter of time: let the first messages age past it.
	time.Sleep(1100 * time.Millisecond)
	for i := range 5 {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "new-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	releaseB()
	b := startGeo(t, "cb", config, geoOptions{mut: func(c *brokerconf.Config) { c.ServiceAddr = addrB }})
	cons, err := b.Client(t).Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		m, err := cons.Receive(rctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("new-%d", i); string(m.Payload()) != want {
			t.Fatalf("cb got %q, want %q", m.Payload(), want)
		}
		cons.Ack(m)
	}
	brokertest.WaitFor(t, "expired counted", func() bool {
		st, err := a.Admin().Reads.TopicStats(ctx, topic)
		rs := st.Replication["cb"]
		return err == nil && rs.MsgExpiredCount == 10 && rs.MsgOutCount == 5 && rs.ReplicationBacklog == 0
	})
}
