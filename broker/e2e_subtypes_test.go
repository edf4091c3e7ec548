package broker

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/magnetar-mq/magnetar/broker/snap"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/topicreg"
)

func mustProducer(t testing.TB, cl pulsar.Client, o pulsar.ProducerOptions) pulsar.Producer {
	t.Helper()
	p, err := cl.CreateProducer(o)
	if err != nil {
		t.Fatalf("create producer: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

func mustConsumer(t testing.TB, cl pulsar.Client, o pulsar.ConsumerOptions) pulsar.Consumer {
	t.Helper()
	c, err := cl.Subscribe(o)
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// sendAsyncAll sends n messages asynchronously and waits for every
// receipt.
func sendAsyncAll(t testing.TB, p pulsar.Producer, n int, mk func(i int) *pulsar.ProducerMessage) []pulsar.MessageID {
	t.Helper()
	ids := make([]pulsar.MessageID, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := 0; i < n; i++ {
		wg.Add(1)
		p.SendAsync(ctxT(t), mk(i), func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			mu.Lock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			ids[i] = id
			mu.Unlock()
			wg.Done()
		})
	}
	if err := p.FlushWithCtx(context.Background()); err != nil {
		t.Fatalf("flush: %v", err)
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("send: %v", firstErr)
	}
	return ids
}

func payloadMsg(i int) *pulsar.ProducerMessage {
	return &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("m-%d", i))}
}

func TestE2EBatchingCompression(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	for _, ct := range []pulsar.CompressionType{pulsar.NoCompression, pulsar.LZ4, pulsar.ZLib, pulsar.ZSTD, pulsar.SNAPPY} {
		t.Run(fmt.Sprint(ct), func(t *testing.T) {
			topic := newTopicName("batch")
			cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
			prod := mustProducer(t, cl, pulsar.ProducerOptions{
				Topic: topic, CompressionType: ct,
				// Batches close at 10 messages (or at sendAsyncAll's
				// Flush), never on a timer: with a short delay a
				// scheduling gap on a loaded machine sent message 0 alone.
				BatchingMaxMessages: 10, BatchingMaxPublishDelay: time.Minute,
			})
			const n = 50
			ids := sendAsyncAll(t, prod, n, payloadMsg)
			msgs := receiveN(t, cons, n)
			for i, m := range msgs {
				if got, want := string(m.Payload()), fmt.Sprintf("m-%d", i); got != want {
					t.Fatalf("message %d = %q, want %q", i, got, want)
				}
				if !idEqual(m.ID(), ids[i]) {
					t.Fatalf("message %d id %v, receipt %v", i, m.ID(), ids[i])
				}
				cons.Ack(m)
			}
			if ids[0].BatchSize() <= 1 {
				t.Fatalf("first message batch size %d: batching did not happen", ids[0].BatchSize())
			}
		})
	}
}

func idEqual(a, b pulsar.MessageID) bool {
	return a.LedgerID() == b.LedgerID() && a.EntryID() == b.EntryID() && a.BatchIdx() == b.BatchIdx()
}

func TestE2ESharedSeveralConsumers(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("shared")
	var cs []pulsar.Consumer
	for i := 0; i < 3; i++ {
		cs = append(cs, mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared, ReceiverQueueSize: 5}))
	}
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	const n = 60
	sendAsyncAll(t, prod, n, payloadMsg)
	counts := make([]int, len(cs))
	seen := map[string]bool{}
	receiveAcross(t, cs, n, func(i int, m pulsar.Message) {
		counts[i]++
		seen[string(m.Payload())] = true
	})
	if len(seen) != n {
		t.Fatalf("received %d distinct messages, want %d", len(seen), n)
	}
	for i, c := range counts {
		if c == 0 {
			t.Fatalf("consumer %d received nothing (counts %v)", i, counts)
		}
	}
}

func TestE2ESharedCloseRedelivers(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("shared-close")
	a, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendAsyncAll(t, prod, 10, payloadMsg)
	msgs := receiveN(t, a, 10) // all delivered to a, none acked
	_ = msgs
	b := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	a.Close()
	re := receiveN(t, b, 10)
	for _, m := range re {
		if m.RedeliveryCount() != 1 {
			t.Fatalf("redelivered %q with count %d, want 1", m.Payload(), m.RedeliveryCount())
		}
		b.Ack(m)
	}
}

