package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/txn"
)

// End-to-end with pulsar-client-go against a broker serving the
// coordinator: what the transaction tests ask for, as a client
// sees it. (The participant side driven by raw commands is txn_test.go;
// the coordinator commands are txn_coordinator_test.go.)
//
// A producer that sends both in and outside transactions has batching
// off: pulsar-client-go v0.19's batch container keeps the last batch's
// txn id on its reused SEND command (apache/pulsar-client-go issue 1498),
// so a plain batch after a transactional one would go out in that
// transaction.

func earliestConsumer(t testing.TB, c pulsar.Client, topic, sub string, typ pulsar.SubscriptionType) pulsar.Consumer {
	t.Helper()
	return mustConsumer(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub, Type: typ,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
}

func newTxn(t testing.TB, c pulsar.Client, timeout time.Duration) pulsar.Transaction {
	t.Helper()
	tx, err := c.NewTransaction(timeout)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func sendTxn(t testing.TB, p pulsar.Producer, tx pulsar.Transaction, payloads ...string) {
	t.Helper()
	for _, s := range payloads {
		if _, err := p.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte(s), Transaction: tx}); err != nil {
			t.Fatalf("send %q in a transaction: %v", s, err)
		}
	}
}

// Messages produced in a transaction to two topics appear on both at
// commit and on neither before; an aborted transaction's never appear,
// also not to a new subscription after a restart.
func TestTxnE2ECommitAcrossTopicsAbortHides(t *testing.T) {
	tb := txnBroker(t, 2)
	c := tb.txnClient(t)
	ctx := ctxT(t)
	topics := []string{"persistent://public/default/" + newTopicName("txn-a"), "persistent://public/default/" + newTopicName("txn-b")}
	var prods []pulsar.Producer
	var conss []pulsar.Consumer
	for _, tp := range topics {
		prods = append(prods, mustProducer(t, c, pulsar.ProducerOptions{Topic: tp, SendTimeout: 0}))
		conss = append(conss, earliestConsumer(t, c, tp, "s", pulsar.Exclusive))
	}
	aborted := newTxn(t, c, time.Minute)
	committed := newTxn(t, c, time.Minute)
	for i, p := range prods {
		for j := range 3 {
			sendTxn(t, p, aborted, fmt.Sprintf("abort-%d-%d", i, j))
			sendTxn(t, p, committed, fmt.Sprintf("commit-%d-%d", i, j))
		}
	}
	for _, cons := range conss {
		expectNothing(t, cons, 300*time.Millisecond)
	}
	if err := aborted.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	for _, cons := range conss {
		expectNothing(t, cons, 200*time.Millisecond)
	}
	if err := committed.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for i, cons := range conss {
		for _, m := range expectPayloads(t, cons, 200*time.Millisecond,
			fmt.Sprintf("commit-%d-0", i), fmt.Sprintf("commit-%d-1", i), fmt.Sprintf("commit-%d-2", i)) {
			if err := cons.Ack(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	// After a restart a new subscription from the start sees the
	// committed messages only.
	for _, p := range prods {
		p.Close()
	}
	c.Close()
	tb2 := tb.restart(t)
	c2 := tb2.client(t)
	for i, tp := range topics {
		cons := earliestConsumer(t, c2, tp, "fresh", pulsar.Exclusive)
		expectPayloads(t, cons, 300*time.Millisecond,
			fmt.Sprintf("commit-%d-0", i), fmt.Sprintf("commit-%d-1", i), fmt.Sprintf("commit-%d-2", i))
	}
}

// A consumer never reads past an open transaction on its topic: plain
// messages sent after the transaction's first message wait with it, and
// at commit everything arrives in log order (transactional and plain
// interleaved, a batched transactional producer included). An aborted
// transaction's messages never arrive and plain ones after it flow.
func TestTxnE2EOpenTxnHoldsReadersCommitInOrder(t *testing.T) {
	tb := txnBroker(t, 1)
	c := tb.txnClient(t)
	topic := "persistent://public/default/" + newTopicName("txn-order")
	cons := earliestConsumer(t, c, topic, "s", pulsar.Exclusive)
	batched := mustProducer(t, c, pulsar.ProducerOptions{Topic: topic, SendTimeout: 0, BatchingMaxPublishDelay: 20 * time.Millisecond, BatchingMaxMessages: 3})
	txnp := mustProducer(t, c, pulsar.ProducerOptions{Topic: topic, SendTimeout: 0, DisableBatching: true})
	plain := mustProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})

	sendPlain(t, plain, "before")
	expectPayloads(t, cons, 200*time.Millisecond, "before")

	tx1 := newTxn(t, c, time.Minute)
	sendTxn(t, txnp, tx1, "t0")
	sendPlain(t, plain, "p0")
	sendTxn(t, txnp, tx1, "t1")
	sendPlain(t, plain, "p1")
	// Three in one batch entry.
	done := make(chan error, 3)
	for i := range 3 {
		batched.SendAsync(ctxT(t), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("b%d", i)), Transaction: tx1},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done <- err })
	}
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	sendPlain(t, plain, "p2")
	expectNothing(t, cons, 300*time.Millisecond)
	if err := tx1.Commit(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	expectPayloads(t, cons, 300*time.Millisecond, "t0", "p0", "t1", "p1", "b0", "b1", "b2", "p2")

	tx2 := newTxn(t, c, time.Minute)
	sendTxn(t, txnp, tx2, "a0")
	sendPlain(t, plain, "q0")
	sendTxn(t, txnp, tx2, "a1")
	expectNothing(t, cons, 200*time.Millisecond)
	if err := tx2.Abort(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	sendPlain(t, plain, "q1")
	expectPayloads(t, cons, 300*time.Millisecond, "q0", "q1")
}

// A transaction that times out is aborted by the coordinator: its acks
// are released (the message is delivered again) and its messages are
// never delivered.
func TestTxnE2ETimeoutReleasesAcksHidesMessages(t *testing.T) {
	tb := txnBroker(t, 1)
	c := tb.txnClient(t)
	ctx := ctxT(t)
	in := "persistent://public/default/" + newTopicName("txn-in")
	out := "persistent://public/default/" + newTopicName("txn-out")
	pin := mustProducer(t, c, pulsar.ProducerOptions{Topic: in})
	pout := mustProducer(t, c, pulsar.ProducerOptions{Topic: out, SendTimeout: 0, DisableBatching: true})
	sendPlain(t, pin, "input")
	cin := earliestConsumer(t, c, in, "proc", pulsar.Shared)
	cout := earliestConsumer(t, c, out, "reader", pulsar.Exclusive)
	m := receiveN(t, cin, 1)[0]
	tx := newTxn(t, c, 500*time.Millisecond)
	sendTxn(t, pout, tx, "output")
	if err := cin.AckWithTxn(m, tx); err != nil {
		t.Fatal(err)
	}
	co, err := tb.TxnCoordinator(ctx, tx.GetTxnID().MostSigBits)
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the timeout abort is logged", func() bool { return co.Stats().AbortedCount == 1 })
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("commit after the timeout succeeded")
	}
	// The released ack: the input is delivered again.
	expectPayloads(t, cin, 100*time.Millisecond, "input")
	expectNothing(t, cout, 300*time.Millisecond)
	// Later plain messages flow past the aborted one.
	sendPlain(t, pout, "plain")
	expectPayloads(t, cout, 200*time.Millisecond, "plain")
	if got := subBacklog(t, tb.Broker, in, "proc"); got != 1 {
		t.Fatalf("input backlog after the timeout = %d, want 1 (the ack was released)", got)
	}
}

