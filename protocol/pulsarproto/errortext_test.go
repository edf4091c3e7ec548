package pulsarproto

import (
	"testing"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestScrubError: error texts naming a metadata path are replaced for
// every command that carries one; topic URLs and plain texts stay.
func TestScrubError(t *testing.T) {
	leak := "get /admin/policies/t/ns: zk: node does not exist"
	cmds := []*pb.BaseCommand{
		{Type: pb.BaseCommand_ERROR.Enum(), Error: &pb.CommandError{RequestId: ref(uint64(1)), Error: pb.ServerError_MetadataError.Enum(), Message: ref(leak)}},
		{Type: pb.BaseCommand_SEND_ERROR.Enum(), SendError: &pb.CommandSendError{ProducerId: ref(uint64(1)), SequenceId: ref(uint64(1)), Error: pb.ServerError_PersistenceError.Enum(), Message: ref("write /data/ledgers/x/y: disk full")}},
		{Type: pb.BaseCommand_LOOKUP_RESPONSE.Enum(), LookupTopicResponse: &pb.CommandLookupTopicResponse{RequestId: ref(uint64(1)), Error: pb.ServerError_MetadataError.Enum(), Message: ref(leak)}},
		{Type: pb.BaseCommand_PARTITIONED_METADATA_RESPONSE.Enum(), PartitionMetadataResponse: &pb.CommandPartitionedTopicMetadataResponse{RequestId: ref(uint64(1)), Error: pb.ServerError_MetadataError.Enum(), Message: ref(leak)}},
		{Type: pb.BaseCommand_GET_SCHEMA_RESPONSE.Enum(), GetSchemaResponse: &pb.CommandGetSchemaResponse{RequestId: ref(uint64(1)), ErrorCode: pb.ServerError_MetadataError.Enum(), ErrorMessage: ref(leak)}},
	}
	for _, c := range cmds {
		withheld, _, ok := ScrubError(c)
		if !ok || !internalPath.MatchString(withheld) {
			t.Errorf("%s: ScrubError = %q, %v; want the leaking text withheld", c.GetType(), withheld, ok)
		}
		for _, m := range []string{c.GetError().GetMessage(), c.GetSendError().GetMessage(), c.GetLookupTopicResponse().GetMessage(),
			c.GetPartitionMetadataResponse().GetMessage(), c.GetGetSchemaResponse().GetErrorMessage()} {
			if internalPath.MatchString(m) {
				t.Errorf("%s still carries %q", c.GetType(), m)
			}
		}
	}
	if got := cmds[0].GetError().GetMessage(); got != genericMessage("MetadataError") || cmds[0].GetError().GetError() != pb.ServerError_MetadataError {
		t.Errorf("ERROR became %v %q", cmds[0].GetError().GetError(), got)
	}
	keep := &pb.BaseCommand{Type: pb.BaseCommand_ERROR.Enum(), Error: &pb.CommandError{RequestId: ref(uint64(1)), Error: pb.ServerError_TopicNotFound.Enum(),
		Message: ref("Topic persistent://t/ns/x does not exist")}}
	if _, _, ok := ScrubError(keep); ok {
		t.Error("ScrubError reported a scrub of a topic URL")
	}
	if got := keep.GetError().GetMessage(); got != "Topic persistent://t/ns/x does not exist" {
		t.Errorf("a topic URL was scrubbed: %q", got)
	}
}

func ref[T any](v T) *T { return &v }

// TestScrubErrorCode: the code is reported and kept; a command without an
// error payload, or with a clean text, is left alone.
func TestScrubErrorCode(t *testing.T) {
	cmd := &pb.BaseCommand{Type: pb.BaseCommand_ERROR.Enum(), Error: &pb.CommandError{RequestId: ref(uint64(1)),
		Error: pb.ServerError_PersistenceError.Enum(), Message: ref("open /data/ledgers/3: no space")}}
	withheld, code, ok := ScrubError(cmd)
	if !ok || code != "PersistenceError" || withheld != "open /data/ledgers/3: no space" {
		t.Fatalf("ScrubError = %q, %q, %v", withheld, code, ok)
	}
	if cmd.GetError().GetError() != pb.ServerError_PersistenceError || cmd.GetError().GetMessage() != genericMessage("PersistenceError") {
		t.Fatalf("ERROR became %v %q", cmd.GetError().GetError(), cmd.GetError().GetMessage())
	}
	ping := &pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}}
	if _, _, ok := ScrubError(ping); ok {
		t.Fatal("scrubbed a PING")
	}
	clean := &pb.BaseCommand{Type: pb.BaseCommand_ERROR.Enum(), Error: &pb.CommandError{RequestId: ref(uint64(1)),
		Error: pb.ServerError_UnknownError.Enum(), Message: ref("Consumer not found")}}
	if _, _, ok := ScrubError(clean); ok || clean.GetError().GetMessage() != "Consumer not found" {
		t.Fatalf("clean text changed: %q", clean.GetError().GetMessage())
	}
	if NamesInternalPath("Topic persistent://t/ns/x does not exist") || !NamesInternalPath("get /admin/policies/t/ns failed") {
		t.Fatal("NamesInternalPath disagrees with the scrubbing rule")
	}
}