func TestE2EExclusiveBusy(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("excl")
	mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Exclusive})
	_, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Exclusive})
	if err == nil || !strings.Contains(err.Error(), "ConsumerBusy") {
		t.Fatalf("second exclusive subscribe: %v, want ConsumerBusy", err)
	}
	_, err = cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err == nil || !strings.Contains(err.Error(), "ConsumerBusy") {
		t.Fatalf("shared on exclusive sub: %v, want ConsumerBusy", err)
	}
}

type eventListener struct {
	mu     sync.Mutex
	active map[int32]bool
	ch     chan struct{}
}

func (l *eventListener) BecameActive(_ pulsar.Consumer, _ string, p int32) {
	l.mu.Lock()
	l.active[p] = true
	l.mu.Unlock()
	select {
	case l.ch <- struct{}{}:
	default:
	}
}

func (l *eventListener) BecameInactive(_ pulsar.Consumer, _ string, p int32) {
	l.mu.Lock()
	l.active[p] = false
	l.mu.Unlock()
	select {
	case l.ch <- struct{}{}:
	default:
	}
}

func (l *eventListener) isActive() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range l.active {
		if a {
			return true
		}
	}
	return false
}

func TestE2EFailover(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("failover")
	la := &eventListener{active: map[int32]bool{}, ch: make(chan struct{}, 8)}
	lb := &eventListener{active: map[int32]bool{}, ch: make(chan struct{}, 8)}
	a := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Failover, Name: "a", EventListener: la})
	b, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Failover, Name: "b", EventListener: lb})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "consumer a active", func() bool { return la.isActive() })
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendAsyncAll(t, prod, 10, payloadMsg)
	for _, m := range receiveN(t, a, 10) {
		a.Ack(m)
	}
	ctx, cancel := ctxWithTimeout(200 * time.Millisecond)
	if m, err := b.Receive(ctx); err == nil {
		t.Fatalf("inactive consumer b received %q", m.Payload())
	}
	cancel()
	if lb.isActive() {
		t.Fatal("b reported active")
	}
	// a leaves: b takes over and gets the rest.
	a.Close()
	waitUntil(t, "consumer b active after a closed", func() bool { return lb.isActive() })
	sendAsyncAll(t, prod, 5, payloadMsg)
	for _, m := range receiveN(t, b, 5) {
		b.Ack(m)
	}
	b.Close()
}

func TestE2EKeyShared(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("keyshared")
	var cs []pulsar.Consumer
	for i := 0; i < 3; i++ {
		cs = append(cs, mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.KeyShared}))
	}
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, BatcherBuilderType: pulsar.KeyBasedBatchBuilder, BatchingMaxPublishDelay: 20 * time.Millisecond})
	const n = 90
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}
	sendAsyncAll(t, prod, n, func(i int) *pulsar.ProducerMessage {
		return &pulsar.ProducerMessage{Key: keys[i%len(keys)], Payload: []byte(fmt.Sprint(i))}
	})
	type rec struct {
		consumer int
		key      string
		seq      int
	}
	var recs []rec
	receiveAcross(t, cs, n, func(ci int, m pulsar.Message) {
		var seq int
		fmt.Sscan(string(m.Payload()), &seq)
		recs = append(recs, rec{ci, m.Key(), seq})
	})
	if len(recs) != n {
		t.Fatalf("received %d, want %d", len(recs), n)
	}
	owner := map[string]int{}
	last := map[string]int{}
	used := map[int]bool{}
	for _, r := range recs {
		if o, ok := owner[r.key]; ok && o != r.consumer {
			t.Fatalf("key %s went to consumers %d and %d", r.key, o, r.consumer)
		}
		owner[r.key] = r.consumer
		used[r.consumer] = true
	}
	for _, ci := range []int{0, 1, 2} {
		for _, r := range recs {
			if r.consumer == ci {
				if l, ok := last[r.key]; ok && r.seq < l {
					t.Fatalf("key %s out of order: %d after %d", r.key, r.seq, l)
				}
				last[r.key] = r.seq
			}
		}
	}
	if len(used) < 2 {
		t.Fatalf("all keys went to one consumer")
	}
}

