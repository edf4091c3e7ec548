package entrymeta

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
)

// start starts a broker with the interceptors names (exposed to
// consumers when expose is set).
func start(t testing.TB, names []string, expose bool, o brokertest.Options) *brokertest.Broker {
	t.Helper()
	o.Config = func(c *brokerconf.Config) { c.ExposeBrokerEntryMetadata = expose }
	o.Features = func(b *broker.Broker) error {
		_, err := Enable(b, names)
		return err
	}
	return brokertest.Start(t, o)
}

var both = []string{InterceptorBrokerTimestamp, InterceptorIndex}

// TestE2EBrokerEntryMetadata: with both interceptors and exposure on,
// every message carries the broker's publish time and its index in the
// topic (batches included), and the index continues after a restart.
func TestE2EBrokerEntryMetadata(t *testing.T) {
	tb := start(t, both, true, brokertest.Options{})
	topic := brokertest.Topic("bem")
	before := time.Now().Add(-time.Second)
	check := func(tb *brokertest.Broker, from, n int) {
		cl := tb.Client(t)
		cons := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		prod := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 3, BatchingMaxPublishDelay: 50 * time.Millisecond})
		brokertest.SendAll(t, prod, n, brokertest.Msg)
		for i, m := range brokertest.Receive(t, cons, n) {
			bt := m.BrokerPublishTime()
			if bt == nil || bt.Before(before) || bt.After(time.Now().Add(time.Second)) {
				t.Fatalf("message %d: broker publish time %v, want about now", i, bt)
			}
			if idx := m.Index(); idx == nil || *idx != uint64(from+i) {
				t.Fatalf("message %d (%s): index %v, want %d", i, m.Payload(), idx, from+i)
			}
			if got, want := string(m.Payload()), fmt.Sprintf("m-%d", i); got != want {
				t.Fatalf("payload %q, want %q", got, want)
			}
			cons.Ack(m)
		}
		cons.Close()
		prod.Close()
		cl.Close()
	}
	check(tb, 0, 10)
	tb = tb.Restart(t)
	check(tb, 10, 5)
}

// TestE2EBrokerEntryMetadataHidden: stored but not exposed (Pulsar's
// default), consumers get plain entries.
func TestE2EBrokerEntryMetadataHidden(t *testing.T) {
	tb := start(t, both, false, brokertest.Options{})
	cl := tb.Client(t)
	topic := brokertest.Topic("bemhidden")
	cons := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	prod := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	brokertest.SendAll(t, prod, 3, brokertest.Msg)
	for i, m := range brokertest.Receive(t, cons, 3) {
		if m.BrokerPublishTime() != nil || m.Index() != nil {
			t.Fatalf("message %d: broker entry metadata exposed: %v %v", i, m.BrokerPublishTime(), m.Index())
		}
		if got, want := string(m.Payload()), fmt.Sprintf("m-%d", i); got != want {
			t.Fatalf("payload %q, want %q", got, want)
		}
	}
}

func TestBadInterceptor(t *testing.T) {
	if _, err := Enable(nil, []string{"org.example.Nope"}); !errors.Is(err, ErrUnknownInterceptor) {
		t.Fatalf("unknown interceptor: %v, want ErrUnknownInterceptor", err)
	}
	if x, err := Enable(nil, []string{""}); x != nil || err != nil {
		t.Fatalf("no interceptor: %v %v, want nothing registered", x, err)
	}
}

