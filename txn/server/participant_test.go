package server

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/txn"
)

// Participant-side tests: transactions are driven through txn.Participant
// (as an in-process coordinator does) and raw SENDs / ACKs carrying txn
// ids (as a client does after ADD_PARTITION_TO_TXN).

// txnSendRaw sends payload on raw producer pid in transaction id (seq)
// and waits for its receipt.
func txnSendRaw(t testing.TB, r *rawClient, pid, seq uint64, id txn.ID, payload string) {
	t.Helper()
	r.write(pulsarproto.AppendSend(nil, &pulsarproto.SendHeader{ProducerID: pid, SequenceID: seq, TxnidMostBits: id.Most, TxnidLeastBits: id.Least}, testEntry(seq, payload)))
	for {
		f := r.next()
		switch f.Type {
		case pb.BaseCommand_SEND_RECEIPT:
			if got := f.Cmd.SendReceipt.GetSequenceId(); got != seq {
				t.Fatalf("receipt for seq %d, want %d", got, seq)
			}
			return
		case pb.BaseCommand_SEND_ERROR:
			t.Fatalf("txn send %d: %s %s", seq, f.Cmd.SendError.GetError(), f.Cmd.SendError.GetMessage())
		}
	}
}

// expectPayloads receives exactly want, in order, then nothing more
// within quiet.
func expectPayloads(t testing.TB, c pulsar.Consumer, quiet time.Duration, want ...string) []pulsar.Message {
	t.Helper()
	msgs := receiveN(t, c, len(want))
	for i, m := range msgs {
		if string(m.Payload()) != want[i] {
			got := make([]string, len(msgs))
			for j, m := range msgs {
				got[j] = string(m.Payload())
			}
			t.Fatalf("received %q, want %q", got, want)
		}
	}
	expectNothing(t, c, quiet)
	return msgs
}

// expectNothing checks that c receives no message within d (the
// negative half of a visibility check: there is no event to wait for).
func expectNothing(t testing.TB, c pulsar.Consumer, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if m, err := c.Receive(ctx); err == nil {
		t.Fatalf("unexpected message %q at %v", m.Payload(), m.ID())
	}
}

func sendPlain(t testing.TB, p pulsar.Producer, payloads ...string) {
	t.Helper()
	for _, s := range payloads {
		if _, err := p.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte(s)}); err != nil {
			t.Fatal(err)
		}
	}
}