// Conflicting acks, as Pulsar treats them: a second transaction
// acknowledging a message another holds is refused with
// TransactionConflict (and the client fails that transaction); so is a
// transaction acknowledging a message already acknowledged outside any
// transaction. A plain ack of a message a transaction holds is applied
// (Pulsar's subscription deletes it from the cursor and its pending-ack
// handle forgets the position): aborting the transaction then does not
// bring the message back. An aborted transaction's ack is released and
// the message comes again.
func TestTxnE2EConflictingAcks(t *testing.T) {
	tb := txnBroker(t, 1)
	c := tb.txnClient(t)
	topic := "persistent://public/default/" + newTopicName("txnack-e2e")
	cons := mustConsumer(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, AckWithResponse: true})
	plain := mustProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendPlain(t, plain, "m0", "m1", "m2", "m3")
	msgs := expectPayloads(t, cons, 200*time.Millisecond, "m0", "m1", "m2", "m3")
	isConflict := func(err error) bool { return err != nil && strings.Contains(err.Error(), "TransactionConflict") }

	// Two transactions, one message.
	tx1 := newTxn(t, c, time.Minute)
	if err := cons.AckWithTxn(msgs[0], tx1); err != nil {
		t.Fatal(err)
	}
	tx2 := newTxn(t, c, time.Minute)
	if err := cons.AckWithTxn(msgs[0], tx2); !isConflict(err) {
		t.Fatalf("a second transaction acknowledged the same message: %v", err)
	}
	if err := tx2.Commit(ctxT(t)); err == nil {
		t.Fatal("the transaction with a refused ack committed")
	}

	// Outside first, then in a transaction.
	if err := cons.Ack(msgs[1]); err != nil {
		t.Fatal(err)
	}
	tx3 := newTxn(t, c, time.Minute)
	if err := cons.AckWithTxn(msgs[1], tx3); !isConflict(err) {
		t.Fatalf("a transaction acknowledged a message acknowledged outside it: %v", err)
	}

	// In a transaction first, then outside: applied; the abort does not
	// bring it back.
	tx4 := newTxn(t, c, time.Minute)
	if err := cons.AckWithTxn(msgs[2], tx4); err != nil {
		t.Fatal(err)
	}
	if err := cons.Ack(msgs[2]); err != nil {
		t.Fatal(err)
	}
	// A released ack: in tx4 too, aborted with it.
	if err := cons.AckWithTxn(msgs[3], tx4); err != nil {
		t.Fatal(err)
	}
	// m0 (tx1), m2 (tx4 and plain: acked), m3 (tx4): backlog 2.
	if got := subBacklog(t, tb.Broker, topic, "s"); got != 2 {
		t.Fatalf("backlog with the transactions open = %d, want 2", got)
	}
	if err := tx4.Abort(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	again := expectPayloads(t, cons, 300*time.Millisecond, "m3")
	if err := tx1.Commit(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := cons.Ack(again[0]); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "backlog 0", func() bool { return subBacklog(t, tb.Broker, topic, "s") == 0 })
	expectNothing(t, cons, 200*time.Millisecond)
}

