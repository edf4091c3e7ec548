package pulsarproto

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// testMetadata returns serialized MessageMetadata with the fields a Go
// client sets on a batched send.
func testMetadata(t testing.TB, batch int32) []byte {
	t.Helper()
	md := &pb.MessageMetadata{
		ProducerName: proto.String("standalone-0-1"),
		SequenceId:   proto.Uint64(41),
		PublishTime:  proto.Uint64(1_700_000_000_123),
		PartitionKey: proto.String("key-1"),
		Properties:   []*pb.KeyValue{{Key: proto.String("a"), Value: proto.String("b")}},
	}
	if batch > 0 {
		md.NumMessagesInBatch = proto.Int32(batch)
	}
	b, err := proto.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testPayload(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte('a' + i%26)
	}
	return p
}

// testEntry returns a checksummed entry with a 200-byte (or n-byte) payload.
func testEntry(t testing.TB, n int) []byte {
	return AppendEntry(nil, testMetadata(t, 0), testPayload(n))
}

func testSendCmd() *pb.BaseCommand {
	return &pb.BaseCommand{
		Type: pb.BaseCommand_SEND.Enum(),
		Send: &pb.CommandSend{
			ProducerId:  proto.Uint64(3),
			SequenceId:  proto.Uint64(41),
			NumMessages: proto.Int32(10),
		},
	}
}