func subBacklog(t testing.TB, b *brokertest.Broker, topic, sub string) int64 {
	t.Helper()
	st, err := b.Admin().Reads.TopicStats(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	return st.Subscriptions[sub].MsgBacklog
}

// TestTxnProduceVisibleOnCommit: messages sent in a transaction are
// stored at once but invisible; a consumer never reads past the open
// transaction (a plain message after it waits too); commit releases
// everything in log order; the commit marker is never delivered; the
// backlog and the last message id stop at the open transaction.
func TestTxnProduceVisibleOnCommit(t *testing.T) {
	tb := txnBroker(t, 1)
	topic := "persistent://public/default/" + newTopicName("txnvis")
	cl := tb.client(t)
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	r := dialRaw(t, tb, true)
	pid := r.producer(topic)
	a := txn.ID{Most: 1, Least: 7}

	sendPlain(t, prod, "p0")
	txnSendRaw(t, r, pid, 0, a, "a1")
	txnSendRaw(t, r, pid, 1, a, "a2")
	sendPlain(t, prod, "p1")

	first := expectPayloads(t, cons, 300*time.Millisecond, "p0")
	lastIs := func(want pulsar.MessageID) {
		t.Helper()
		ids, err := cons.GetLastMessageIDs()
		if err != nil || len(ids) != 1 {
			t.Fatalf("GetLastMessageIDs: %v %v", ids, err)
		}
		if ids[0].LedgerID() != want.LedgerID() || ids[0].EntryID() != want.EntryID() {
			t.Fatalf("last message id %v, want %v", ids[0], want)
		}
	}
	lastIs(first[0].ID()) // not a1, a2 or p1
	// p0 (delivered, unacked) only: not a1, a2, p1.
	if st := subBacklog(t, tb.Broker, topic, "s"); st != 1 {
		t.Fatalf("backlog with the transaction open = %d, want 1", st)
	}

	if err := tb.EndOnPartition(ctxT(t), topic, a, txn.Commit); err != nil {
		t.Fatal(err)
	}
	msgs := expectPayloads(t, cons, 300*time.Millisecond, "a1", "a2", "p1")
	// Idempotent: the same end again succeeds; the other end conflicts.
	if err := tb.EndOnPartition(ctxT(t), topic, a, txn.Commit); err != nil {
		t.Fatalf("second commit: %v", err)
	}
	if err := tb.EndOnPartition(ctxT(t), topic, a, txn.Abort); !errors.Is(err, ErrConflict) {
		t.Fatalf("abort after commit: %v, want ErrConflict", err)
	}
	lastIs(msgs[2].ID()) // p1: the commit marker after it is no message
	sendPlain(t, prod, "p2")
	p2 := expectPayloads(t, cons, 300*time.Millisecond, "p2") // the marker is skipped
	lastIs(p2[0].ID())
	for _, m := range append(append(first, msgs...), p2...) {
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "backlog 0", func() bool { return subBacklog(t, tb.Broker, topic, "s") == 0 })
}

// TestTxnBacklogStopsAtOpenTransaction: a subscription's backlog counts
// only what is before the first entry of the oldest open transaction,
// and everything once it ends.
func TestTxnBacklogStopsAtOpenTransaction(t *testing.T) {
	tb := txnBroker(t, 1)
	topic := "persistent://public/default/" + newTopicName("txnbacklog")
	cl := tb.client(t)
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	cons.Close() // a durable subscription with no consumer: backlog only
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	r := dialRaw(t, tb, true)
	pid := r.producer(topic)
	sendPlain(t, prod, "p0", "p1")
	x, y := txn.ID{Most: 2, Least: 1}, txn.ID{Most: 2, Least: 2}
	txnSendRaw(t, r, pid, 0, x, "x1")
	sendPlain(t, prod, "p2")
	txnSendRaw(t, r, pid, 1, y, "y1")
	sendPlain(t, prod, "p3")
	if got := subBacklog(t, tb.Broker, topic, "s"); got != 2 {
		t.Fatalf("backlog with x open = %d, want 2", got)
	}
	// Ending the younger transaction does not move the bound.
	if err := tb.EndOnPartition(ctxT(t), topic, y, txn.Commit); err != nil {
		t.Fatal(err)
	}
	if got := subBacklog(t, tb.Broker, topic, "s"); got != 2 {
		t.Fatalf("backlog with x open, y committed = %d, want 2", got)
	}
	if err := tb.EndOnPartition(ctxT(t), topic, x, txn.Abort); err != nil {
		t.Fatal(err)
	}
	// p0 p1 x1(aborted) p2 y1 p3 + 2 markers: all entries count until a
	// dispatcher acknowledges the aborted one and the markers.
	if got := subBacklog(t, tb.Broker, topic, "s"); got != 8 {
		t.Fatalf("backlog after both ended = %d, want 8", got)
	}
	cons = mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	msgs := expectPayloads(t, cons, 300*time.Millisecond, "p0", "p1", "p2", "y1", "p3")
	for _, m := range msgs {
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "backlog 0", func() bool { return subBacklog(t, tb.Broker, topic, "s") == 0 })
}

// TestTxnAbortHiddenAcrossRestart: aborted messages are never delivered,
// also after a restart; a transaction open at the restart still holds
// readers back and its messages appear once it commits.
func TestTxnAbortHiddenAcrossRestart(t *testing.T) {
	tb := txnBroker(t, 1)
	topic := "persistent://public/default/" + newTopicName("txnabort")
	cl := tb.client(t)
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	r := dialRaw(t, tb, true)
	pid := r.producer(topic)
	ab, open := txn.ID{Most: 3, Least: 1}, txn.ID{Most: 3, Least: 2}
	sendPlain(t, prod, "p0")
	txnSendRaw(t, r, pid, 0, ab, "ab1")
	sendPlain(t, prod, "p1")
	txnSendRaw(t, r, pid, 1, ab, "ab2")
	if err := tb.EndOnPartition(ctxT(t), topic, ab, txn.Abort); err != nil {
		t.Fatal(err)
	}
	txnSendRaw(t, r, pid, 2, open, "o1")
	sendPlain(t, prod, "p2")

	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "before", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	expectPayloads(t, cons, 300*time.Millisecond, "p0", "p1")
	cons.Close()
	cl.Close()
	r.nc.Close()

	tb = tb.restart(t)
	cl = tb.client(t)
	cons = mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "after", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	expectPayloads(t, cons, 300*time.Millisecond, "p0", "p1")
	// A late abort of the aborted transaction is idempotent; a commit of
	// it conflicts.
	if err := tb.EndOnPartition(ctxT(t), topic, ab, txn.Abort); err != nil {
		t.Fatal(err)
	}
	if err := tb.EndOnPartition(ctxT(t), topic, ab, txn.Commit); !errors.Is(err, ErrConflict) {
		t.Fatalf("commit after abort: %v", err)
	}
	if err := tb.EndOnPartition(ctxT(t), topic, open, txn.Commit); err != nil {
		t.Fatal(err)
	}
	expectPayloads(t, cons, 300*time.Millisecond, "o1", "p2")

	// And once more after a second restart (state from the snapshot).
	cons.Close()
	cl.Close()
	tb = tb.restart(t)
	cl = tb.client(t)
	rd, err := cl.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var got []string
	for rd.HasNext() {
		m, err := rd.Next(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(m.Payload()))
	}
	if fmt.Sprint(got) != "[p0 p1 o1 p2]" {
		t.Fatalf("reader after restarts got %q", got)
	}
}

// TestTxnEndOnPartitionCommand: END_TXN_ON_PARTITION over the wire is
// answered with the request id; a conflicting end gets
// TransactionConflict.
func TestTxnEndOnPartitionCommand(t *testing.T) {
	tb := txnBroker(t, 1)
	topic := "persistent://public/default/" + newTopicName("txnwire")
	r := dialRaw(t, tb, true)
	pid := r.producer(topic)
	id := txn.ID{Most: 4, Least: 9}
	txnSendRaw(t, r, pid, 0, id, "w1")
	end := func(rid uint64, a pb.TxnAction) *pb.CommandEndTxnOnPartitionResponse {
		t.Helper()
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_PARTITION.Enum(), EndTxnOnPartition: &pb.CommandEndTxnOnPartition{
			RequestId: ptr(rid), TxnidMostBits: ptr(id.Most), TxnidLeastBits: ptr(id.Least), Topic: ptr(topic), TxnAction: a.Enum(),
		}})
		for {
			f := r.next()
			if f.Type == pb.BaseCommand_END_TXN_ON_PARTITION_RESPONSE {
				resp := f.Cmd.EndTxnOnPartitionResponse
				if resp.GetRequestId() != rid || resp.GetTxnidMostBits() != id.Most || resp.GetTxnidLeastBits() != id.Least {
					t.Fatalf("response %v for request %d", resp, rid)
				}
				return resp
			}
		}
	}
	if resp := end(10, pb.TxnAction_ABORT); resp.Error != nil {
		t.Fatalf("abort: %s %s", resp.GetError(), resp.GetMessage())
	}
	if resp := end(11, pb.TxnAction_ABORT); resp.Error != nil {
		t.Fatalf("second abort: %s %s", resp.GetError(), resp.GetMessage())
	}
	if resp := end(12, pb.TxnAction_COMMIT); resp.GetError() != pb.ServerError_TransactionConflict {
		t.Fatalf("commit after abort: %v", resp)
	}
	cons := mustConsumer(t, tb.client(t), pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	expectNothing(t, cons, 300*time.Millisecond)
	// A transaction of a topic that never used transactions ends fine.
	if err := tb.EndOnPartition(ctxT(t), "persistent://public/default/"+newTopicName("none"), id, txn.Commit); err != nil {
		t.Fatal(err)
	}
}