// TestE2EBrokerEntryIndexAcrossLedgersAndRestart: the message index
// (batches counted message by message) runs on without a gap or a repeat
// across ledger rollovers (4 entries a ledger) and a broker restart;
// MessageIDByIndex finds every message's entry, and a reader started at
// that id (an index-based seek) gets the message.
func TestE2EBrokerEntryIndexAcrossLedgersAndRestart(t *testing.T) {
	tb := start(t, both, true, brokertest.Options{Ledger: mledger.Config{MaxEntriesPerLedger: 4, MinLedgerRolloverTime: -1, TrimInterval: -1}})
	topic := brokertest.Topic("bemidx")
	ids := map[uint64]pulsar.MessageID{}
	// round sends n messages numbered from `from` (batched by 3 or one
	// by one) and checks every index on a consumer that reads them all.
	round := func(tb *brokertest.Broker, from, n int, batched bool) {
		t.Helper()
		cl := tb.Client(t)
		cons := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		po := pulsar.ProducerOptions{Topic: topic, DisableBatching: !batched, BatchingMaxMessages: 3, BatchingMaxPublishDelay: 50 * time.Millisecond}
		prod := brokertest.Producer(t, cl, po)
		brokertest.SendAll(t, prod, n, func(i int) *pulsar.ProducerMessage { return brokertest.Msg(from + i) })
		for i, m := range brokertest.Receive(t, cons, n) {
			want := uint64(from + i)
			if idx := m.Index(); idx == nil || *idx != want {
				t.Fatalf("message %q: index %v, want %d", m.Payload(), idx, want)
			}
			if got := string(m.Payload()); got != fmt.Sprintf("m-%d", want) {
				t.Fatalf("payload %q, want m-%d", got, want)
			}
			ids[want] = m.ID()
			cons.Ack(m)
		}
		prod.Close()
		cons.Close()
	}
	round(tb, 0, 12, true)
	round(tb, 12, 5, false)
	tb = tb.Restart(t)
	round(tb, 17, 9, true)
	tb = tb.Restart(t)
	round(tb, 26, 3, false)
	total := 29

	ctx := brokertest.Ctx(t)
	ledgers := map[int64]bool{}
	for _, id := range ids {
		ledgers[id.LedgerID()] = true
	}
	if len(ledgers) < 4 {
		t.Fatalf("messages in %d ledgers, want rollovers (>= 4)", len(ledgers))
	}
	for i := 0; i < total; i++ {
		got, err := tb.Admin().Reads.MessageIDByIndex(ctx, topic, int64(i))
		if err != nil {
			t.Fatalf("index %d: %v", i, err)
		}
		want := ids[uint64(i)]
		if got.LedgerID != want.LedgerID() || got.EntryID != want.EntryID() {
			t.Fatalf("index %d: entry %d:%d, want %d:%d", i, got.LedgerID, got.EntryID, want.LedgerID(), want.EntryID())
		}
	}
	if _, err := tb.Admin().Reads.MessageIDByIndex(ctx, topic, int64(total)); !errors.Is(err, broker.ErrTopicNotFound) {
		t.Fatalf("index past the end: %v, want ErrTopicNotFound", err)
	}
	for _, bad := range []int64{-1, -1 << 63} {
		if _, err := tb.Admin().Reads.MessageIDByIndex(ctx, topic, bad); !errors.Is(err, broker.ErrPreconditionFailed) {
			t.Fatalf("index %d: %v, want ErrPreconditionFailed", bad, err)
		}
	}
	if _, err := tb.Admin().Reads.MessageIDByIndex(ctx, topic, 1<<63-1); !errors.Is(err, broker.ErrTopicNotFound) {
		t.Fatalf("index MaxInt64: %v, want ErrTopicNotFound", err)
	}

	// Seek by index: the id of the entry holding index 8 (inside a batch
	// of three), read from there; index 8 comes up, then the rest.
	id, err := tb.Admin().Reads.MessageIDByIndex(ctx, topic, 8)
	if err != nil {
		t.Fatal(err)
	}
	cl := tb.Client(t)
	start := ids[8] // same entry: the client's id type for the reader
	if start.LedgerID() != id.LedgerID || start.EntryID() != id.EntryID {
		t.Fatalf("entry of index 8: %+v vs %v", id, start)
	}
	cons := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "seek", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err := cons.Seek(pulsar.NewMessageID(id.LedgerID, id.EntryID, -1, start.PartitionIdx())); err != nil {
		t.Fatal(err)
	}
	next := uint64(0)
	for first := true; next < uint64(total); first = false {
		m := brokertest.Receive(t, cons, 1)[0]
		idx := *m.Index()
		if first && (idx > 8 || idx < 6) {
			t.Fatalf("after the seek: first index %d, want the batch holding 8 (6..8)", idx)
		}
		if !first && idx != next {
			t.Fatalf("after the seek: index %d, want %d", idx, next)
		}
		next = idx + 1
		cons.Ack(m)
	}
}