func mustAppend(t testing.TB, cmd *pb.BaseCommand, entry []byte) []byte {
	t.Helper()
	b, err := AppendPayloadCommand(nil, cmd, entry)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// allCommands returns one BaseCommand per command type the package
// declares, each with every required field set.
func allCommands() []*pb.BaseCommand {
	u := proto.Uint64
	s := proto.String
	id := func(l, e uint64) *pb.MessageIdData { return &pb.MessageIdData{LedgerId: u(l), EntryId: u(e)} }
	kv := []*pb.KeyValue{{Key: s("k"), Value: s("v")}}
	schema := &pb.Schema{Name: s("n"), SchemaData: []byte("{}"), Type: pb.Schema_Json.Enum(), Properties: kv}
	T := func(t pb.BaseCommand_Type) *pb.BaseCommand_Type { return t.Enum() }
	return []*pb.BaseCommand{
		{Type: T(pb.BaseCommand_CONNECT), Connect: &pb.CommandConnect{ClientVersion: s("Pulsar-Go-v0.19.0"), ProtocolVersion: proto.Int32(20), AuthMethodName: s(""), AuthData: []byte{}, FeatureFlags: &pb.FeatureFlags{SupportsAuthRefresh: proto.Bool(true), SupportsBrokerEntryMetadata: proto.Bool(true)}}},
		{Type: T(pb.BaseCommand_CONNECTED), Connected: &pb.CommandConnected{ServerVersion: s("Magnetar"), ProtocolVersion: proto.Int32(20), MaxMessageSize: proto.Int32(1 << 20), FeatureFlags: &pb.FeatureFlags{}}},
		{Type: T(pb.BaseCommand_SUBSCRIBE), Subscribe: &pb.CommandSubscribe{Topic: s("persistent://public/default/t"), Subscription: s("sub"), SubType: pb.CommandSubscribe_Key_Shared.Enum(), ConsumerId: u(1), RequestId: u(2), ConsumerName: s("c"), Durable: proto.Bool(false), StartMessageId: id(1, 2), Metadata: kv, Schema: schema, InitialPosition: pb.CommandSubscribe_Earliest.Enum(), KeySharedMeta: &pb.KeySharedMeta{KeySharedMode: pb.KeySharedMode_STICKY.Enum(), HashRanges: []*pb.IntRange{{Start: proto.Int32(0), End: proto.Int32(100)}}}, SubscriptionProperties: kv}},
		{Type: T(pb.BaseCommand_PRODUCER), Producer: &pb.CommandProducer{Topic: s("t"), ProducerId: u(1), RequestId: u(2), ProducerName: s("p"), Metadata: kv, Epoch: u(1), ProducerAccessMode: pb.ProducerAccessMode_Exclusive.Enum(), InitialSubscriptionName: s("")}},
		testSendCmd(),
		{Type: T(pb.BaseCommand_SEND_RECEIPT), SendReceipt: &pb.CommandSendReceipt{ProducerId: u(3), SequenceId: u(41), MessageId: id(5, 6)}},
		{Type: T(pb.BaseCommand_SEND_ERROR), SendError: &pb.CommandSendError{ProducerId: u(3), SequenceId: u(41), Error: pb.ServerError_ChecksumError.Enum(), Message: s("bad crc")}},
		{Type: T(pb.BaseCommand_MESSAGE), Message: &pb.CommandMessage{ConsumerId: u(1), MessageId: id(5, 6), RedeliveryCount: proto.Uint32(2), AckSet: []int64{-1, 3}}},
		{Type: T(pb.BaseCommand_ACK), Ack: &pb.CommandAck{ConsumerId: u(1), AckType: pb.CommandAck_Individual.Enum(), MessageId: []*pb.MessageIdData{id(1, 2), id(1, 3)}, RequestId: u(9)}},
		{Type: T(pb.BaseCommand_FLOW), Flow: &pb.CommandFlow{ConsumerId: u(1), MessagePermits: proto.Uint32(1000)}},
		{Type: T(pb.BaseCommand_UNSUBSCRIBE), Unsubscribe: &pb.CommandUnsubscribe{ConsumerId: u(1), RequestId: u(2), Force: proto.Bool(true)}},
		{Type: T(pb.BaseCommand_SUCCESS), Success: &pb.CommandSuccess{RequestId: u(2)}},
		{Type: T(pb.BaseCommand_ERROR), Error: &pb.CommandError{RequestId: u(2), Error: pb.ServerError_TopicNotFound.Enum(), Message: s("no such topic")}},
		{Type: T(pb.BaseCommand_CLOSE_PRODUCER), CloseProducer: &pb.CommandCloseProducer{ProducerId: u(1), RequestId: u(2)}},
		{Type: T(pb.BaseCommand_CLOSE_CONSUMER), CloseConsumer: &pb.CommandCloseConsumer{ConsumerId: u(1), RequestId: u(2)}},
		{Type: T(pb.BaseCommand_PRODUCER_SUCCESS), ProducerSuccess: &pb.CommandProducerSuccess{RequestId: u(2), ProducerName: s("standalone-0-1"), LastSequenceId: proto.Int64(-1)}},
		{Type: T(pb.BaseCommand_PING), Ping: &pb.CommandPing{}},
		{Type: T(pb.BaseCommand_PONG), Pong: &pb.CommandPong{}},
		{Type: T(pb.BaseCommand_REDELIVER_UNACKNOWLEDGED_MESSAGES), RedeliverUnacknowledgedMessages: &pb.CommandRedeliverUnacknowledgedMessages{ConsumerId: u(1), MessageIds: []*pb.MessageIdData{id(1, 2)}}},
		{Type: T(pb.BaseCommand_PARTITIONED_METADATA), PartitionMetadata: &pb.CommandPartitionedTopicMetadata{Topic: s("persistent://public/default/t"), RequestId: u(1)}},
		{Type: T(pb.BaseCommand_PARTITIONED_METADATA_RESPONSE), PartitionMetadataResponse: &pb.CommandPartitionedTopicMetadataResponse{RequestId: u(1), Partitions: proto.Uint32(0), Response: pb.CommandPartitionedTopicMetadataResponse_Success.Enum()}},
		{Type: T(pb.BaseCommand_LOOKUP), LookupTopic: &pb.CommandLookupTopic{Topic: s("t"), RequestId: u(1), Authoritative: proto.Bool(false)}},
		{Type: T(pb.BaseCommand_LOOKUP_RESPONSE), LookupTopicResponse: &pb.CommandLookupTopicResponse{RequestId: u(1), BrokerServiceUrl: s("pulsar://localhost:6650"), Response: pb.CommandLookupTopicResponse_Connect.Enum(), Authoritative: proto.Bool(true), ProxyThroughServiceUrl: proto.Bool(false)}},
		{Type: T(pb.BaseCommand_SEEK), Seek: &pb.CommandSeek{ConsumerId: u(1), RequestId: u(2), MessagePublishTime: u(12345)}},
		{Type: T(pb.BaseCommand_GET_LAST_MESSAGE_ID), GetLastMessageId: &pb.CommandGetLastMessageId{ConsumerId: u(1), RequestId: u(2)}},
		{Type: T(pb.BaseCommand_GET_LAST_MESSAGE_ID_RESPONSE), GetLastMessageIdResponse: &pb.CommandGetLastMessageIdResponse{RequestId: u(2), LastMessageId: &pb.MessageIdData{LedgerId: u(3), EntryId: u(^uint64(0)), BatchIndex: proto.Int32(4)}, ConsumerMarkDeletePosition: id(3, 0)}},
		{Type: T(pb.BaseCommand_ACTIVE_CONSUMER_CHANGE), ActiveConsumerChange: &pb.CommandActiveConsumerChange{ConsumerId: u(1), IsActive: proto.Bool(true)}},
		{Type: T(pb.BaseCommand_GET_TOPICS_OF_NAMESPACE), GetTopicsOfNamespace: &pb.CommandGetTopicsOfNamespace{RequestId: u(1), Namespace: s("public/default"), Mode: pb.CommandGetTopicsOfNamespace_ALL.Enum()}},
		{Type: T(pb.BaseCommand_GET_TOPICS_OF_NAMESPACE_RESPONSE), GetTopicsOfNamespaceResponse: &pb.CommandGetTopicsOfNamespaceResponse{RequestId: u(1), Topics: []string{"persistent://public/default/a-partition-0"}, Filtered: proto.Bool(false), Changed: proto.Bool(true)}},
		{Type: T(pb.BaseCommand_GET_SCHEMA), GetSchema: &pb.CommandGetSchema{RequestId: u(1), Topic: s("t"), SchemaVersion: []byte{0, 0, 0, 0, 0, 0, 0, 1}}},
		{Type: T(pb.BaseCommand_GET_SCHEMA_RESPONSE), GetSchemaResponse: &pb.CommandGetSchemaResponse{RequestId: u(1), Schema: schema, SchemaVersion: make([]byte, 8)}},
		{Type: T(pb.BaseCommand_ACK_RESPONSE), AckResponse: &pb.CommandAckResponse{ConsumerId: u(1), RequestId: u(9)}},
		{Type: T(pb.BaseCommand_GET_OR_CREATE_SCHEMA), GetOrCreateSchema: &pb.CommandGetOrCreateSchema{RequestId: u(1), Topic: s("t"), Schema: schema}},
		{Type: T(pb.BaseCommand_GET_OR_CREATE_SCHEMA_RESPONSE), GetOrCreateSchemaResponse: &pb.CommandGetOrCreateSchemaResponse{RequestId: u(1), ErrorCode: pb.ServerError_IncompatibleSchema.Enum(), ErrorMessage: s("nope")}},
		{Type: T(pb.BaseCommand_AUTH_CHALLENGE), AuthChallenge: &pb.CommandAuthChallenge{ServerVersion: s("x"), Challenge: &pb.AuthData{AuthMethodName: s("token"), AuthData: []byte("d")}}},
		{Type: T(pb.BaseCommand_AUTH_RESPONSE), AuthResponse: &pb.CommandAuthResponse{ClientVersion: s("x"), Response: &pb.AuthData{AuthMethodName: s("token"), AuthData: []byte("d")}}},
		{Type: T(pb.BaseCommand_CONSUMER_STATS), ConsumerStats: &pb.CommandConsumerStats{RequestId: u(1), ConsumerId: u(2)}},
		{Type: T(pb.BaseCommand_CONSUMER_STATS_RESPONSE), ConsumerStatsResponse: &pb.CommandConsumerStatsResponse{RequestId: u(1), MsgRateOut: proto.Float64(1.5)}},
		{Type: T(pb.BaseCommand_REACHED_END_OF_TOPIC), ReachedEndOfTopic: &pb.CommandReachedEndOfTopic{ConsumerId: u(1)}},
		{Type: T(pb.BaseCommand_TOPIC_MIGRATED), TopicMigrated: &pb.CommandTopicMigrated{ResourceId: u(1), ResourceType: pb.CommandTopicMigrated_Consumer.Enum()}},
	}
}
