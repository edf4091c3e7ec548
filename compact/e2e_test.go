package compact

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/topicreg"
)

func waitCompacted(t *testing.T, b *testBroker, topic string) {
	t.Helper()
	waitUntil(t, "compaction of "+topic+" done", func() bool {
		st, lastErr, err := b.CompactionStatus(context.Background(), topic)
		if err != nil || st == Error {
			t.Fatalf("compaction status %s %s %v", st, lastErr, err)
		}
		return st == Success
	})
}

// readAll reads with a reader until nothing arrives for a while, as
// key -> value (in order), returning also the message count.
func readAll(t *testing.T, cl pulsar.Client, topic string, compacted bool) (map[string]string, []string) {
	t.Helper()
	r, err := cl.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID(), ReadCompacted: compacted})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	kv := map[string]string{}
	var seq []string
	for r.HasNext() {
		m, err := r.Next(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		seq = append(seq, m.Key()+"="+string(m.Payload()))
		if m.Key() == "" {
			continue
		}
		if len(m.Payload()) == 0 {
			delete(kv, m.Key())
		} else {
			kv[m.Key()] = string(m.Payload())
		}
	}
	return kv, seq
}

// produceRounds sends rounds × keys keyed messages (batched), deletes
// key k3 with a tombstone and sends one message without a key.
func produceRounds(t *testing.T, cl pulsar.Client, topic string, rounds, keys int) map[string]string {
	t.Helper()
	return produceRoundsWith(t, cl, pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 7, BatchingMaxPublishDelay: 20 * time.Millisecond}, rounds, keys)
}

// produceRoundsWith is produceRounds with the producer's options.
func produceRoundsWith(t *testing.T, cl pulsar.Client, po pulsar.ProducerOptions, rounds, keys int) map[string]string {
	t.Helper()
	p := mustProducer(t, cl, po)
	defer p.Close()
	want := map[string]string{}
	var wg sync.WaitGroup
	send := func(m *pulsar.ProducerMessage) {
		wg.Add(1)
		p.SendAsync(context.Background(), m, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				t.Error(err)
			}
			wg.Done()
		})
	}
	for r := 0; r < rounds; r++ {
		for k := 0; k < keys; k++ {
			key, val := fmt.Sprintf("k%d", k), fmt.Sprintf("v%d-%d", k, r)
			send(&pulsar.ProducerMessage{Key: key, Payload: []byte(val)})
			want[key] = val
		}
	}
	send(&pulsar.ProducerMessage{Key: "k3"}) // tombstone
	delete(want, "k3")
	send(&pulsar.ProducerMessage{Payload: []byte("no key")})
	wg.Wait()
	if err := p.FlushWithCtx(context.Background()); err != nil {
		t.Fatal(err)
	}
	return want
}

