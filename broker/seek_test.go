package broker

import (
	"testing"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestSeekClosesConsumersBeforeAnswering: a SEEK is answered after the
// CLOSE_CONSUMER of the seeking consumer, in Pulsar's order.
// pulsar-client-go relies on it (it reconnects before it sends the next
// command on that consumer); answering first let its next SEEK reach the
// closed consumer id and fail with ConsumerNotFound
// (pulsar-client-go's TestReaderWithSeekByID, latest and inclusive).
func TestSeekClosesConsumersBeforeAnswering(t *testing.T) {
	tb := startBroker(t, nil)
	topic := newTopicName("seek-order")
	r := dialRaw(t, tb, true)
	pid := r.producer(topic)
	for seq := uint64(0); seq < 3; seq++ {
		r.sendOK(pid, seq)
	}
	r.subscribeEarliest(topic, "s")
	var first *pb.MessageIdData
	for first == nil {
		if f := r.next(); f.Type == pb.BaseCommand_MESSAGE {
			first = f.Cmd.Message.GetMessageId()
		}
	}
	for round := uint64(0); round < 3; round++ {
		rid := 100 + round
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_SEEK.Enum(), Seek: &pb.CommandSeek{
			ConsumerId: ptr(uint64(1)), RequestId: ptr(rid),
			MessageId: &pb.MessageIdData{LedgerId: first.LedgerId, EntryId: first.EntryId},
		}})
		closed := false
		for answered := false; !answered; {
			f := r.next()
			switch f.Type {
			case pb.BaseCommand_CLOSE_CONSUMER:
				if f.Cmd.CloseConsumer.GetConsumerId() != 1 {
					t.Fatalf("CLOSE_CONSUMER of consumer %d", f.Cmd.CloseConsumer.GetConsumerId())
				}
				closed = true
			case pb.BaseCommand_SUCCESS:
				if f.Cmd.Success.GetRequestId() != rid {
					t.Fatalf("SUCCESS of request %d, want %d", f.Cmd.Success.GetRequestId(), rid)
				}
				if !closed {
					t.Fatalf("round %d: SEEK answered before the consumer's CLOSE_CONSUMER", round)
				}
				answered = true
			case pb.BaseCommand_ERROR:
				t.Fatalf("round %d: SEEK answered %v", round, f.Cmd.Error)
			}
		}
		// The client reconnects its consumer under the same id.
		r.subscribeEarliest(topic, "s")
	}
}