// Pending acks survive a restart: the messages a transaction acknowledged
// are not delivered to the subscription's consumers after the broker
// restarts while the transaction is open; the recovered coordinator then
// ends it (abort: delivered again; commit: gone for good, also after one
// more restart).
func TestTxnE2EPendingAcksSurviveRestart(t *testing.T) {
	tb := txnBroker(t, 1)
	c := tb.txnClient(t)
	topic := "persistent://public/default/" + newTopicName("txnack-restart")
	cons := earliestConsumer(t, c, topic, "s", pulsar.Shared)
	plain := mustProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendPlain(t, plain, "m0", "m1", "m2", "m3")
	msgs := expectPayloads(t, cons, 200*time.Millisecond, "m0", "m1", "m2", "m3")
	toCommit, toAbort := newTxn(t, c, time.Hour), newTxn(t, c, time.Hour)
	for i, tx := range []pulsar.Transaction{toCommit, toCommit, toAbort} {
		if err := cons.AckWithTxn(msgs[i], tx); err != nil {
			t.Fatal(err)
		}
	}
	// m3 stays unacknowledged: the restart redelivers it alone.
	cons.Close()
	plain.Close()
	c.Close()
	tb = tb.restart(t)
	c = tb.client(t)
	cons = earliestConsumer(t, c, topic, "s", pulsar.Shared)
	m3 := expectPayloads(t, cons, 300*time.Millisecond, "m3")
	if err := cons.Ack(m3[0]); err != nil {
		t.Fatal(err)
	}
	end := func(tx pulsar.Transaction, a txn.Action) {
		t.Helper()
		id := tx.GetTxnID()
		co, err := tb.TxnCoordinator(ctxT(t), id.MostSigBits)
		if err != nil {
			t.Fatal(err)
		}
		if err := co.End(ctxT(t), txn.ID{Most: id.MostSigBits, Least: id.LeastSigBits}, a); err != nil {
			t.Fatalf("%s %+v after the restart: %v", a, id, err)
		}
	}
	end(toAbort, txn.Abort)
	again := expectPayloads(t, cons, 300*time.Millisecond, "m2")
	if err := cons.Ack(again[0]); err != nil {
		t.Fatal(err)
	}
	end(toCommit, txn.Commit)
	waitUntil(t, "backlog 0", func() bool { return subBacklog(t, tb.Broker, topic, "s") == 0 })
	cons.Close()
	c.Close()
	tb = tb.restart(t)
	cons = earliestConsumer(t, tb.client(t), topic, "s", pulsar.Shared)
	expectNothing(t, cons, 300*time.Millisecond)
}