// txnEvent is a frame a raw consumer received (MESSAGE, ACK_RESPONSE).
type txnEvent struct {
	typ      pb.BaseCommand_Type
	pos      position
	reqID    uint64
	ackError pb.ServerError
	hasError bool
}

// newTxnConsumer subscribes a raw consumer (id 1) with 1000 permits.
func newTxnConsumer(t testing.TB, tb *testBroker, topic, sub string, typ pb.CommandSubscribe_SubType) (*rawClient, chan txnEvent) {
	t.Helper()
	r := dialRaw(t, tb, true)
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{
		Topic: ptr(topic), Subscription: ptr(sub), SubType: typ.Enum(),
		ConsumerId: ptr(uint64(1)), RequestId: ptr(uint64(1)),
		InitialPosition: pb.CommandSubscribe_Earliest.Enum(),
	}})
	if f := r.next(); f.Type != pb.BaseCommand_SUCCESS {
		t.Fatalf("SUBSCRIBE answered %s", f.Type)
	}
	_ = r.nc.SetReadDeadline(time.Time{})
	ch := make(chan txnEvent, 1024)
	go func() {
		defer close(ch)
		for {
			f, err := r.ReadFrame()
			if err != nil {
				return
			}
			ev := txnEvent{typ: f.Type}
			switch f.Type {
			case pb.BaseCommand_MESSAGE:
				ev.pos = position{LedgerID: int64(f.Cmd.Message.MessageId.GetLedgerId()), EntryID: int64(f.Cmd.Message.MessageId.GetEntryId())}
			case pb.BaseCommand_ACK_RESPONSE:
				ev.reqID = f.Cmd.AckResponse.GetRequestId()
				ev.hasError = f.Cmd.AckResponse.Error != nil
				ev.ackError = f.Cmd.AckResponse.GetError()
			default:
				continue
			}
			ch <- ev
		}
	}()
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_FLOW.Enum(), Flow: &pb.CommandFlow{ConsumerId: ptr(uint64(1)), MessagePermits: ptr(uint32(1000))}})
	return r, ch
}

