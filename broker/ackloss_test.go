package broker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	pb "github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// rawEvent is what the test needs of a received frame (the frame reader
// reuses its decoded command, so the reading goroutine copies it out).
type rawEvent struct {
	typ           pb.BaseCommand_Type
	ledger, entry uint64
	ackErr        bool
}

// rawSub subscribes consumer id 1 on r and returns a channel of every frame
// the connection receives from then on (read by a goroutine that stops
// when the connection closes).
func (r *rawClient) rawSub(topic, sub string, typ pb.CommandSubscribe_SubType, permits uint32) <-chan rawEvent {
	r.t.Helper()
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{
		Topic: ptr(topic), Subscription: ptr(sub), SubType: typ.Enum(),
		ConsumerId: ptr(uint64(1)), RequestId: ptr(uint64(1)),
		InitialPosition: pb.CommandSubscribe_Earliest.Enum(),
	}})
	if f := r.next(); f.Type != pb.BaseCommand_SUCCESS {
		r.t.Fatalf("SUBSCRIBE answered %s", f.Type)
	}
	_ = r.nc.SetReadDeadline(time.Time{})
	ch := make(chan rawEvent, 1024)
	go func() {
		defer close(ch)
		for {
			f, err := r.fr.Next()
			if err != nil {
				return
			}
			ev := rawEvent{typ: f.Type}
			switch f.Type {
			case pb.BaseCommand_MESSAGE:
				ev.ledger = f.Cmd.Message.MessageId.GetLedgerId()
				ev.entry = f.Cmd.Message.MessageId.GetEntryId()
			case pb.BaseCommand_ACK_RESPONSE:
				ev.ackErr = f.Cmd.AckResponse.Error != nil
			}
			ch <- ev
		}
	}()
	if permits > 0 {
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_FLOW.Enum(), Flow: &pb.CommandFlow{
			ConsumerId: ptr(uint64(1)), MessagePermits: ptr(permits)}})
	}
	return ch
}

