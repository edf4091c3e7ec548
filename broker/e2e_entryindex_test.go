package broker

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
)

// TestE2EBrokerEntryIndexAcrossLedgersAndRestart: the message index
// (batches counted message by message) runs on without a gap or a repeat
// across ledger rollovers (4 entries a ledger) and a broker restart;
// MessageIDByIndex finds every message's entry, and a reader started at
// that id (an index-based seek) gets the message.
func TestE2EBrokerEntryIndexAcrossLedgersAndRestart(t *testing.T) {
	mut := func(c *Config) {
		c.BrokerEntryMetadataInterceptors = []string{InterceptorBrokerTimestamp, InterceptorIndex}
		c.ExposeBrokerEntryMetadata = true
	}
	mlc := mledger.Config{MaxEntriesPerLedger: 4, MinLedgerRolloverTime: -1, TrimInterval: -1}
	tb := startBrokerMLC(t, mut, newMemMeta(), memstore.New(), mlc)
	topic := "persistent://public/default/" + newTopicName("bemidx")
	ids := map[uint64]pulsar.MessageID{}
	// round sends n messages numbered from `from` (batched by 3 or one
	// by one) and checks every index on a consumer that reads them all.
	round := func(tb *testBroker, from, n int, batched bool) {
		t.Helper()
		cl := tb.client(t)
		cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		po := pulsar.ProducerOptions{Topic: topic, DisableBatching: !batched, BatchingMaxMessages: 3, BatchingMaxPublishDelay: 50 * time.Millisecond}
		prod := mustProducer(t, cl, po)
		sendAsyncAll(t, prod, n, func(i int) *pulsar.ProducerMessage { return payloadMsg(from + i) })
		for i, m := range receiveN(t, cons, n) {
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
	tb = tb.restart(t)
	round(tb, 17, 9, true)
	tb = tb.restart(t)
	round(tb, 26, 3, false)
	total := 29

	ctx := ctxT(t)
	ledgers := map[int64]bool{}
	for _, id := range ids {
		ledgers[id.LedgerID()] = true
	}
	if len(ledgers) < 4 {
		t.Fatalf("messages in %d ledgers, want rollovers (>= 4)", len(ledgers))
	}
	for i := 0; i < total; i++ {
		got, err := tb.MessageIDByIndex(ctx, topic, int64(i))
		if err != nil {
			t.Fatalf("index %d: %v", i, err)
		}
		want := ids[uint64(i)]
		if got.LedgerID != want.LedgerID() || got.EntryID != want.EntryID() {
			t.Fatalf("index %d: entry %d:%d, want %d:%d", i, got.LedgerID, got.EntryID, want.LedgerID(), want.EntryID())
		}
	}
	if _, err := tb.MessageIDByIndex(ctx, topic, int64(total)); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("index past the end: %v, want ErrTopicNotFound", err)
	}
	for _, bad := range []int64{-1, -1 << 63} {
		if _, err := tb.MessageIDByIndex(ctx, topic, bad); !errors.Is(err, ErrPreconditionFailed) {
			t.Fatalf("index %d: %v, want ErrPreconditionFailed", bad, err)
		}
	}
	if _, err := tb.MessageIDByIndex(ctx, topic, 1<<63-1); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("index MaxInt64: %v, want ErrTopicNotFound", err)
	}

	// Seek by index: the id of the entry holding index 8 (inside a batch
	// of three), read from there; index 8 comes up, then the rest.
	id, err := tb.MessageIDByIndex(ctx, topic, 8)
	if err != nil {
		t.Fatal(err)
	}
	cl := tb.client(t)
	start := ids[8] // same entry: the client's id type for the reader
	if start.LedgerID() != id.LedgerID || start.EntryID() != id.EntryID {
		t.Fatalf("entry of index 8: %+v vs %v", id, start)
	}
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "seek", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err := cons.Seek(pulsar.NewMessageID(id.LedgerID, id.EntryID, -1, start.PartitionIdx())); err != nil {
		t.Fatal(err)
	}
	next := uint64(0)
	for first := true; next < uint64(total); first = false {
		m := receiveN(t, cons, 1)[0]
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
// the lookup is refused with a reason naming it.
func TestMessageIDByIndexNeedsTheInterceptor(t *testing.T) {
	tb := startBroker(t, func(c *Config) {
		c.BrokerEntryMetadataInterceptors = []string{InterceptorBrokerTimestamp}
	})
	_, err := tb.MessageIDByIndex(ctxT(t), "persistent://public/default/"+newTopicName("noidx"), 0)
	if !errors.Is(err, ErrPreconditionFailed) || !strings.Contains(err.Error(), InterceptorIndex) {
		t.Fatalf("got %v, want ErrPreconditionFailed naming %s", err, InterceptorIndex)
	}
}

// TestE2EBrokerEntryIndexAfterFailedAdds: adds the storage refuses (the
// ledger then stays failed, as with BookKeeper; the client re-sends)
// take no index: the stored messages are numbered 0..n-1 without a gap,
// and msgInCounter counts the stored messages only.
func TestE2EBrokerEntryIndexAfterFailedAdds(t *testing.T) {
	store := memstore.New()
	tb := startBrokerOn(t, func(c *Config) {
		c.BrokerEntryMetadataInterceptors = []string{InterceptorIndex}
		c.ExposeBrokerEntryMetadata = true
	}, newMemMeta(), store)
	topic := "persistent://public/default/" + newTopicName("bemfail")
	cl := tb.client(t)
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 4, BatchingMaxPublishDelay: 20 * time.Millisecond})
	const n = 60
	sendAsyncAll(t, prod, 20, payloadMsg)
	store.FailNextAdds(3)
	ids := sendAsyncAll(t, prod, n-20, func(i int) *pulsar.ProducerMessage { return payloadMsg(20 + i) })
	_ = ids
	if c := store.Creates(); c < 2 {
		t.Fatalf("%d ledgers created: the injected add failures did not happen", c)
	}
	seen := map[string]bool{}
	next := uint64(0)
	for len(seen) < n {
		m := receiveN(t, cons, 1)[0]
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
	st, err := tb.TopicStats(ctxT(t), topic)
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
	mut := func(c *Config) {
		c.BrokerEntryMetadataInterceptors = []string{InterceptorIndex}
		c.ExposeBrokerEntryMetadata = true
	}
	mlc := mledger.Config{MaxEntriesPerLedger: 3, MinLedgerRolloverTime: -1, TrimInterval: -1}
	tb := startBrokerMLC(t, mut, newMemMeta(), memstore.New(), mlc)
	topic := "persistent://public/default/" + newTopicName("bemtrim")
	round := func(tb *testBroker, from, n int) {
		t.Helper()
		cl := tb.client(t)
		cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
		sendAsyncAll(t, prod, n, func(i int) *pulsar.ProducerMessage { return payloadMsg(from + i) })
		for i, m := range receiveN(t, cons, n) {
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
	tb = tb.restart(t) // the clean close persists the acks
	tp, err := tb.loadedOrLoad(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.ml.(*mlAdapter).ml.Trim(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if lp, ok := tp.ml.LastConfirmed(); ok {
		t.Fatalf("entry %v left after trimming everything consumed", lp)
	}
	tb = tb.restart(t)
	round(tb, 7, 3)
}
