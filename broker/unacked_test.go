package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker/snap"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/internal/testenv"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
	"github.com/magnetar-mq/magnetar/policy"
)

// produceN sends n unbatched messages of size bytes to topic.
func produceN(t testing.TB, c pulsar.Client, topic string, n, size int) {
	t.Helper()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true, MaxPendingMessages: 2000})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	payload := make([]byte, size)
	errs := make(chan error, 1)
	for i := 0; i < n; i++ {
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := p.FlushWithCtx(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// subStats returns the stats of subscription sub of topic.
func subStats(t testing.TB, tb *testBroker, topic, sub string) snap.Subscription {
	t.Helper()
	st, err := topicStats(tb.Broker, ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	return st.Subscriptions[sub]
}

// TestUnackedLimitBlocksConsumer: a Shared consumer that never acks gets
// exactly maxUnackedMessagesPerConsumer messages and no more (stats say
// it is blocked); acks that leave more than half unacked do not unblock
// it, the one that reaches half does.
func TestUnackedLimitBlocksConsumer(t *testing.T) {
	const limit = 400
	tb := startBroker(t, func(c *brokerconf.Config) { c.MaxUnackedPerConsumer = limit })
	c := tb.client(t)
	topic := "persistent://public/default/" + newTopicName("unacked-c")
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		ReceiverQueueSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	produceN(t, c, topic, 3*limit, 16)

	msgs := receiveN(t, cons, limit)
	waitUntil(t, "consumer blocked", func() bool {
		s := subStats(t, tb, topic, "s")
		return len(s.Consumers) == 1 && s.Consumers[0].BlockedConsumerOnUnackedMsgs
	})
	st := subStats(t, tb, topic, "s")
	cs := st.Consumers[0]
	if cs.UnackedMessages != limit || cs.MsgOutCounter != limit || st.UnackedMessages != limit {
		t.Fatalf("blocked consumer: unacked %d, out %d, sub unacked %d; want %d", cs.UnackedMessages, cs.MsgOutCounter, st.UnackedMessages, limit)
	}
	if st.BlockedSubscriptionOnUnackedMsgs {
		t.Fatal("subscription reported blocked below its limit")
	}
	// Nothing more is dispatched while blocked: the broker counted
	// exactly limit messages out, and a receive finds nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	if m, err := cons.Receive(ctx); err == nil {
		t.Fatalf("received %v beyond the limit", m.ID())
	}
	cancel()

	// Ack down to just above half: still blocked.
	for _, m := range msgs[:limit/2-1] {
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "acks applied", func() bool { return subStats(t, tb, topic, "s").UnackedMessages == limit/2+1 })
	if st := subStats(t, tb, topic, "s"); !st.Consumers[0].BlockedConsumerOnUnackedMsgs || st.MsgOutCounter != limit {
		t.Fatalf("unblocked above half: %+v", st.Consumers[0])
	}
	// One more ack reaches half: dispatch resumes up to the limit again.
	if err := cons.Ack(msgs[limit/2-1]); err != nil {
		t.Fatal(err)
	}
	more := receiveN(t, cons, limit/2)
	waitUntil(t, "blocked again", func() bool {
		s := subStats(t, tb, topic, "s")
		return s.Consumers[0].BlockedConsumerOnUnackedMsgs && s.Consumers[0].UnackedMessages == limit
	})
	if got := subStats(t, tb, topic, "s").MsgOutCounter; got != limit+limit/2 {
		t.Fatalf("delivered %d in total, want %d", got, limit+limit/2)
	}
	// Acking everything delivers the rest.
	for _, m := range append(msgs[limit/2:], more...) {
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3*limit-limit-limit/2; i++ {
		if err := cons.Ack(receiveN(t, cons, 1)[0]); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "backlog drained", func() bool {
		s := subStats(t, tb, topic, "s")
		return s.MsgBacklog == 0 && !s.Consumers[0].BlockedConsumerOnUnackedMsgs
	})
}

// TestUnackedLimitBlocksSubscription: two Shared consumers that never ack
// get maxUnackedMessagesPerSubscription messages between them; the
// namespace policy overrides the broker settings and a policy change
// applies to the running subscription.
func TestUnackedLimitBlocksSubscription(t *testing.T) {
	tb := startBrokerOpts(t, brokerOpts{cfg: func(c *brokerconf.Config) { c.MaxUnackedPerConsumer = -1; c.MaxUnackedPerSubscription = 100000 },
		use: []func(*Broker) error{followPolicies}})
	ns := "public/" + newTopicName("unacked-ns")
	limit := 300
	if err := tb.Policies().CreateNamespace(ctxT(t), ns, &policy.Policies{MaxUnackedMessagesPerSubscription: &limit}); err != nil {
		t.Fatal(err)
	}
	c := tb.client(t)
	topic := "persistent://" + ns + "/t"
	for i := 0; i < 2; i++ {
		cc, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
			Name: fmt.Sprintf("c%d", i), ReceiverQueueSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
	}
	produceN(t, c, topic, 1000, 16)
	waitUntil(t, "subscription blocked", func() bool { return subStats(t, tb, topic, "s").BlockedSubscriptionOnUnackedMsgs })
	st := subStats(t, tb, topic, "s")
	if st.MsgOutCounter != int64(limit) || st.UnackedMessages != int64(limit) {
		t.Fatalf("blocked subscription: out %d, unacked %d; want %d", st.MsgOutCounter, st.UnackedMessages, limit)
	}
	for _, cs := range st.Consumers {
		if cs.BlockedConsumerOnUnackedMsgs {
			t.Fatalf("consumer %s blocked without a per-consumer limit", cs.ConsumerName)
		}
	}
	// Raising the limit through the policy unblocks the subscription.
	if err := tb.Policies().Update(ctxT(t), ns, func(p *policy.Policies) error {
		p.MaxUnackedMessagesPerSubscription = nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "all delivered", func() bool { return subStats(t, tb, topic, "s").MsgOutCounter == 1000 })
	if subStats(t, tb, topic, "s").BlockedSubscriptionOnUnackedMsgs {
		t.Fatal("still blocked after the limit was lifted")
	}
}

// copyStore is a memstore whose reads return fresh copies, like a real
// bookie (memstore hands out its stored slices, which retaining would
// not cost heap).
type copyStore struct{ *memstore.Store }

type copyReader struct{ mledger.ReadLedger }
type copyWriter struct{ mledger.WriteLedger }

func copyEntries(es [][]byte, err error) ([][]byte, error) {
	out := make([][]byte, len(es))
	for i, e := range es {
		out[i] = append([]byte(nil), e...)
	}
	return out, err
}

func (s copyStore) Create(ctx context.Context) (mledger.WriteLedger, error) {
	w, err := s.Store.Create(ctx)
	if err != nil {
		return nil, err
	}
	return copyWriter{w}, nil
}
func (s copyStore) Open(ctx context.Context, id int64) (mledger.ReadLedger, error) {
	r, err := s.Store.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	return copyReader{r}, nil
}
func (r copyReader) Read(ctx context.Context, first, last int64) ([][]byte, error) {
	return copyEntries(r.ReadLedger.Read(ctx, first, last))
}
func (w copyWriter) Read(ctx context.Context, first, last int64) ([][]byte, error) {
	return copyEntries(w.WriteLedger.Read(ctx, first, last))
}

// TestUnackedMemoryBounded: a Shared consumer that receives N 1 KiB
// messages and acks none makes the broker keep positions, not payloads:
// the heap grows by far less than N KiB. Stats answer quickly with N
// unacked messages, and redelivery (the consumer closes, another takes
// over) re-reads the payloads from storage.
func TestUnackedMemoryBounded(t *testing.T) {
	const n, size = 100000, 1024
	tb := startBrokerOpts(t, brokerOpts{cfg: func(c *brokerconf.Config) {
		c.MaxUnackedPerConsumer, c.MaxUnackedPerSubscription = -1, -1
	}, ledgers: copyStore{memstore.New()}, cacheSize: 1 << 20})
	c := tb.client(t)
	topic := "persistent://public/default/" + newTopicName("unacked-mem")
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared, Name: "first"})
	if err != nil {
		t.Fatal(err)
	}
	produceN(t, c, topic, n, size)
	before := testenv.LiveHeap()

	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	for i := 0; i < n; i++ {
		if _, err := cons.Receive(ctx); err != nil {
			t.Fatalf("received %d of %d: %v", i, n, err)
		}
	}
	waitUntil(t, "all unacked", func() bool { return subStats(t, tb, topic, "s").UnackedMessages == n })
	after := testenv.LiveHeap()
	growth := int64(after) - int64(before)
	t.Logf("heap before %d MiB, after %d MiB: growth %d KiB for %d unacked messages of %d bytes (%d bytes per message)",
		before>>20, after>>20, growth>>10, n, size, growth/n)
	if limit := int64(n * size / 4); growth > limit {
		t.Fatalf("heap grew by %d bytes with %d unacked %d-byte messages; want < %d (payloads retained?)", growth, n, size, limit)
	}

	start := time.Now()
	for i := 0; i < 20; i++ {
		if st := subStats(t, tb, topic, "s"); st.UnackedMessages != n {
			t.Fatalf("unacked %d", st.UnackedMessages)
		}
	}
	if d := time.Since(start) / 20; d > 200*time.Millisecond {
		t.Fatalf("a stats call took %v with %d unacked messages", d, n)
	}

	// Redelivery re-reads: a second consumer gets every message again.
	second, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared, Name: "second"})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	cons.Close()
	got := 0
	for got < n {
		m, err := second.Receive(ctx)
		if err != nil {
			t.Fatalf("redelivered %d of %d: %v", got, n, err)
		}
		if len(m.Payload()) != size {
			t.Fatalf("redelivered payload of %d bytes", len(m.Payload()))
		}
		if m.RedeliveryCount() != 1 {
			t.Fatalf("redelivery count %d", m.RedeliveryCount())
		}
		if err := second.Ack(m); err != nil {
			t.Fatal(err)
		}
		got++
	}
	waitUntil(t, "backlog drained", func() bool { return subStats(t, tb, topic, "s").MsgBacklog == 0 })
}