// A cumulative ACK on a Shared or Key_Shared subscription is ignored, as
// Pulsar ignores it: the messages another consumer holds unacked are
// redelivered when that consumer goes. The Go client refuses such an ack
// locally, so the raw client sends it.
func TestCumulativeAckIgnoredOnSharedSubscriptions(t *testing.T) {
	for _, typ := range []pb.CommandSubscribe_SubType{pb.CommandSubscribe_Shared, pb.CommandSubscribe_Key_Shared} {
		t.Run(typ.String(), func(t *testing.T) {
			tb := startBroker(t, nil)
			topic := newTopicName("cumshared")
			a, b := dialRaw(t, tb, true), dialRaw(t, tb, true)
			fa := a.rawSub(topic, "s", typ, 1000)
			fb := b.rawSub(topic, "s", typ, 1000)
			prod := mustProducer(t, tb.client(t), pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
			const n = 40
			sendAsyncAll(t, prod, n, func(i int) *pulsar.ProducerMessage {
				return &pulsar.ProducerMessage{Key: fmt.Sprintf("k%d", i), Payload: []byte(fmt.Sprint(i))}
			})
			got := map[string][]int64{} // consumer → entry ids
			var ledger uint64
			timeout := time.After(20 * time.Second)
			for len(got["a"])+len(got["b"]) < n {
				select {
				case f := <-fa:
					if f.typ == pb.BaseCommand_MESSAGE {
						ledger = f.ledger
						got["a"] = append(got["a"], int64(f.entry))
					}
				case f := <-fb:
					if f.typ == pb.BaseCommand_MESSAGE {
						ledger = f.ledger
						got["b"] = append(got["b"], int64(f.entry))
					}
				case <-timeout:
					t.Fatalf("received %d+%d of %d", len(got["a"]), len(got["b"]), n)
				}
			}
			// The acker is the consumer holding the highest entry; the
			// other must hold something below it.
			hi, lo := "a", "b"
			if maxOf(got["b"]) > maxOf(got["a"]) {
				hi, lo = "b", "a"
			}
			if len(got[lo]) == 0 {
				t.Fatalf("dispatch gave every message to one consumer (%v)", got)
			}
			acker := map[string]*rawClient{"a": a, "b": b}[hi]
			ackerCh := map[string]<-chan rawEvent{"a": fa, "b": fb}[hi]
			acker.send(&pb.BaseCommand{Type: pb.BaseCommand_ACK.Enum(), Ack: &pb.CommandAck{
				ConsumerId: ptr(uint64(1)), AckType: pb.CommandAck_Cumulative.Enum(),
				MessageId: []*pb.MessageIdData{{LedgerId: ptr(ledger), EntryId: ptr(uint64(maxOf(got[hi])))}},
				RequestId: ptr(uint64(77)),
			}})
			for f := range ackerCh {
				if f.typ == pb.BaseCommand_ACK_RESPONSE {
					if f.ackErr {
						t.Fatal("cumulative ack answered with an error")
					}
					break
				}
			}
			// The other consumer leaves without acking: everything it held
			// comes to the acker again.
			map[string]*rawClient{"a": a, "b": b}[lo].nc.Close()
			want := map[int64]bool{}
			for _, e := range got[lo] {
				want[e] = true
			}
			timeout = time.After(20 * time.Second)
			for len(want) > 0 {
				select {
				case f := <-ackerCh:
					if f.typ == pb.BaseCommand_MESSAGE {
						delete(want, int64(f.entry))
					}
				case <-timeout:
					t.Fatalf("%d of %d messages of the departed consumer never redelivered", len(want), len(got[lo]))
				}
			}
		})
	}
}

func maxOf(xs []int64) int64 {
	m := int64(-1)
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// A zero-queue consumer (permits one at a time) on a topic holding unacked
// messages, with the topic unloaded while it waits: after the reconnect it
// receives every message, in order, starting with the first.
func TestZeroQueueConsumerAcrossUnload(t *testing.T) {
	for _, tc := range []struct {
		typ         pulsar.SubscriptionType
		unloadFirst bool
	}{{pulsar.Exclusive, false}, {pulsar.Exclusive, true}, {pulsar.Failover, true}, {pulsar.Shared, true}} {
		typ, unloadFirst := tc.typ, tc.unloadFirst
		t.Run(fmt.Sprint(typ, unloadFirst), func(t *testing.T) {
			tb := startBroker(t, nil)
			topic := "persistent://public/default/" + newTopicName("zeroq")
			cl := tb.client(t)
			prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
			const n = 10
			sendAsyncAll(t, prod, n, func(i int) *pulsar.ProducerMessage {
				return &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i))}
			})
			cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: typ,
				EnableZeroQueueConsumer: true, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
			if err != nil {
				t.Fatal(err)
			}
			defer cons.Close()
			if unloadFirst {
				if _, err := tb.UnloadTopic(topic); err != nil {
					t.Fatalf("unload: %v", err)
				}
			}
			// Receive is waiting (its permit sent) when the topic unloads.
			type res struct {
				m   pulsar.Message
				err error
			}
			first := make(chan res, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				m, err := cons.Receive(ctx)
				first <- res{m, err}
			}()
			if _, err := tb.UnloadTopic(topic); err != nil {
				t.Fatalf("unload: %v", err)
			}
			r := <-first
			if errors.Is(r.err, context.DeadlineExceeded) && clientLostZeroQueuePermit(t, tb, topic) {
				// The client's permit was lost, not the broker's: a new
				// Receive sends one again.
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				r.m, r.err = cons.Receive(ctx)
				cancel()
			}
			if r.err != nil {
				t.Fatal(r.err)
			}
			got := []string{string(r.m.Payload())}
			if err := cons.Ack(r.m); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for len(got) < n {
				m, err := cons.Receive(ctx)
				if err != nil {
					t.Fatalf("receive after %v: %v", got, err)
				}
				got = append(got, string(m.Payload()))
				if err := cons.Ack(m); err != nil {
					t.Fatal(err)
				}
			}
			seen := map[string]bool{}
			for _, g := range got {
				seen[g] = true
			}
			for i := range n {
				if !seen[fmt.Sprint(i)] {
					t.Fatalf("message %d never delivered; got %v", i, got)
				}
			}
			if typ != pulsar.Shared {
				for i, g := range got {
					if g != fmt.Sprint(i) {
						t.Fatalf("out of order on %v: %v", typ, got)
					}
				}
			}
		})
	}
}

// clientLostZeroQueuePermit reports, for a zero-queue consumer whose
// Receive timed out, whether the broker is owed nothing: its only
// consumer holds no permit and no unacknowledged message while the
// subscription has a backlog. pulsar-client-go v0.19.0 can lose the one
// permit a waiting zero-queue Receive re-sends after a reconnect: the
// reconnect adds it (and sends it once the count reaches 1) while the
// dispatcher resets the count on the same reconnect, and a reset between
// the add and the send drops it (consumer_partition.go, flowIfNeed's
// compare-and-swap). Anything else — a permit the broker holds with a
// backlog it does not send — is the broker's fault and fails the test.
func clientLostZeroQueuePermit(t *testing.T, tb *testBroker, topic string) bool {
	t.Helper()
	st, err := topicStats(tb.Broker, context.Background(), topic)
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	s := st.Subscriptions["s"]
	if len(s.Consumers) != 1 || s.MsgBacklog == 0 {
		t.Fatalf("receive timed out; subscription %+v", s)
	}
	c := s.Consumers[0]
	if c.AvailablePermits != 0 || c.UnackedMessages != 0 {
		t.Fatalf("receive timed out with the broker holding %d permits, %d unacked, backlog %d",
			c.AvailablePermits, c.UnackedMessages, s.MsgBacklog)
	}
	t.Logf("receive timed out with no permit at the broker (backlog %d): the client lost it; receiving again", s.MsgBacklog)
	return true
}
