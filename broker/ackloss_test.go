package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	pb "github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// rawSub subscribes consumer id 1 on r and returns a channel of every frame
// the connection receives from then on (read by a goroutine that stops
// when the connection closes).
func (r *rawClient) rawSub(topic, sub string, typ pb.CommandSubscribe_SubType, permits uint32) <-chan pulsarproto.Frame {
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
	ch := make(chan pulsarproto.Frame, 1024)
	go func() {
		defer close(ch)
		for {
			f, err := r.fr.Next()
			if err != nil {
				return
			}
			ch <- f
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
					if f.Type == pb.BaseCommand_MESSAGE {
						ledger = f.Cmd.Message.MessageId.GetLedgerId()
						got["a"] = append(got["a"], int64(f.Cmd.Message.MessageId.GetEntryId()))
					}
				case f := <-fb:
					if f.Type == pb.BaseCommand_MESSAGE {
						ledger = f.Cmd.Message.MessageId.GetLedgerId()
						got["b"] = append(got["b"], int64(f.Cmd.Message.MessageId.GetEntryId()))
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
			ackerCh := map[string]<-chan pulsarproto.Frame{"a": fa, "b": fb}[hi]
			acker.send(&pb.BaseCommand{Type: pb.BaseCommand_ACK.Enum(), Ack: &pb.CommandAck{
				ConsumerId: ptr(uint64(1)), AckType: pb.CommandAck_Cumulative.Enum(),
				MessageId: []*pb.MessageIdData{{LedgerId: ptr(ledger), EntryId: ptr(uint64(maxOf(got[hi])))}},
				RequestId: ptr(uint64(77)),
			}})
			for f := range ackerCh {
				if f.Type == pb.BaseCommand_ACK_RESPONSE {
					if f.Cmd.AckResponse.Error != nil {
						t.Fatalf("ack answered %v", f.Cmd.AckResponse)
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
					if f.Type == pb.BaseCommand_MESSAGE {
						delete(want, int64(f.Cmd.Message.MessageId.GetEntryId()))
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