// TestMessageIDByIndexNeedsTheInterceptor: without the index interceptor
// (no feature at all, or the timestamp one only) the lookup is refused
// with a reason naming it.
func TestMessageIDByIndexNeedsTheInterceptor(t *testing.T) {
	for _, names := range [][]string{nil, {InterceptorBrokerTimestamp}} {
		tb := start(t, names, false, brokertest.Options{})
		_, err := tb.Admin().Reads.MessageIDByIndex(brokertest.Ctx(t), brokertest.Topic("noidx"), 0)
		if !errors.Is(err, broker.ErrPreconditionFailed) || !strings.Contains(err.Error(), InterceptorIndex) {
			t.Fatalf("%v: got %v, want ErrPreconditionFailed naming %s", names, err, InterceptorIndex)
		}
	}
}

// TestE2EBrokerEntryIndexAfterFailedAdds: adds the storage refuses (the
// ledger then stays failed, as with BookKeeper; the client re-sends)
// take no index: the stored messages are numbered 0..n-1 without a gap,
// and msgInCounter counts the stored messages only.
func TestE2EBrokerEntryIndexAfterFailedAdds(t *testing.T) {
	store := memstore.New()
	tb := start(t, []string{InterceptorIndex}, true, brokertest.Options{Ledgers: store})
	topic := brokertest.Topic("bemfail")
	cl := tb.Client(t)
	cons := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	prod := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 4, BatchingMaxPublishDelay: 20 * time.Millisecond})
	const n = 60
	brokertest.SendAll(t, prod, 20, brokertest.Msg)
	store.FailNextAdds(3)
	brokertest.SendAll(t, prod, n-20, func(i int) *pulsar.ProducerMessage { return brokertest.Msg(20 + i) })
	if c := store.Creates(); c < 2 {
		t.Fatalf("%d ledgers created: the injected add failures did not happen", c)
	}
	seen := map[string]bool{}
	next := uint64(0)
	for len(seen) < n {
		m := brokertest.Receive(t, cons, 1)[0]
		if seen[string(m.Payload())] {
			continue // a re-send that was stored twice would show here as a repeat payload
		}
		seen[string(m.Payload())] = true
		if idx := m.Index(); idx == nil || *idx != next {
			t.Fatalf("message %q: index %v, want %d", m.Payload(), idx, next)
		}
		next++
		cons.Ack(m)
	}
	st, err := tb.Admin().Reads.TopicStats(brokertest.Ctx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	if st.MsgInCounter != n {
		t.Fatalf("msgInCounter %d, want the %d stored", st.MsgInCounter, n)
	}
}

// TestE2EBrokerEntryIndexAfterEverythingTrimmed: when retention trimmed
// every ledger holding an entry, the index still goes on after a restart
// (it is kept in the managed ledger's info, as Pulsar keeps it in its
// managed ledger properties), instead of starting again at 0.
func TestE2EBrokerEntryIndexAfterEverythingTrimmed(t *testing.T) {
	tb := start(t, []string{InterceptorIndex}, true, brokertest.Options{Ledger: mledger.Config{MaxEntriesPerLedger: 3, MinLedgerRolloverTime: -1, TrimInterval: -1}})
	topic := brokertest.Topic("bemtrim")
	round := func(tb *brokertest.Broker, from, n int) {
		t.Helper()
		cl := tb.Client(t)
		cons := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		prod := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
		brokertest.SendAll(t, prod, n, func(i int) *pulsar.ProducerMessage { return brokertest.Msg(from + i) })
		for i, m := range brokertest.Receive(t, cons, n) {
			if idx := m.Index(); idx == nil || *idx != uint64(from+i) {
				t.Fatalf("message %q: index %v, want %d", m.Payload(), idx, from+i)
			}
			if err := cons.Ack(m); err != nil {
				t.Fatal(err)
			}
		}
		prod.Close()
		cons.Close()
		cl.Close()
	}
	round(tb, 0, 7)
	tb = tb.Restart(t) // the clean close persists the acks
	ml := tb.Ledger(t, topic)
	if err := ml.Trim(brokertest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	if lp, ok := ml.LastConfirmed(); ok {
		t.Fatalf("entry %v left after trimming everything consumed", lp)
	}
	tb = tb.Restart(t)
	round(tb, 7, 3)
}
