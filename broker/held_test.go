package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// rawProducerID creates producer id on a raw connection.
func (r *rawClient) rawProducerID(topic string, id uint64) {
	r.t.Helper()
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
		Topic: ptr(topic), ProducerId: ptr(id), RequestId: ptr(100 + id),
	}})
	if f := r.next(); f.Type != pb.BaseCommand_PRODUCER_SUCCESS {
		r.t.Fatalf("PRODUCER %d answered %s", id, f.Type)
	}
}

// brokerInflightSends sums the unanswered SENDs of the broker's
// connections.
func brokerInflightSends(tb *testBroker) (n int64, conns int) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for c := range tb.mu.conns {
		n += c.inflightSends.Load()
	}
	return n, len(tb.mu.conns)
}

// Sends held by a Quota (producer_request_hold) of a producer that
// closes, or whose connection closes, are dropped without an answer:
// nothing is written to the client (a SEND_ERROR would close its whole
// connection), they are never published, and a closing connection does
// not wait for them.
func TestHeldSendsDroppedOnProducerAndConnectionClose(t *testing.T) {
	topic := "persistent://public/default/held"
	tb, gate := startHolding(t, topic)
	payload := strings.Repeat("x", 600)
	r := dialRaw(t, tb, true)
	r.rawProducerID(topic, 1)
	r.rawProducerID(topic, 2) // then: no producer is accepted over the quota
	// Two stored sends, then the quota holds.
	for seq := uint64(0); seq < 2; seq++ {
		r.write(pulsarproto.AppendSend(nil, &pulsarproto.SendHeader{ProducerID: 1, SequenceID: seq}, testEntry(seq, payload)))
		if f := r.next(); f.Type != pb.BaseCommand_SEND_RECEIPT || f.Cmd.SendReceipt.GetSequenceId() != seq {
			t.Fatalf("send %d answered %s", seq, f.Type)
		}
	}
	gate.hold.Store(true)
	for seq := uint64(2); seq < 5; seq++ {
		r.write(pulsarproto.AppendSend(nil, &pulsarproto.SendHeader{ProducerID: 1, SequenceID: seq}, testEntry(seq, payload)))
	}
	for seq := uint64(0); seq < 2; seq++ {
		r.write(pulsarproto.AppendSend(nil, &pulsarproto.SendHeader{ProducerID: 2, SequenceID: seq}, testEntry(seq, payload)))
	}
	waitUntil(t, "5 held sends", func() bool { return heldOn(t, tb, topic) == 5 })

	// CLOSE_PRODUCER: the held sends go, unanswered.
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_CLOSE_PRODUCER.Enum(), CloseProducer: &pb.CommandCloseProducer{
		ProducerId: ptr(uint64(1)), RequestId: ptr(uint64(7)),
	}})
	if f := r.next(); f.Type != pb.BaseCommand_SUCCESS || f.Cmd.Success.GetRequestId() != 7 {
		t.Fatalf("CLOSE_PRODUCER answered %s (a held send must not be answered)", f.Type)
	}
	if n := heldOn(t, tb, topic); n != 2 {
		t.Fatalf("%d held sends left after CLOSE_PRODUCER, want producer 2's 2", n)
	}
	if n, _ := brokerInflightSends(tb); n != 2 {
		t.Fatalf("%d sends counted in flight after CLOSE_PRODUCER, want 2", n)
	}

	// Then the connection goes, with producer 2's sends held.
	r.ping() // no answer to the held sends precedes the PONG
	start := time.Now()
	r.nc.Close()
	waitUntil(t, "the connection to close", func() bool { _, n := brokerInflightSends(tb); return n == 0 })
	if d := time.Since(start); d >= sendDrainTimeout {
		t.Fatalf("connection close took %v: it waited for held sends", d)
	}
	if n := heldOn(t, tb, topic); n != 0 {
		t.Fatalf("%d held sends left after the connection closed", n)
	}

	// The dropped sends were never published, even once the quota frees.
	if err := skipMessages(tb.Broker, ctxT(t), topic, "slow", -1); err != nil {
		t.Fatal(err)
	}
	st, err := topicStats(tb.Broker, ctxT(t), topic)
	if err != nil || st.MsgInCounter != 2 {
		t.Fatalf("stats after clear: in=%d (want 2) %v", st.MsgInCounter, err)
	}
}
