package pulsarproto

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

func TestResponseRequestID(t *testing.T) {
	const rid = 1<<64 - 1 // request ids are uint64 on the wire
	for _, cmd := range []*pb.BaseCommand{
		{Success: &pb.CommandSuccess{RequestId: proto.Uint64(rid)}},
		{Error: &pb.CommandError{RequestId: proto.Uint64(rid)}},
		{ProducerSuccess: &pb.CommandProducerSuccess{RequestId: proto.Uint64(rid)}},
		{LookupTopicResponse: &pb.CommandLookupTopicResponse{RequestId: proto.Uint64(rid)}},
		{PartitionMetadataResponse: &pb.CommandPartitionedTopicMetadataResponse{RequestId: proto.Uint64(rid)}},
		{GetTopicsOfNamespaceResponse: &pb.CommandGetTopicsOfNamespaceResponse{RequestId: proto.Uint64(rid)}},
		{GetLastMessageIdResponse: &pb.CommandGetLastMessageIdResponse{RequestId: proto.Uint64(rid)}},
		{AckResponse: &pb.CommandAckResponse{RequestId: proto.Uint64(rid)}},
		{EndTxnOnPartitionResponse: &pb.CommandEndTxnOnPartitionResponse{RequestId: proto.Uint64(rid)}},
		{EndTxnOnSubscriptionResponse: &pb.CommandEndTxnOnSubscriptionResponse{RequestId: proto.Uint64(rid)}},
	} {
		if got, ok := ResponseRequestID(cmd); !ok || got != rid {
			t.Errorf("%v: got %d, %v", cmd, got, ok)
		}
	}
	for _, cmd := range []*pb.BaseCommand{
		{},
		{Ping: &pb.CommandPing{}},
		{SendReceipt: &pb.CommandSendReceipt{ProducerId: proto.Uint64(1), SequenceId: proto.Uint64(2)}},
	} {
		if _, ok := ResponseRequestID(cmd); ok {
			t.Errorf("%v: reported as a response", cmd)
		}
	}
}
