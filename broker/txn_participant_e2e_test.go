package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// End-to-end with pulsar-client-go against the in-process coordinator:
// the participant side as a client sees it.

// TestTxnE2EProduceCommitAbort: messages in a transaction stay
// invisible (and hold back a later plain message) until commit, then
// arrive in order; an aborted transaction's messages never arrive.
func TestTxnE2EProduceCommitAbort(t *testing.T) {
	tb := txnBroker(t, 1)
	c := tb.txnClient(t)
	topic := "persistent://public/default/" + newTopicName("txne2e")
	cons := mustConsumer(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	prod := mustProducer(t, c, pulsar.ProducerOptions{Topic: topic, SendTimeout: 0, BatchingMaxPublishDelay: 20 * time.Millisecond, BatchingMaxMessages: 3})
	plain := mustProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})

	tx1, err := c.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 3)
	for i := range 3 {
		prod.SendAsync(ctxT(t), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("t%d", i)), Transaction: tx1},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done <- err })
	}
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	sendPlain(t, plain, "p")
	expectNothing(t, cons, 300*time.Millisecond)
	if err := tx1.Commit(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	expectPayloads(t, cons, 300*time.Millisecond, "t0", "t1", "t2", "p")

	tx2, err := c.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := plain.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("a%d", i)), Transaction: tx2}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx2.Abort(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	sendPlain(t, plain, "q")
	expectPayloads(t, cons, 300*time.Millisecond, "q")
}

// TestTxnE2EAckWithTxn: AckWithTxn holds the ack until commit; a second
// transaction acknowledging the same message is refused (the client
// reports TransactionConflict as an error); an aborted
// transaction's ack is released and the message comes again.
func TestTxnE2EAckWithTxn(t *testing.T) {
	tb := txnBroker(t, 1)
	c := tb.txnClient(t)
	topic := "persistent://public/default/" + newTopicName("txnacke2e")
	cons := mustConsumer(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	plain := mustProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendPlain(t, plain, "m0", "m1")
	msgs := receiveN(t, cons, 2)

	tx1, err := c.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.AckWithTxn(msgs[0], tx1); err != nil {
		t.Fatal(err)
	}
	tx2, err := c.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.AckWithTxn(msgs[0], tx2); err == nil {
		t.Fatal("a second transaction acknowledged the same message")
	}
	// The client marks tx2 failed after the refused ack: tx3 goes on.
	tx3, err := c.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.AckWithTxn(msgs[1], tx3); err != nil {
		t.Fatal(err)
	}
	if got := subBacklog(t, tb.Broker, topic, "s"); got != 2 {
		t.Fatalf("backlog before the ends = %d, want 2", got)
	}
	if err := tx1.Commit(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "backlog 1 after commit", func() bool { return subBacklog(t, tb.Broker, topic, "s") == 1 })
	if err := tx3.Abort(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	again := expectPayloads(t, cons, 300*time.Millisecond, "m1")
	if err := cons.Ack(again[0]); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "backlog 0", func() bool { return subBacklog(t, tb.Broker, topic, "s") == 0 })
}