// TestUnackedDefaultLimit: with the broker defaults, a Shared consumer
// that never acks stops at exactly 50,000 messages.
func TestUnackedDefaultLimit(t *testing.T) {
	tb := startBroker(t, nil)
	c := tb.client(t)
	topic := "persistent://public/default/" + newTopicName("unacked-default")
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	produceN(t, c, topic, brokerconf.DefaultMaxUnackedPerConsumer+100, 8)
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	for i := 0; i < brokerconf.DefaultMaxUnackedPerConsumer; i++ {
		if _, err := cons.Receive(ctx); err != nil {
			t.Fatalf("received %d: %v", i, err)
		}
	}
	waitUntil(t, "consumer blocked", func() bool {
		s := subStats(t, tb, topic, "s")
		return len(s.Consumers) == 1 && s.Consumers[0].BlockedConsumerOnUnackedMsgs
	})
	if st := subStats(t, tb, topic, "s"); st.MsgOutCounter != brokerconf.DefaultMaxUnackedPerConsumer || st.MsgBacklog != brokerconf.DefaultMaxUnackedPerConsumer+100 {
		t.Fatalf("delivered %d (backlog %d), want %d", st.MsgOutCounter, st.MsgBacklog, brokerconf.DefaultMaxUnackedPerConsumer)
	}
}