func nextEvent(t testing.TB, ch chan txnEvent, typ pb.BaseCommand_Type) txnEvent {
	t.Helper()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("connection closed waiting for %s", typ)
			}
			if ev.typ == typ {
				return ev
			}
		case <-timer.C:
			t.Fatalf("no %s", typ)
		}
	}
}

func noMessage(t testing.TB, ch chan txnEvent, d time.Duration) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case ev := <-ch:
			if ev.typ == pb.BaseCommand_MESSAGE {
				t.Fatalf("unexpected message at %v", ev.pos)
			}
		case <-timer.C:
			return
		}
	}
}

// ackRaw acknowledges pos (in transaction id unless nil) with a request
// id and returns the ACK_RESPONSE.
func ackRaw(t testing.TB, r *rawClient, ch chan txnEvent, rid uint64, id *txn.ID, cumulative bool, pos position) txnEvent {
	t.Helper()
	typ := pb.CommandAck_Individual
	if cumulative {
		typ = pb.CommandAck_Cumulative
	}
	m := &pb.CommandAck{ConsumerId: ptr(uint64(1)), AckType: typ.Enum(), RequestId: ptr(rid),
		MessageId: []*pb.MessageIdData{{LedgerId: ptr(uint64(pos.LedgerID)), EntryId: ptr(uint64(pos.EntryID))}}}
	if id != nil {
		m.TxnidMostBits, m.TxnidLeastBits = ptr(id.Most), ptr(id.Least)
	}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_ACK.Enum(), Ack: m})
	ev := nextEvent(t, ch, pb.BaseCommand_ACK_RESPONSE)
	if ev.reqID != rid {
		t.Fatalf("ack response for request %d, want %d", ev.reqID, rid)
	}
	return ev
}

