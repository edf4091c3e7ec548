package broker

import (
	"slices"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestBadNamesBinaryProtocol: topic names Pulsar cannot store ("." and
// ".." as any part, NUL and other control characters, parts over the
// length limits, a 1 MB name) get InvalidTopicName from LOOKUP,
// PARTITIONED_METADATA, PRODUCER and SUBSCRIBE, and bad subscription
// names NotAllowed; nothing is created and the connection stays usable.
// A literal "%2e%2e" is an ordinary name (only the REST path decodes it).
func TestBadNamesBinaryProtocol(t *testing.T) {
	tb := startBroker(t, func(c *brokerconf.Config) { c.MaxMessageSize = 2 << 20 })
	r := dialRaw(t, tb, true)
	ctx := ctxT(t)
	before, err := tb.Registry().TopicsOfNamespace(ctx, "public/default", true, true)
	if err != nil {
		t.Fatal(err)
	}
	bad := []string{
		"persistent://public/default/.",
		"persistent://public/default/..",
		"persistent://public/default/a\x00b",
		"persistent://public/default/\x00",
		"persistent://public/default/tab\there",
		"persistent://public/default/\xff\xfe",
		"persistent://public/default/" + strings.Repeat("x", 1025),
		"persistent://public/default/" + strings.Repeat("y", 1<<20),
		"persistent://./default/t",
		"persistent://public/../t",
		"persistent://" + strings.Repeat("t", 256) + "/default/t",
		"..",
		"",
	}
	rid := uint64(100)
	for _, name := range bad {
		label := name
		if len(label) > 60 {
			label = label[:60] + "..."
		}
		rid++
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{Topic: ptr(name), RequestId: ptr(rid)}})
		if f := r.next(); f.Type != pb.BaseCommand_LOOKUP_RESPONSE || f.Cmd.LookupTopicResponse.GetError() != pb.ServerError_InvalidTopicName {
			t.Errorf("LOOKUP %q: %s %v", label, f.Type, f.Cmd.LookupTopicResponse.GetError())
		}
		rid++
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_PARTITIONED_METADATA.Enum(), PartitionMetadata: &pb.CommandPartitionedTopicMetadata{Topic: ptr(name), RequestId: ptr(rid)}})
		if f := r.next(); f.Type != pb.BaseCommand_PARTITIONED_METADATA_RESPONSE || f.Cmd.PartitionMetadataResponse.GetError() != pb.ServerError_InvalidTopicName {
			t.Errorf("PARTITIONED_METADATA %q: %s", label, f.Type)
		}
		rid++
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{Topic: ptr(name), ProducerId: ptr(rid), RequestId: ptr(rid)}})
		if f := r.next(); f.Type != pb.BaseCommand_ERROR || f.Cmd.Error.GetError() != pb.ServerError_InvalidTopicName {
			t.Errorf("PRODUCER %q: %s", label, f.Type)
		}
		rid++
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{Topic: ptr(name), Subscription: ptr("s"),
			SubType: pb.CommandSubscribe_Shared.Enum(), ConsumerId: ptr(rid), RequestId: ptr(rid)}})
		if f := r.next(); f.Type != pb.BaseCommand_ERROR || f.Cmd.Error.GetError() != pb.ServerError_InvalidTopicName {
			t.Errorf("SUBSCRIBE %q: %s", label, f.Type)
		}
	}
	for _, sub := range []string{".", "..", "a\x00b", strings.Repeat("s", 1025), " "} {
		rid++
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{Topic: ptr("persistent://public/default/subnames"),
			Subscription: ptr(sub), SubType: pb.CommandSubscribe_Shared.Enum(), ConsumerId: ptr(rid), RequestId: ptr(rid)}})
		if f := r.next(); f.Type != pb.BaseCommand_ERROR || f.Cmd.Error.GetError() != pb.ServerError_NotAllowedError {
			t.Errorf("SUBSCRIBE with subscription %.40q: %s", sub, f.Type)
		}
	}
	r.ping()
	after, err := tb.Registry().TopicsOfNamespace(ctx, "public/default", true, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, after) {
		t.Fatalf("refused names created topics: %v -> %v", before, after)
	}
	// A literal %2e%2e is an ordinary topic name.
	rid++
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{Topic: ptr("persistent://public/default/%2e%2e"), ProducerId: ptr(rid), RequestId: ptr(rid)}})
	if f := r.next(); f.Type != pb.BaseCommand_PRODUCER_SUCCESS {
		t.Fatalf("PRODUCER on a literal %%2e%%2e: %s", f.Type)
	}
}