func TestE2EReaders(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("reader")
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	ids := sendAsyncAll(t, prod, 10, payloadMsg)

	read := func(r pulsar.Reader, n int) []string {
		t.Helper()
		var out []string
		for len(out) < n {
			m, err := r.Next(ctxT(t))
			if err != nil {
				t.Fatalf("reader next: %v", err)
			}
			out = append(out, string(m.Payload()))
		}
		return out
	}
	// Earliest.
	r, err := cl.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(r, 10); got[0] != "m-0" || got[9] != "m-9" {
		t.Fatalf("earliest reader got %v", got)
	}
	if r.HasNext() {
		t.Fatal("HasNext true at end")
	}
	r.Close()
	// From a given id, exclusive and inclusive.
	r, err = cl.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: ids[4]})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(r, 1); got[0] != "m-5" {
		t.Fatalf("reader after id 4 got %v, want m-5", got)
	}
	r.Close()
	r, err = cl.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: ids[4], StartMessageIDInclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(r, 1); got[0] != "m-4" {
		t.Fatalf("inclusive reader at id 4 got %v, want m-4", got)
	}
	r.Close()
	// Latest: sees only new messages.
	r, err = cl.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.LatestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	if r.HasNext() {
		t.Fatal("latest reader HasNext before new messages")
	}
	sendAsyncAll(t, prod, 1, func(int) *pulsar.ProducerMessage { return &pulsar.ProducerMessage{Payload: []byte("new")} })
	if got := read(r, 1); got[0] != "new" {
		t.Fatalf("latest reader got %v", got)
	}
	r.Close()
	// Latest inclusive: the last message.
	r, err = cl.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.LatestMessageID(), StartMessageIDInclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(r, 1); got[0] != "new" {
		t.Fatalf("latest inclusive reader got %v", got)
	}
	r.Close()
}

func TestE2EGetLastMessageIDEmptyAndBatched(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("lastid")
	r, err := cl.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.HasNext() {
		t.Fatal("HasNext on empty topic")
	}
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 5, BatchingMaxPublishDelay: time.Minute})
	ids := sendAsyncAll(t, prod, 5, payloadMsg)
	for i := 0; i < 5; i++ {
		if !r.HasNext() {
			t.Fatalf("HasNext false before message %d of a batch", i)
		}
		m, err := r.Next(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if !idEqual(m.ID(), ids[i]) {
			t.Fatalf("id %v, want %v", m.ID(), ids[i])
		}
	}
	if r.HasNext() {
		t.Fatal("HasNext after the whole batch")
	}
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "x"})
	last, err := cons.GetLastMessageIDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(last) != 1 || last[0].EntryID() != ids[4].EntryID() || last[0].BatchIdx() != 4 {
		t.Fatalf("GetLastMessageIDs = %+v, want entry %d batch index 4", last, ids[4].EntryID())
	}
}

// receiveAcross receives and acknowledges on every consumer of cs until n
// messages arrived in total (failing after a generous deadline); got runs
// serialised, with the index of the receiving consumer.
func receiveAcross(t testing.TB, cs []pulsar.Consumer, n int, got func(i int, m pulsar.Message)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := c.Receive(ctx)
				if err != nil {
					return // done (cancelled) or deadline
				}
				c.Ack(m)
				mu.Lock()
				got(i, m)
				total++
				if total == n {
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if total < n {
		t.Fatalf("received %d of %d messages before the deadline", total, n)
	}
}

func ctxWithTimeout(d time.Duration) (context.Context, func()) {
	return contextWithTimeout(d)
}

func TestE2ESeek(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("seek")
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	ids := sendAsyncAll(t, prod, 10, payloadMsg)
	for _, m := range receiveN(t, cons, 10) {
		cons.Ack(m)
	}
	if err := cons.Seek(ids[3]); err != nil {
		t.Fatal(err)
	}
	// The broker restarts at m-3; the Go client itself drops the seek
	// target (non-inclusive start) for consumers.
	if got := string(receiveN(t, cons, 1)[0].Payload()); got != "m-4" {
		t.Fatalf("after seek to id 3 got %q, want m-4", got)
	}
	// Seek by time: everything published after mid.
	mid := time.Now()
	time.Sleep(5 * time.Millisecond)
	sendAsyncAll(t, prod, 3, func(i int) *pulsar.ProducerMessage {
		return &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("late-%d", i))}
	})
	if err := cons.SeekByTime(mid); err != nil {
		t.Fatal(err)
	}
	if got := string(receiveN(t, cons, 1)[0].Payload()); got != "late-0" {
		t.Fatalf("after seek by time got %q, want late-0", got)
	}
	// Reader seek by time.
	r, err := cl.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.SeekByTime(mid); err != nil {
		t.Fatal(err)
	}
	if !r.HasNext() {
		t.Fatal("reader HasNext false after SeekByTime")
	}
	m, err := r.Next(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Payload()) != "late-0" {
		t.Fatalf("reader after SeekByTime got %q", m.Payload())
	}
}

