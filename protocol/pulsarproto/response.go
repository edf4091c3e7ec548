package pulsarproto

import (
	"strings"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// ResponseRequestID returns the request_id of a command that answers a
// client request (SUCCESS, ERROR, PRODUCER_SUCCESS, LOOKUP_RESPONSE,
// PARTITIONED_METADATA_RESPONSE, GET_TOPICS_OF_NAMESPACE_RESPONSE,
// GET_LAST_MESSAGE_ID_RESPONSE, ACK_RESPONSE,
// END_TXN_ON_PARTITION_RESPONSE, END_TXN_ON_SUBSCRIPTION_RESPONSE), or false for any other
// command.
func ResponseRequestID(cmd *pb.BaseCommand) (uint64, bool) {
	switch {
	case cmd.Success != nil:
		return cmd.Success.GetRequestId(), true
	case cmd.Error != nil:
		return cmd.Error.GetRequestId(), true
	case cmd.ProducerSuccess != nil:
		return cmd.ProducerSuccess.GetRequestId(), true
	case cmd.LookupTopicResponse != nil:
		return cmd.LookupTopicResponse.GetRequestId(), true
	case cmd.PartitionMetadataResponse != nil:
		return cmd.PartitionMetadataResponse.GetRequestId(), true
	case cmd.GetTopicsOfNamespaceResponse != nil:
		return cmd.GetTopicsOfNamespaceResponse.GetRequestId(), true
	case cmd.GetLastMessageIdResponse != nil:
		return cmd.GetLastMessageIdResponse.GetRequestId(), true
	case cmd.AckResponse != nil:
		return cmd.AckResponse.GetRequestId(), true
	case cmd.EndTxnOnPartitionResponse != nil:
		return cmd.EndTxnOnPartitionResponse.GetRequestId(), true
	case cmd.EndTxnOnSubscriptionResponse != nil:
		return cmd.EndTxnOnSubscriptionResponse.GetRequestId(), true
	}
	return 0, false
}

// Refusal returns the error answer to a request cmd of type typ: the
// response command the client waits for, with code and msg (request and
// transaction ids copied). It covers the commands whose answers have
// shapes of their own: the transaction commands
// (TC_CLIENT_CONNECT_REQUEST, NEW_TXN, ADD_PARTITION_TO_TXN,
// ADD_SUBSCRIPTION_TO_TXN, END_TXN, END_TXN_ON_PARTITION,
// END_TXN_ON_SUBSCRIPTION) and the schema commands (GET_SCHEMA,
// GET_OR_CREATE_SCHEMA); nil for any other type or a command without its
// body.
func Refusal(typ pb.BaseCommand_Type, cmd *pb.BaseCommand, code pb.ServerError, msg string) *pb.BaseCommand {
	e, m := code.Enum(), &msg
	u := func(v uint64) *uint64 { return &v }
	switch typ {
	case pb.BaseCommand_TC_CLIENT_CONNECT_REQUEST:
		if r := cmd.TcClientConnectRequest; r != nil {
			return &pb.BaseCommand{Type: pb.BaseCommand_TC_CLIENT_CONNECT_RESPONSE.Enum(), TcClientConnectResponse: &pb.CommandTcClientConnectResponse{
				RequestId: u(r.GetRequestId()), Error: e, Message: m}}
		}
	case pb.BaseCommand_NEW_TXN:
		if r := cmd.NewTxn; r != nil {
			return &pb.BaseCommand{Type: pb.BaseCommand_NEW_TXN_RESPONSE.Enum(), NewTxnResponse: &pb.CommandNewTxnResponse{
				RequestId: u(r.GetRequestId()), Error: e, Message: m}}
		}
	case pb.BaseCommand_ADD_PARTITION_TO_TXN:
		if r := cmd.AddPartitionToTxn; r != nil {
			return &pb.BaseCommand{Type: pb.BaseCommand_ADD_PARTITION_TO_TXN_RESPONSE.Enum(), AddPartitionToTxnResponse: &pb.CommandAddPartitionToTxnResponse{
				RequestId: u(r.GetRequestId()), TxnidMostBits: u(r.GetTxnidMostBits()), TxnidLeastBits: u(r.GetTxnidLeastBits()), Error: e, Message: m}}
		}
	case pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN:
		if r := cmd.AddSubscriptionToTxn; r != nil {
			return &pb.BaseCommand{Type: pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN_RESPONSE.Enum(), AddSubscriptionToTxnResponse: &pb.CommandAddSubscriptionToTxnResponse{
				RequestId: u(r.GetRequestId()), TxnidMostBits: u(r.GetTxnidMostBits()), TxnidLeastBits: u(r.GetTxnidLeastBits()), Error: e, Message: m}}
		}
	case pb.BaseCommand_END_TXN:
		if r := cmd.EndTxn; r != nil {
			return &pb.BaseCommand{Type: pb.BaseCommand_END_TXN_RESPONSE.Enum(), EndTxnResponse: &pb.CommandEndTxnResponse{
				RequestId: u(r.GetRequestId()), TxnidMostBits: u(r.GetTxnidMostBits()), TxnidLeastBits: u(r.GetTxnidLeastBits()), Error: e, Message: m}}
		}
	case pb.BaseCommand_END_TXN_ON_PARTITION:
		if r := cmd.EndTxnOnPartition; r != nil {
			return &pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_PARTITION_RESPONSE.Enum(), EndTxnOnPartitionResponse: &pb.CommandEndTxnOnPartitionResponse{
				RequestId: u(r.GetRequestId()), TxnidMostBits: u(r.GetTxnidMostBits()), TxnidLeastBits: u(r.GetTxnidLeastBits()), Error: e, Message: m}}
		}
	case pb.BaseCommand_END_TXN_ON_SUBSCRIPTION:
		if r := cmd.EndTxnOnSubscription; r != nil {
			return &pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_SUBSCRIPTION_RESPONSE.Enum(), EndTxnOnSubscriptionResponse: &pb.CommandEndTxnOnSubscriptionResponse{
				RequestId: u(r.GetRequestId()), TxnidMostBits: u(r.GetTxnidMostBits()), TxnidLeastBits: u(r.GetTxnidLeastBits()), Error: e, Message: m}}
		}
	case pb.BaseCommand_GET_SCHEMA:
		if r := cmd.GetSchema; r != nil {
			return &pb.BaseCommand{Type: pb.BaseCommand_GET_SCHEMA_RESPONSE.Enum(), GetSchemaResponse: &pb.CommandGetSchemaResponse{
				RequestId: u(r.GetRequestId()), ErrorCode: e, ErrorMessage: m}}
		}
	case pb.BaseCommand_GET_OR_CREATE_SCHEMA:
		if r := cmd.GetOrCreateSchema; r != nil {
			return &pb.BaseCommand{Type: pb.BaseCommand_GET_OR_CREATE_SCHEMA_RESPONSE.Enum(), GetOrCreateSchemaResponse: &pb.CommandGetOrCreateSchemaResponse{
				RequestId: u(r.GetRequestId()), ErrorCode: e, ErrorMessage: m}}
		}
	}
	return nil
}

// ConnectAuthMethod is CONNECT's authentication method name: its
// auth_method_name, else the deprecated auth_method enum without its
// "AuthMethod" prefix, lowercased ("none", "ycav1", "athens"); "" when it
// names neither. The broker and the proxy authenticate by it.
func ConnectAuthMethod(m *pb.CommandConnect) string {
	if m.AuthMethodName != nil {
		return m.GetAuthMethodName()
	}
	if m.AuthMethod != nil {
		return strings.ToLower(strings.TrimPrefix(m.GetAuthMethod().String(), "AuthMethod"))
	}
	return ""
}
