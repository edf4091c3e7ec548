package broker

import (
	"errors"
	"testing"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// The schema registry is a feature outside the core (package schemareg).

// TestSchemaRegistryOff: without it the schema commands are answered
// with NotAllowed (ErrNoSchemaRegistry) for their request, the
// connection stays up, a producer bringing a schema is accepted without
// a version, and nothing is stored under /schemas.
func TestSchemaRegistryOff(t *testing.T) {
	tb := startBroker(t, nil)
	topic := "persistent://public/default/" + newTopicName("schemaoff")
	r := dialRaw(t, tb, true)
	str := &pb.Schema{Name: ptr("s"), SchemaData: []byte{}, Type: pb.Schema_String.Enum()}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_GET_SCHEMA.Enum(), GetSchema: &pb.CommandGetSchema{RequestId: ptr(uint64(1)), Topic: ptr(topic)}})
	if f := r.next(); f.Type != pb.BaseCommand_GET_SCHEMA_RESPONSE || f.Cmd.GetSchemaResponse.GetRequestId() != 1 ||
		f.Cmd.GetSchemaResponse.GetErrorCode() != pb.ServerError_NotAllowedError || f.Cmd.GetSchemaResponse.GetErrorMessage() != ErrNoSchemaRegistry.Error() {
		t.Fatalf("GET_SCHEMA answered %s %v", f.Type, f.Cmd)
	}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_GET_OR_CREATE_SCHEMA.Enum(), GetOrCreateSchema: &pb.CommandGetOrCreateSchema{
		RequestId: ptr(uint64(2)), Topic: ptr(topic), Schema: str}})
	if f := r.next(); f.Type != pb.BaseCommand_GET_OR_CREATE_SCHEMA_RESPONSE || f.Cmd.GetOrCreateSchemaResponse.GetRequestId() != 2 ||
		f.Cmd.GetOrCreateSchemaResponse.GetErrorCode() != pb.ServerError_NotAllowedError || f.Cmd.GetOrCreateSchemaResponse.SchemaVersion != nil {
		t.Fatalf("GET_OR_CREATE_SCHEMA answered %s %v", f.Type, f.Cmd)
	}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
		Topic: ptr(topic), ProducerId: ptr(uint64(1)), RequestId: ptr(uint64(3)), Schema: str}})
	if f := r.next(); f.Type != pb.BaseCommand_PRODUCER_SUCCESS || f.Cmd.ProducerSuccess.SchemaVersion != nil {
		t.Fatalf("PRODUCER with a schema answered %s %v", f.Type, f.Cmd)
	}
	r.ping()
	if _, err := tb.meta.Children(ctxT(t), "/schemas"); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("schemas in the metadata store of a broker without a registry: %v", err)
	}
}
