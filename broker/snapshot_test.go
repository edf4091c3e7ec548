package broker

import (
	"testing"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestE2EConsumerStatsCommand: CONSUMER_STATS is answered with the
// consumer's stats; an unknown consumer id gets ConsumerNotFound.
func TestE2EConsumerStatsCommand(t *testing.T) {
	tb := startBroker(t, nil)
	r := dialRaw(t, tb, true)
	topic := newTopicName("cstats")
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{
		Topic: ptr(topic), Subscription: ptr("s"), SubType: pb.CommandSubscribe_Shared.Enum(),
		ConsumerId: ptr(uint64(7)), RequestId: ptr(uint64(1)), ConsumerName: ptr("stats-consumer"),
	}})
	if f := r.next(); f.Type != pb.BaseCommand_SUCCESS {
		t.Fatalf("SUBSCRIBE answered %s", f.Type)
	}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_FLOW.Enum(), Flow: &pb.CommandFlow{ConsumerId: ptr(uint64(7)), MessagePermits: ptr(uint32(42))}})
	ask := func(rid, cid uint64) *pb.CommandConsumerStatsResponse {
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_CONSUMER_STATS.Enum(), ConsumerStats: &pb.CommandConsumerStats{
			RequestId: ptr(rid), ConsumerId: ptr(cid)}})
		for {
			f := r.next()
			if f.Type == pb.BaseCommand_CONSUMER_STATS_RESPONSE {
				return f.Cmd.ConsumerStatsResponse
			}
		}
	}
	got := ask(2, 7)
	if got.GetRequestId() != 2 || got.ErrorCode != nil || got.GetConsumerName() != "stats-consumer" ||
		got.GetAvailablePermits() != 42 || got.GetType() != "Shared" || got.GetConnectedSince() == "" {
		t.Fatalf("CONSUMER_STATS answer %v", got)
	}
	if bad := ask(3, 99); bad.GetRequestId() != 3 || bad.GetErrorCode() != pb.ServerError_ConsumerNotFound {
		t.Fatalf("CONSUMER_STATS for an unknown consumer: %v", bad)
	}
}