// TestTxnPendingAcks: an ack in a transaction is answered, holds the
// message (not redelivered, also across a restart), conflicts are
// refused with TransactionConflict (two transactions; a transaction
// after a plain ack), abort releases the message, commit applies it.
func TestTxnPendingAcks(t *testing.T) {
	tb := txnBroker(t, 1)
	topic := "persistent://public/default/" + newTopicName("txnack")
	cl := tb.client(t)
	mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"}).Close()
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendPlain(t, prod, "m0", "m1", "m2")

	r, ch := newTxnConsumer(t, tb, topic, "s", pb.CommandSubscribe_Exclusive)
	var m [3]position
	for i := range m {
		m[i] = nextEvent(t, ch, pb.BaseCommand_MESSAGE).pos
	}
	x, y := txn.ID{Most: 5, Least: 1}, txn.ID{Most: 5, Least: 2}
	if ev := ackRaw(t, r, ch, 10, &x, false, m[0]); ev.hasError {
		t.Fatalf("txn ack: %s", ev.ackError)
	}
	if ev := ackRaw(t, r, ch, 11, &x, false, m[0]); ev.hasError {
		t.Fatalf("same txn acks again: %s", ev.ackError)
	}
	if ev := ackRaw(t, r, ch, 12, &y, false, m[0]); ev.ackError != pb.ServerError_TransactionConflict {
		t.Fatalf("second transaction on the same message: %v", ev)
	}
	if ev := ackRaw(t, r, ch, 13, nil, false, m[1]); ev.hasError {
		t.Fatalf("plain ack: %s", ev.ackError)
	}
	if ev := ackRaw(t, r, ch, 14, &y, false, m[1]); ev.ackError != pb.ServerError_TransactionConflict {
		t.Fatalf("transaction after a plain ack: %v", ev)
	}
	// Redeliver everything unacked: m2 only (m0 is held by x).
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_REDELIVER_UNACKNOWLEDGED_MESSAGES.Enum(), RedeliverUnacknowledgedMessages: &pb.CommandRedeliverUnacknowledgedMessages{ConsumerId: ptr(uint64(1))}})
	if got := nextEvent(t, ch, pb.BaseCommand_MESSAGE).pos; got != m[2] {
		t.Fatalf("redelivered %v, want m2 %v", got, m[2])
	}
	noMessage(t, ch, 300*time.Millisecond)
	// m0 (held) and m2 are not acknowledged: backlog 2.
	if got := subBacklog(t, tb.Broker, topic, "s"); got != 2 {
		t.Fatalf("backlog = %d, want 2", got)
	}

	r.nc.Close()
	cl.Close()
	tb = tb.restart(t)
	r, ch = newTxnConsumer(t, tb, topic, "s", pb.CommandSubscribe_Exclusive)
	if got := nextEvent(t, ch, pb.BaseCommand_MESSAGE).pos; got != m[2] {
		t.Fatalf("after restart delivered %v, want m2 %v", got, m[2])
	}
	noMessage(t, ch, 300*time.Millisecond)
	// The pending ack survived: y still conflicts on m0.
	if ev := ackRaw(t, r, ch, 20, &y, false, m[0]); ev.ackError != pb.ServerError_TransactionConflict {
		t.Fatalf("after restart, second transaction on m0: %v", ev)
	}
	// Abort releases m0: redelivered.
	if err := tb.EndOnSubscription(ctxT(t), topic, "s", x, txn.Abort); err != nil {
		t.Fatal(err)
	}
	if got := nextEvent(t, ch, pb.BaseCommand_MESSAGE).pos; got != m[0] {
		t.Fatalf("after abort delivered %v, want m0 %v", got, m[0])
	}
	// x is over: acking in it again is refused.
	if ev := ackRaw(t, r, ch, 21, &x, false, m[0]); ev.ackError != pb.ServerError_InvalidTxnStatus {
		t.Fatalf("ack in an aborted transaction: %v", ev)
	}
	// y acks m0 and m2 and commits: nothing left.
	if ev := ackRaw(t, r, ch, 22, &y, false, m[0]); ev.hasError {
		t.Fatalf("y acks m0: %s", ev.ackError)
	}
	if ev := ackRaw(t, r, ch, 23, &y, false, m[2]); ev.hasError {
		t.Fatalf("y acks m2: %s", ev.ackError)
	}
	if got := subBacklog(t, tb.Broker, topic, "s"); got != 2 {
		t.Fatalf("backlog before commit = %d, want 2", got)
	}
	if err := tb.EndOnSubscription(ctxT(t), topic, "s", y, txn.Commit); err != nil {
		t.Fatal(err)
	}
	if err := tb.EndOnSubscription(ctxT(t), topic, "s", y, txn.Commit); err != nil {
		t.Fatalf("second commit: %v", err)
	}
	if err := tb.EndOnSubscription(ctxT(t), topic, "s", y, txn.Abort); !errors.Is(err, ErrConflict) {
		t.Fatalf("abort after commit: %v", err)
	}
	waitUntil(t, "backlog 0", func() bool { return subBacklog(t, tb.Broker, topic, "s") == 0 })

	// Committed acks stay applied after a restart.
	r.nc.Close()
	tb = tb.restart(t)
	_, ch = newTxnConsumer(t, tb, topic, "s", pb.CommandSubscribe_Exclusive)
	noMessage(t, ch, 300*time.Millisecond)
}

