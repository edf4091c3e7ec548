package broker

import (
	"log/slog"
	"testing"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestScrubError: error texts naming a metadata path are replaced for
// every command that carries one; topic URLs and plain texts stay.
func TestScrubError(t *testing.T) {
	leak := "get /admin/policies/t/ns: zk: node does not exist"
	cmds := []*pb.BaseCommand{
		{Type: pb.BaseCommand_ERROR.Enum(), Error: &pb.CommandError{RequestId: ptr(uint64(1)), Error: pb.ServerError_MetadataError.Enum(), Message: ptr(leak)}},
		{Type: pb.BaseCommand_SEND_ERROR.Enum(), SendError: &pb.CommandSendError{ProducerId: ptr(uint64(1)), SequenceId: ptr(uint64(1)), Error: pb.ServerError_PersistenceError.Enum(), Message: ptr("write /data/ledgers/x/y: disk full")}},
		{Type: pb.BaseCommand_LOOKUP_RESPONSE.Enum(), LookupTopicResponse: &pb.CommandLookupTopicResponse{RequestId: ptr(uint64(1)), Error: pb.ServerError_MetadataError.Enum(), Message: ptr(leak)}},
		{Type: pb.BaseCommand_PARTITIONED_METADATA_RESPONSE.Enum(), PartitionMetadataResponse: &pb.CommandPartitionedTopicMetadataResponse{RequestId: ptr(uint64(1)), Error: pb.ServerError_MetadataError.Enum(), Message: ptr(leak)}},
		{Type: pb.BaseCommand_GET_SCHEMA_RESPONSE.Enum(), GetSchemaResponse: &pb.CommandGetSchemaResponse{RequestId: ptr(uint64(1)), ErrorCode: pb.ServerError_MetadataError.Enum(), ErrorMessage: ptr(leak)}},
	}
	for _, c := range cmds {
		scrubError(c, slog.New(slog.DiscardHandler))
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
	keep := &pb.BaseCommand{Type: pb.BaseCommand_ERROR.Enum(), Error: &pb.CommandError{RequestId: ptr(uint64(1)), Error: pb.ServerError_TopicNotFound.Enum(),
		Message: ptr("Topic persistent://t/ns/x does not exist")}}
	scrubError(keep, slog.New(slog.DiscardHandler))
	if got := keep.GetError().GetMessage(); got != "Topic persistent://t/ns/x does not exist" {
		t.Errorf("a topic URL was scrubbed: %q", got)
	}
}
