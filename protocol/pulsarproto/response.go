package pulsarproto

import "github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"

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