// TestTxnCumulativeAck: a cumulative ack in a transaction is refused on a
// Shared subscription, conflicts with another transaction's, and moves
// the mark-delete position only at commit.
func TestTxnCumulativeAck(t *testing.T) {
	tb := txnBroker(t, 1)
	topic := "persistent://public/default/" + newTopicName("txncum")
	cl := tb.client(t)
	mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"}).Close()
	mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sh", Type: pulsar.Shared}).Close()
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendPlain(t, prod, "m0", "m1", "m2")
	x, y := txn.ID{Most: 6, Least: 1}, txn.ID{Most: 6, Least: 2}

	rs, chs := newTxnConsumer(t, tb, topic, "sh", pb.CommandSubscribe_Shared)
	p := nextEvent(t, chs, pb.BaseCommand_MESSAGE).pos
	if ev := ackRaw(t, rs, chs, 5, &x, true, p); ev.ackError != pb.ServerError_NotAllowedError {
		t.Fatalf("cumulative txn ack on Shared: %v", ev)
	}

	r, ch := newTxnConsumer(t, tb, topic, "s", pb.CommandSubscribe_Failover)
	var m [3]position
	for i := range m {
		m[i] = nextEvent(t, ch, pb.BaseCommand_MESSAGE).pos
	}
	if ev := ackRaw(t, r, ch, 10, &x, true, m[1]); ev.hasError {
		t.Fatalf("cumulative txn ack: %s", ev.ackError)
	}
	if ev := ackRaw(t, r, ch, 11, &y, true, m[2]); ev.ackError != pb.ServerError_TransactionConflict {
		t.Fatalf("second transaction's cumulative ack: %v", ev)
	}
	if got := subBacklog(t, tb.Broker, topic, "s"); got != 3 {
		t.Fatalf("backlog before commit = %d, want 3", got)
	}
	if err := tb.EndOnSubscription(ctxT(t), topic, "s", x, txn.Commit); err != nil {
		t.Fatal(err)
	}
	if got := subBacklog(t, tb.Broker, topic, "s"); got != 1 {
		t.Fatalf("backlog after commit = %d, want 1", got)
	}
	// Within the acknowledged range now: a conflict.
	if ev := ackRaw(t, r, ch, 12, &y, true, m[0]); ev.ackError != pb.ServerError_TransactionConflict {
		t.Fatalf("cumulative ack below mark-delete: %v", ev)
	}
}