func TestE2ENackRedelivery(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("nack")
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared, NackRedeliveryDelay: 100 * time.Millisecond})
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendAsyncAll(t, prod, 3, payloadMsg)
	for _, m := range receiveN(t, cons, 3) {
		if string(m.Payload()) == "m-1" {
			cons.Nack(m)
		} else {
			cons.Ack(m)
		}
	}
	m := receiveN(t, cons, 1)[0]
	if string(m.Payload()) != "m-1" || m.RedeliveryCount() != 1 {
		t.Fatalf("redelivered %q count %d, want m-1 count 1", m.Payload(), m.RedeliveryCount())
	}
	cons.Ack(m)
}

// TestE2EConnectionDropRedelivers: the Go client has no ack timeout, so
// the broker-side equivalent is tested: when a consumer's connection dies,
// its unacked messages are redelivered (to the reconnected consumer) with
// a higher redelivery count.
func TestE2EConnectionDropRedelivers(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("conndrop")
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	prod := mustProducer(t, tb.client(t), pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendAsyncAll(t, prod, 2, payloadMsg)
	receiveN(t, cons, 2) // not acked
	tb.dropConsumerConnections(t)
	got := map[string]uint32{}
	for _, m := range receiveN(t, cons, 2) {
		got[string(m.Payload())] = m.RedeliveryCount()
		cons.Ack(m)
	}
	if got["m-0"] != 1 || got["m-1"] != 1 {
		t.Fatalf("after connection drop got %v, want m-0 and m-1 with count 1", got)
	}
}

// dropConsumerConnections closes, from the broker side, every connection
// that holds a consumer.
func (tb *testBroker) dropConsumerConnections(t testing.TB) {
	tb.mu.Lock()
	var cs []*conn
	for c := range tb.mu.conns {
		c.mu.Lock()
		if len(c.mu.consumers) > 0 {
			cs = append(cs, c)
		}
		c.mu.Unlock()
	}
	tb.mu.Unlock()
	if len(cs) == 0 {
		t.Fatal("no consumer connection")
	}
	for _, c := range cs {
		c.shutdown()
	}
}

func TestE2EPartitioned(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("part")
	if err := tb.Registry().CreatePartitioned(ctxT(t), topic, topicreg.PartitionedMetadata{Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	parts, err := cl.TopicPartitions(topic)
	if err != nil || len(parts) != 3 {
		t.Fatalf("TopicPartitions = %v, %v", parts, err)
	}
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true, MessageRouter: nil})
	sendAsyncAll(t, prod, 30, payloadMsg)
	perPart := map[int32]int{}
	seen := map[string]bool{}
	for _, m := range receiveN(t, cons, 30) {
		perPart[m.ID().PartitionIdx()]++
		seen[string(m.Payload())] = true
		cons.Ack(m)
	}
	if len(seen) != 30 || len(perPart) != 3 {
		t.Fatalf("seen %d messages over partitions %v", len(seen), perPart)
	}
}

func TestE2EDedupAfterReconnect(t *testing.T) {
	tb := startBroker(t, func(c *brokerconf.Config) { c.Deduplication = true })
	cl := tb.client(t)
	topic := newTopicName("dedup")
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "dedup-prod", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		seq := int64(i)
		if _, err := prod.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i)), SequenceID: &seq}); err != nil {
			t.Fatal(err)
		}
	}
	prod.Close()
	prod2, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "dedup-prod", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{1, 2, 3} { // 1 and 2 are duplicates
		seq := int64(i)
		if _, err := prod2.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i)), SequenceID: &seq}); err != nil {
			t.Fatal(err)
		}
	}
	// Without an explicit sequence id the client continues after
	// last_sequence_id from PRODUCER_SUCCESS (3 -> 4), so this one is not
	// a duplicate.
	prod2.Close()
	prod3 := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, Name: "dedup-prod", DisableBatching: true})
	if _, err := prod3.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte("4")}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range receiveN(t, cons, 5) {
		got = append(got, string(m.Payload()))
		cons.Ack(m)
	}
	if !slices.Equal(got, []string{"0", "1", "2", "3", "4"}) {
		t.Fatalf("received %v, want [0 1 2 3 4]", got)
	}
	ctx, cancel := ctxWithTimeout(200 * time.Millisecond)
	defer cancel()
	if m, err := cons.Receive(ctx); err == nil {
		t.Fatalf("duplicate delivered: %q", m.Payload())
	}
}

