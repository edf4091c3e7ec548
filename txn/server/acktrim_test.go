package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/txn"
)

// ackLogLedgers returns the number of ledgers of the pending-ack log of
// topic/sub once it is at most want, or the count after wait.
func ackLogLedgers(t *testing.T, tb *testBroker, topic, sub string, want int, wait time.Duration) int {
	t.Helper()
	tp, err := tb.Topic(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	tt := tb.txs.topics.Get(tp)
	tt.mu.Lock()
	l := tt.ackLogs[sub]
	tt.mu.Unlock()
	if l == nil {
		t.Fatalf("no pending-ack log for %s", sub)
	}
	// Trimming runs on the managed ledger's tick: poll its result.
	deadline := time.Now().Add(wait)
	for {
		n := len(l.ml.Stats().Ledgers)
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTxnPendingAckLogTrimmed: a subscription's pending-ack log that rolls
// over many ledgers is trimmed once its transactions have ended, but never
// past the first record of an open transaction; what the open
// transaction holds and what committed ones applied survive a restart.
// Without the log's cursor every closed ledger would be trimmed (and the
// open transaction's hold lost); without trimming the log grows forever.
func TestTxnPendingAckLogTrimmed(t *testing.T) {
	mlc := mledger.Config{MaxEntriesPerLedger: 2, MinLedgerRolloverTime: -1, TrimInterval: time.Millisecond}
	tb := startTxnBroker(t, brokertest.Options{Ledger: mlc}, Config{Coordinators: 1, PendingAckTrimRecords: 4})
	topic := "persistent://public/default/" + newTopicName("txntrim")
	cl := tb.client(t)
	mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"}).Close()
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	const n = 60
	var payloads []string
	for i := range n {
		payloads = append(payloads, fmt.Sprintf("m%d", i))
	}
	sendPlain(t, prod, payloads...)

	r, ch := newTxnConsumer(t, tb, topic, "s", pb.CommandSubscribe_Exclusive)
	m := make([]position, n)
	for i := range m {
		m[i] = nextEvent(t, ch, pb.BaseCommand_MESSAGE).pos
	}
	rid := uint64(100)
	commitOne := func(i int) { // in a transaction of its own
		t.Helper()
		rid++
		id := txn.ID{Most: 9, Least: rid}
		if ev := ackRaw(t, r, ch, rid, &id, false, m[i]); ev.hasError {
			t.Fatalf("txn ack %d: %s", i, ev.ackError)
		}
		if err := tb.EndOnSubscription(ctxT(t), topic, "s", id, txn.Commit); err != nil {
			t.Fatal(err)
		}
	}
	// Phase 1: 20 committed transactions, none open: 40 records over ~20
	// ledgers, trimmed down to the last few.
	for i := 40; i < n; i++ {
		commitOne(i)
	}
	if got := ackLogLedgers(t, tb, topic, "s", 3, 10*time.Second); got > 3 {
		t.Fatalf("pending-ack log keeps %d ledgers with no open transaction, want <= 3", got)
	}
	// Phase 2: x holds m0 and stays open; 39 more commits.
	x := txn.ID{Most: 9, Least: 1}
	if ev := ackRaw(t, r, ch, 1, &x, false, m[0]); ev.hasError {
		t.Fatalf("txn ack: %s", ev.ackError)
	}
	for i := 1; i < 40; i++ {
		commitOne(i)
	}
	if got := subBacklog(t, tb.Broker, topic, "s"); got != 1 {
		t.Fatalf("backlog = %d, want 1 (m0, held by x)", got)
	}
	// x's record is kept, so the ~40 ledgers after it are too (given
	// the ticks of half a second to trim them, which they must not).
	if got := ackLogLedgers(t, tb, topic, "s", 3, 500*time.Millisecond); got < 20 {
		t.Fatalf("pending-ack log trimmed to %d ledgers past an open transaction's record", got)
	}
	r.nc.Close()
	cl.Close()
	tb = tb.restart(t)
	r, ch = newTxnConsumer(t, tb, topic, "s", pb.CommandSubscribe_Exclusive)
	// Nothing is delivered: m0 is held by x, the rest were committed.
	noMessage(t, ch, 300*time.Millisecond)
	if got := subBacklog(t, tb.Broker, topic, "s"); got != 1 {
		t.Fatalf("after restart backlog = %d, want 1", got)
	}
	y := txn.ID{Most: 9, Least: 2}
	if ev := ackRaw(t, r, ch, 5000, &y, false, m[0]); ev.ackError != pb.ServerError_TransactionConflict {
		t.Fatalf("after restart, second transaction on m0: %v", ev)
	}
	// x commits: the log may now go, down to its last ledgers.
	if err := tb.EndOnSubscription(ctxT(t), topic, "s", x, txn.Commit); err != nil {
		t.Fatal(err)
	}
	if got := subBacklog(t, tb.Broker, topic, "s"); got != 0 {
		t.Fatalf("backlog after x commits = %d, want 0", got)
	}
	// Four more committed transactions reach the trim threshold: with
	// nothing open the log goes down to its last ledgers again.
	cl = tb.client(t)
	prod = mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendPlain(t, prod, "n0", "n1", "n2", "n3")
	for i := range 4 { // all first: ackRaw drops the messages it meets
		m[i] = nextEvent(t, ch, pb.BaseCommand_MESSAGE).pos
	}
	for i := range 4 {
		commitOne(i)
	}
	if got := ackLogLedgers(t, tb, topic, "s", 3, 10*time.Second); got > 3 {
		t.Fatalf("pending-ack log keeps %d ledgers after the open transaction ended, want <= 3", got)
	}
	r.nc.Close()
	cl.Close()
	tb = tb.restart(t)
	_, ch = newTxnConsumer(t, tb, topic, "s", pb.CommandSubscribe_Exclusive)
	noMessage(t, ch, 300*time.Millisecond)
	if got := subBacklog(t, tb.Broker, topic, "s"); got != 0 {
		t.Fatalf("after second restart backlog = %d, want 0", got)
	}
}