// TestE2ECompaction: latest value per key, tombstones delete, messages
// without a key are dropped; read_compacted readers get the compacted
// view then the live tail; plain readers still get everything; a second
// compaction builds on the first; TableView sees the table.
func TestE2ECompaction(t *testing.T) {
	tb := startBroker(t, Config{})
	cl := tb.client(t)
	topic := newTopicName("compact")
	const rounds, keys = 5, 10
	want := produceRounds(t, cl, topic, rounds, keys)
	if err := tb.Compact(ctxT(t), topic); err != nil {
		t.Fatal(err)
	}
	waitCompacted(t, tb, topic)

	kv, seq := readAll(t, cl, topic, true)
	if !reflect.DeepEqual(kv, want) || len(seq) != len(want) {
		t.Fatalf("compacted read: %d messages %v, want %v", len(seq), seq, want)
	}
	if _, all := readAll(t, cl, topic, false); len(all) != rounds*keys+2 {
		t.Fatalf("plain read: %d messages, want %d", len(all), rounds*keys+2)
	}
	// The live tail follows the compacted view.
	p := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	for _, kvp := range [][2]string{{"k0", "new0"}, {"k3", "back"}} {
		if _, err := p.Send(ctxT(t), &pulsar.ProducerMessage{Key: kvp[0], Payload: []byte(kvp[1])}); err != nil {
			t.Fatal(err)
		}
		want[kvp[0]] = kvp[1]
	}
	kv, seq = readAll(t, cl, topic, true)
	if !reflect.DeepEqual(kv, want) || len(seq) != len(want)-1+2 {
		t.Fatalf("compacted + tail: %v (%d), want %v", kv, len(seq), want)
	}
	// A second compaction folds the tail in.
	if err := tb.Compact(ctxT(t), topic); err != nil {
		t.Fatal(err)
	}
	waitCompacted(t, tb, topic)
	kv, seq = readAll(t, cl, topic, true)
	if !reflect.DeepEqual(kv, want) || len(seq) != len(want) {
		t.Fatalf("after the second compaction: %v (%d), want %v", kv, len(seq), want)
	}
	// __compaction shows as a subscription, as in Pulsar.
	st, err := tb.Admin().Reads.TopicStats(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Subscriptions[compactionSub]; !ok {
		t.Fatal("no __compaction subscription in stats")
	}

	tv, err := cl.CreateTableView(pulsar.TableViewOptions{Topic: topic, Schema: pulsar.NewStringSchema(nil), SchemaValueType: reflect.TypeOf((*string)(nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer tv.Close()
	if tv.Size() != len(want) {
		t.Fatalf("table view size %d, want %d", tv.Size(), len(want))
	}
	tvGet := func(k string) string {
		if p, ok := tv.Get(k).(*string); ok && p != nil {
			return *p
		}
		return "<none>"
	}
	for k, v := range want {
		if got := tvGet(k); got != v {
			t.Fatalf("table view %s = %v, want %s", k, got, v)
		}
	}
	if _, err := p.Send(ctxT(t), &pulsar.ProducerMessage{Key: "k1", Payload: []byte("live")}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "table view sees the live update", func() bool { return tvGet("k1") == "live" })

	// A durable read_compacted subscription survives a restart.
	c := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "rc", ReadCompacted: true, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	first := receiveN(t, c, 3)
	for _, m := range first {
		c.Ack(m)
	}
	c.Close()
	if _, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sh", Type: pulsar.Shared, ReadCompacted: true}); err == nil {
		t.Fatal("read_compacted on a Shared subscription accepted")
	}
}

// TestE2ECompactionThreshold: the namespace compaction_threshold starts
// compaction on its own.
func TestE2ECompactionThreshold(t *testing.T) {
	tb := startBroker(t, Config{MonitorInterval: 50 * time.Millisecond})
	cl := tb.client(t)
	topic := newTopicName("threshold")
	want := produceRounds(t, cl, topic, 3, 5)
	if err := tb.Policies().Update(ctxT(t), "public/default", func(p *policy.Policies) error {
		n := int64(100)
		p.CompactionThreshold = &n
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	waitCompacted(t, tb, topic)
	if kv, seq := readAll(t, cl, topic, true); !reflect.DeepEqual(kv, want) || len(seq) != len(want) {
		t.Fatalf("threshold compaction: %v, want %v", seq, want)
	}
}

// TestE2ECompactionCrash: a broker dies in the middle of writing a
// compacted ledger (its store is taken over by a new broker, as after a
// crash). Readers keep the previous compacted view, the next compaction
// deletes the half-written ledger and succeeds, and the dead broker's
// compaction can no longer commit.
func TestE2ECompactionCrash(t *testing.T) {
	// Both brokers share one metadata store and one ledger store, as a
	// broker taking over a crashed one's topics does.
	meta, err := embedded.Open(filepath.Join(t.TempDir(), "meta"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ledgers := memstore.New()
	// It "crashes": closed last (after the broker that takes over), errors
	// expected.
	tb := startCompacting(t, brokertest.Options{Meta: meta, Ledgers: ledgers, CloseErrorsOK: true}, Config{})
	t.Cleanup(func() { meta.Close() })
	cl := tb.client(t)
	topic := newTopicName("crash")
	want := produceRounds(t, cl, topic, 3, 10)
	if err := tb.Compact(ctxT(t), topic); err != nil {
		t.Fatal(err)
	}
	waitCompacted(t, tb, topic)
	first := want
	// New data, then a compaction that stops half-way.
	want = produceRounds(t, cl, topic, 2, 20)
	cl.Close()
	reached, release := make(chan struct{}), make(chan struct{})
	var hooked atomic.Bool
	compactHookForTest = func(string) {
		if hooked.CompareAndSwap(false, true) {
			close(reached)
			<-release
		}
	}
	defer func() { compactHookForTest = nil }()
	if err := tb.Compact(ctxT(t), topic); err != nil {
		t.Fatal(err)
	}
	<-reached
	// A crashed broker writes nothing after the crash. This one lives on:
	// let its pending cursor state (persisted on a 100 ms tick, late under
	// -race) land before the takeover, not after it, where it would fence
	// the new owner's cursor.
	for _, c := range tb.Ledger(t, topic).Cursors() {
		if err := c.Flush(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}

	// "Crash": a second broker opens the same stores; the first is
	// never closed cleanly (its managed ledger is fenced).
	tb2 := startCompacting(t, brokertest.Options{Meta: meta, Ledgers: ledgers}, Config{})
	cl2 := tb2.client(t)
	st, _ := tb2.Ledger(t, topic).CompactionState()
	if st.Pending < 0 || !ledgers.Exists(st.Pending) {
		t.Fatalf("no half-written compacted ledger recorded after the crash: %+v", st)
	}
	half := st.Pending
	// The previous compacted view, then the tail: the table is right.
	kv, seq := readAll(t, cl2, topic, true)
	merged := map[string]string{}
	for k, v := range first {
		merged[k] = v
	}
	for k, v := range want {
		merged[k] = v
	}
	delete(merged, "k3")
	if !reflect.DeepEqual(kv, merged) || len(seq) != len(first)+2*20+2 {
		t.Fatalf("read after the crash: %d messages, table %v; want %v", len(seq), kv, merged)
	}
	if err := tb2.Compact(ctxT(t), topic); err != nil {
		t.Fatal(err)
	}
	waitCompacted(t, tb2, topic)
	if ledgers.Exists(half) {
		t.Fatalf("half-written compacted ledger %d not deleted", half)
	}
	if kv, seq := readAll(t, cl2, topic, true); !reflect.DeepEqual(kv, merged) || len(seq) != len(merged) {
		t.Fatalf("after recompaction: %v, want %v", seq, merged)
	}
	// The dead broker's compaction resumes and must fail to commit.
	close(release)
	waitUntil(t, "the stale compaction ends", func() bool {
		s, _, _ := tb.CompactionStatus(ctxT(t), topic)
		return s != Running
	})
	if s, e, _ := tb.CompactionStatus(ctxT(t), topic); s != Error {
		t.Fatalf("stale compaction: %s %s, want ERROR", s, e)
	}
	if kv, _ := readAll(t, cl2, topic, true); !reflect.DeepEqual(kv, merged) {
		t.Fatalf("after the stale compaction: %v", kv)
	}
}

// TestE2ECompactionPartitioned: compaction of a partitioned topic
// compacts every partition; a TableView over it sees the table.
func TestE2ECompactionPartitioned(t *testing.T) {
	tb := startBroker(t, Config{})
	cl := tb.client(t)
	topic := newTopicName("parted")
	if err := tb.Admin().Topics.CreatePartitionedTopic(ctxT(t), topic, topicreg.PartitionedMetadata{Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	want := produceRounds(t, cl, topic, 4, 12)
	if err := tb.Compact(ctxT(t), topic); err != nil {
		t.Fatal(err)
	}
	waitCompacted(t, tb, topic)
	for i := 0; i < 3; i++ {
		if st, _, _ := tb.CompactionStatus(ctxT(t), fmt.Sprintf("%s-partition-%d", topic, i)); st != Success {
			t.Fatalf("partition %d: %s", i, st)
		}
	}
	tv, err := cl.CreateTableView(pulsar.TableViewOptions{Topic: topic, Schema: pulsar.NewStringSchema(nil), SchemaValueType: reflect.TypeOf((*string)(nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer tv.Close()
	got := map[string]string{}
	for _, k := range tv.Keys() {
		got[k] = *tv.Get(k).(*string)
	}
	delete(got, "")
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("table view %v, want %v", got, want)
	}
}

// TestE2ECompactionCursorNotExpired: message TTL leaves the
// __compaction cursor alone (its data is not yet compacted): the
// compactor declares it a system subscription (the core's
// TestSystemSubscriptionsKept tests the rule itself).
func TestE2ECompactionCursorNotExpired(t *testing.T) {
	tb := startBroker(t, Config{})
	cl := tb.client(t)
	topic := newTopicName("ttlcompact")
	produceRounds(t, cl, topic, 1, 3)
	if err := tb.Compact(ctxT(t), topic); err != nil {
		t.Fatal(err)
	}
	waitCompacted(t, tb, topic)
	produceRounds(t, cl, topic, 1, 3) // after the horizon
	if got := tb.x.SystemSubscriptions(); len(got) != 1 || got[0] != compactionSub {
		t.Fatalf("system subscriptions %v", got)
	}
	backlog := func() int64 {
		st, err := tb.Admin().Reads.TopicStats(ctxT(t), topic)
		if err != nil {
			t.Fatal(err)
		}
		return st.Subscriptions[compactionSub].MsgBacklog
	}
	before := backlog()
	if err := tb.Admin().Subscriptions.ExpireMessages(ctxT(t), topic, compactionSub, 0); err != nil && !errors.Is(err, broker.ErrNotAllowed) {
		t.Fatal(err)
	}
	if after := backlog(); before == 0 || after != before {
		t.Fatalf("__compaction backlog %d -> %d after expiry, want it kept", before, after)
	}
}

// TestE2ECompactionThresholdTopicLevel: a topic's compactionThreshold
// starts compaction on its own, where its namespace sets none, and a
// topic's 0 turns the namespace's off.
func TestE2ECompactionThresholdTopicLevel(t *testing.T) {
	tb := startBroker(t, Config{MonitorInterval: 50 * time.Millisecond})
	cl := tb.client(t)
	topic := newTopicName("tthreshold")
	other := newTopicName("tthreshold-off")
	want := produceRounds(t, cl, topic, 3, 5)
	produceRounds(t, cl, other, 3, 5)
	setTopic := func(name string, n int64) {
		key, err := policy.TopicKeyOf(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := tb.Policies().UpdateTopic(ctxT(t), key, func(tp *policy.TopicPolicies) error {
			tp.CompactionThreshold = &n
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	setTopic(other, 0)
	setTopic(topic, 100)
	waitCompacted(t, tb, topic)
	if kv, seq := readAll(t, cl, topic, true); !reflect.DeepEqual(kv, want) || len(seq) != len(want) {
		t.Fatalf("topic-level threshold compaction: %v, want %v", seq, want)
	}
	// The namespace's threshold now applies to other topics, not to the
	// one whose own threshold is 0.
	if err := tb.Policies().Update(ctxT(t), "public/default", func(p *policy.Policies) error {
		n := int64(100)
		p.CompactionThreshold = &n
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	third := newTopicName("tthreshold-ns")
	produceRounds(t, cl, third, 3, 5)
	waitCompacted(t, tb, third)
	// The monitor ran past both topics; "other" was never started.
	if st, _, err := tb.CompactionStatus(ctxT(t), other); err != nil || st != NotRun {
		t.Fatalf("compaction of a topic whose own threshold is 0: %v %v", st, err)
	}
}
