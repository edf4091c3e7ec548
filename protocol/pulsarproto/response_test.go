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

// TestRefusal: each transaction or schema request gets its own response
// type with the request id, the transaction id, the code and the
// message, and the answer encodes (every required field set); other
// types get none.
func TestRefusal(t *testing.T) {
	u := proto.Uint64
	const rid, most, least = 7, 1 << 63, 3
	cases := []struct {
		typ  pb.BaseCommand_Type
		cmd  *pb.BaseCommand
		want pb.BaseCommand_Type
		txn  bool
	}{
		{pb.BaseCommand_TC_CLIENT_CONNECT_REQUEST, &pb.BaseCommand{TcClientConnectRequest: &pb.CommandTcClientConnectRequest{RequestId: u(rid), TcId: u(0)}}, pb.BaseCommand_TC_CLIENT_CONNECT_RESPONSE, false},
		{pb.BaseCommand_NEW_TXN, &pb.BaseCommand{NewTxn: &pb.CommandNewTxn{RequestId: u(rid)}}, pb.BaseCommand_NEW_TXN_RESPONSE, false},
		{pb.BaseCommand_ADD_PARTITION_TO_TXN, &pb.BaseCommand{AddPartitionToTxn: &pb.CommandAddPartitionToTxn{RequestId: u(rid), TxnidMostBits: u(most), TxnidLeastBits: u(least)}}, pb.BaseCommand_ADD_PARTITION_TO_TXN_RESPONSE, true},
		{pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN, &pb.BaseCommand{AddSubscriptionToTxn: &pb.CommandAddSubscriptionToTxn{RequestId: u(rid), TxnidMostBits: u(most), TxnidLeastBits: u(least)}}, pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN_RESPONSE, true},
		{pb.BaseCommand_END_TXN, &pb.BaseCommand{EndTxn: &pb.CommandEndTxn{RequestId: u(rid), TxnidMostBits: u(most), TxnidLeastBits: u(least)}}, pb.BaseCommand_END_TXN_RESPONSE, true},
		{pb.BaseCommand_END_TXN_ON_PARTITION, &pb.BaseCommand{EndTxnOnPartition: &pb.CommandEndTxnOnPartition{RequestId: u(rid), TxnidMostBits: u(most), TxnidLeastBits: u(least)}}, pb.BaseCommand_END_TXN_ON_PARTITION_RESPONSE, true},
		{pb.BaseCommand_END_TXN_ON_SUBSCRIPTION, &pb.BaseCommand{EndTxnOnSubscription: &pb.CommandEndTxnOnSubscription{RequestId: u(rid), TxnidMostBits: u(most), TxnidLeastBits: u(least)}}, pb.BaseCommand_END_TXN_ON_SUBSCRIPTION_RESPONSE, true},
		{pb.BaseCommand_GET_SCHEMA, &pb.BaseCommand{GetSchema: &pb.CommandGetSchema{RequestId: u(rid), Topic: proto.String("t")}}, pb.BaseCommand_GET_SCHEMA_RESPONSE, false},
		{pb.BaseCommand_GET_OR_CREATE_SCHEMA, &pb.BaseCommand{GetOrCreateSchema: &pb.CommandGetOrCreateSchema{RequestId: u(rid), Topic: proto.String("t")}}, pb.BaseCommand_GET_OR_CREATE_SCHEMA_RESPONSE, false},
	}
	for _, c := range cases {
		r := Refusal(c.typ, c.cmd, pb.ServerError_NotAllowedError, "off")
		if r == nil || r.GetType() != c.want {
			t.Fatalf("Refusal(%s) = %v, want a %s", c.typ, r, c.want)
		}
		if _, err := AppendCommand(nil, r); err != nil {
			t.Fatalf("Refusal(%s) does not encode: %v", c.typ, err)
		}
		// It survives the wire encoding unchanged.
		b, err := proto.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back pb.BaseCommand
		if err := proto.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(&back, r) {
			t.Fatalf("Refusal(%s) round trip differs", c.typ)
		}
		if Refusal(c.typ, &pb.BaseCommand{}, pb.ServerError_NotAllowedError, "off") != nil {
			t.Fatalf("Refusal(%s) of a command without its body answered", c.typ)
		}
	}
	got := Refusal(pb.BaseCommand_END_TXN, cases[4].cmd, pb.ServerError_NotAllowedError, "off").EndTxnResponse
	if got.GetRequestId() != rid || got.GetTxnidMostBits() != most || got.GetTxnidLeastBits() != least ||
		got.GetError() != pb.ServerError_NotAllowedError || got.GetMessage() != "off" {
		t.Fatalf("END_TXN refusal %v", got)
	}
	gs := Refusal(pb.BaseCommand_GET_SCHEMA, cases[7].cmd, pb.ServerError_AuthorizationError, "no").GetSchemaResponse
	if gs.GetRequestId() != rid || gs.GetErrorCode() != pb.ServerError_AuthorizationError || gs.GetErrorMessage() != "no" || gs.Schema != nil {
		t.Fatalf("GET_SCHEMA refusal %v", gs)
	}
	if r := Refusal(pb.BaseCommand_SEND, &pb.BaseCommand{Send: &pb.CommandSend{}}, pb.ServerError_NotAllowedError, "x"); r != nil {
		t.Fatalf("Refusal(SEND) = %v, want nil", r)
	}
}