func TestE2EUnsubscribe(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("unsub")
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	sendAsyncAll(t, prod, 3, payloadMsg)
	if err := cons.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	cons.Close()
	st := getStats(t, tb, topic)
	if _, ok := st.Subscriptions["s"]; ok {
		t.Fatal("subscription still listed after unsubscribe")
	}
	// Re-subscribing starts at the end again.
	cons2 := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	sendAsyncAll(t, prod, 1, func(int) *pulsar.ProducerMessage { return &pulsar.ProducerMessage{Payload: []byte("after")} })
	if got := string(receiveN(t, cons2, 1)[0].Payload()); got != "after" {
		t.Fatalf("after resubscribe got %q", got)
	}
}

func getStats(t testing.TB, tb *testBroker, topic string) snap.Topic {
	t.Helper()
	return getStatsPath(t, tb, "persistent/public/default/"+topic)
}

func getStatsPath(t testing.TB, tb *testBroker, path string) snap.Topic {
	t.Helper()
	st, err := topicStats(tb.Broker, ctxT(t), strings.Replace(path, "/", "://", 1))
	if err != nil {
		t.Fatalf("stats of %s: %v", path, err)
	}
	return st
}

func TestE2EStats(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("stats")
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true, Properties: map[string]string{"pk": "pv"}})
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub1", Type: pulsar.Shared, Properties: map[string]string{"ck": "cv"}})
	sendAsyncAll(t, prod, 5, payloadMsg)
	msgs := receiveN(t, cons, 5)
	cons.Ack(msgs[0])
	var st snap.Topic
	waitUntil(t, "backlog 4 and 4 unacked", func() bool {
		st = getStats(t, tb, topic)
		s := st.Subscriptions["sub1"]
		return s.MsgBacklog == 4 && s.UnackedMessages == 4
	})
	if st.MsgInCounter != 5 || len(st.Publishers) != 1 || st.Publishers[0].Metadata["pk"] != "pv" {
		t.Fatalf("publisher stats %+v", st)
	}
	if !strings.HasPrefix(st.Publishers[0].ClientVersion, "Pulsar-Go") {
		t.Fatalf("clientVersion %q", st.Publishers[0].ClientVersion)
	}
	sub := st.Subscriptions["sub1"]
	if sub.Type != "Shared" || len(sub.Consumers) != 1 || sub.Consumers[0].Metadata["ck"] != "cv" {
		t.Fatalf("subscription stats %+v", sub)
	}
	if st.StorageSize <= 0 || st.BytesInCounter <= 0 {
		t.Fatalf("storage %d, bytes in %d", st.StorageSize, st.BytesInCounter)
	}
	// Pulsar's JSON of these stats is package topicstats'.
	// Unknown paths: 404 with a reason.
	resp, err := http.Get("http://" + tb.HTTPAddr() + "/admin/v2/nothing/here")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(string(body), `"reason"`) {
		t.Fatalf("unknown path: %d %s", resp.StatusCode, body)
	}
}
