package broker

import (
	"testing"

	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestRawTopicsOfUnknownNamespace: GET_TOPICS_OF_NAMESPACE of a
// namespace that does not exist answers an empty list.
func TestRawTopicsOfUnknownNamespace(t *testing.T) {
	tb := startBroker(t, nil)
	r := dialRaw(t, tb, true)
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_GET_TOPICS_OF_NAMESPACE.Enum(), GetTopicsOfNamespace: &pb.CommandGetTopicsOfNamespace{
		RequestId: ptr(uint64(1)), Namespace: ptr("nope/nothing"),
	}})
	f := r.next()
	if f.Type != pb.BaseCommand_GET_TOPICS_OF_NAMESPACE_RESPONSE || len(f.Cmd.GetTopicsOfNamespaceResponse.Topics) != 0 {
		t.Fatalf("unknown namespace: %s %v", f.Type, f.Cmd)
	}
}

func TestAutoCreationDisabled(t *testing.T) {
	tb := startBroker(t, func(c *brokerconf.Config) { c.DisableAutoTopicCreation = true })
	r := dialRaw(t, tb, true)
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
		Topic: ptr("no-such-topic"), ProducerId: ptr(uint64(1)), RequestId: ptr(uint64(1)),
	}})
	f := r.next()
	if f.Type != pb.BaseCommand_ERROR || f.Cmd.Error.GetError() != pb.ServerError_TopicNotFound {
		t.Fatalf("PRODUCER on missing topic: %s %v", f.Type, f.Cmd)
	}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{
		Topic: ptr("t/ns-missing/x"), RequestId: ptr(uint64(2)),
	}})
	f = r.next()
	if f.Cmd.LookupTopicResponse.GetResponse() != pb.CommandLookupTopicResponse_Failed {
		t.Fatalf("lookup in missing namespace: %v", f.Cmd)
	}
}
