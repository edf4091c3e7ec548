package broker

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// mixedEntries returns n entries of mixed sizes with distinct random
// bytes. The SEND frames of the small ones are read into the connection's
// reused frame buffer (and copied out by handleSend), those above
// pulsarproto.OwnedFrameThreshold into buffers of their own (kept as is).
func mixedEntries(n int) [][]byte {
	sizes := []int{40, 3000, 70 << 10, 300 << 10, 1, pulsarproto.OwnedFrameThreshold - 200, pulsarproto.OwnedFrameThreshold, 500}
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	var out [][]byte
	for i := range n {
		p := make([]byte, sizes[i%len(sizes)])
		for j := range p {
			p[j] = byte(rng.UintN(256))
		}
		out = append(out, testEntry(uint64(i), string(p)))
	}
	return out
}

// sendAll writes SENDs of entries (sequence ids from first) in one
// pipelined burst.
func (r *rawClient) sendAll(pid uint64, first uint64, entries [][]byte) {
	r.t.Helper()
	var b []byte
	for i, e := range entries {
		b = pulsarproto.AppendSend(b, &pulsarproto.SendHeader{ProducerID: pid, SequenceID: first + uint64(i)}, e)
	}
	r.write(b)
}

// receipts reads n SEND_RECEIPTs, in sequence order from first.
func (r *rawClient) receipts(first uint64, n int) {
	r.t.Helper()
	for i := 0; i < n; {
		f := r.next()
		if f.Type != pb.BaseCommand_SEND_RECEIPT {
			r.t.Fatalf("got %s, want SEND_RECEIPT %d", f.Type, first+uint64(i))
		}
		if got := f.Cmd.SendReceipt.GetSequenceId(); got != first+uint64(i) {
			r.t.Fatalf("receipt for %d, want %d", got, first+uint64(i))
		}
		i++
	}
}

// subscribeEarliest subscribes consumer 1 to topic (Exclusive, from the
// earliest entry) and grants it plenty of permits.
func (r *rawClient) subscribeEarliest(topic, sub string) {
	r.t.Helper()
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{
		Topic: ptr(topic), Subscription: ptr(sub), SubType: pb.CommandSubscribe_Exclusive.Enum(),
		ConsumerId: ptr(uint64(1)), RequestId: ptr(uint64(1)), InitialPosition: pb.CommandSubscribe_Earliest.Enum(),
	}})
	if f := r.next(); f.Type != pb.BaseCommand_SUCCESS {
		r.t.Fatalf("SUBSCRIBE answered %s", f.Type)
	}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_FLOW.Enum(), Flow: &pb.CommandFlow{ConsumerId: ptr(uint64(1)), MessagePermits: ptr(uint32(1 << 20))}})
}

// expectMessages reads MESSAGE frames and checks their entries against
// want, byte for byte and in order.
func (r *rawClient) expectMessages(want [][]byte) {
	r.t.Helper()
	for i := 0; i < len(want); {
		f := r.next()
		if f.Type != pb.BaseCommand_MESSAGE {
			continue
		}
		if !bytes.Equal(f.Payload, want[i]) {
			r.t.Fatalf("message %d: %d bytes differ from the %d sent", i, len(f.Payload), len(want[i]))
		}
		i++
	}
}

// TestSendEntriesIntact: entries of every size keep their bytes however
// long the broker holds them (entry cache, held sends, non-persistent
// dispatch) while the connection reads further frames: nothing keeps
// using the frame reader's reused buffer, and the owned buffers of large
// frames are not overwritten.
func TestSendEntriesIntact(t *testing.T) {
	entries := mixedEntries(24)
	t.Run("persistent", func(t *testing.T) {
		tb := startBroker(t, nil)
		topic := newTopicName("intact")
		p := dialRaw(t, tb, true)
		pid := p.producer(topic)
		p.sendAll(pid, 0, entries)
		p.receipts(0, len(entries))
		c := dialRaw(t, tb, true)
		c.subscribeEarliest(topic, "s")
		c.expectMessages(entries)
	})
	t.Run("non-persistent", func(t *testing.T) {
		tb := startBroker(t, nil)
		topic := "non-persistent://public/default/intact"
		c := dialRaw(t, tb, true)
		c.subscribeEarliest(topic, "s")
		p := dialRaw(t, tb, true)
		pid := p.producer(topic)
		p.sendAll(pid, 0, entries)
		p.receipts(0, len(entries))
		c.expectMessages(entries)
	})
	t.Run("held", func(t *testing.T) {
		topic := "persistent://public/default/intact-held"
		tb, gate := startHolding(t, topic)
		p := dialRaw(t, tb, true)
		pid := p.producer(topic)
		// Two stored sends, then the quota holds the rest.
		fill := mixedEntries(2)
		p.sendAll(pid, 0, fill)
		p.receipts(0, len(fill))
		gate.hold.Store(true)
		p.sendAll(pid, 2, entries)
		waitUntil(t, "every send held", func() bool { return heldOn(t, tb, topic) == len(entries) })
		if err := skipMessages(tb.Broker, ctxT(t), topic, "slow", -1); err != nil {
			t.Fatal(err)
		}
		p.receipts(2, len(entries))
		c := dialRaw(t, tb, true)
		c.subscribeEarliest(topic, "all")
		c.expectMessages(append(fill, entries...))
	})
}
