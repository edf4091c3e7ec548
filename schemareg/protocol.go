package schemareg

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/schema"
)

// The registry on the binary protocol: the schema step of PRODUCER and
// SUBSCRIBE (broker.AttachHook), GET_SCHEMA and GET_OR_CREATE_SCHEMA
// (broker.CommandSource), and the schema of a deleted topic
// (broker.DeletionObserver).

// requestTimeout bounds the metadata work of one request.
const requestTimeout = 30 * time.Second

// versionBytes is a version number as the wire carries it: 8 bytes,
// big-endian.
func versionBytes(v int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func wireInfo(s *pb.Schema) schema.Info {
	var props map[string]string
	for _, kv := range s.Properties {
		if props == nil {
			props = make(map[string]string, len(s.Properties))
		}
		props[kv.GetKey()] = kv.GetValue()
	}
	return schema.Info{Type: int32(s.GetType()), Data: s.SchemaData, Properties: props}
}

func wireSchema(e entry, tn pulsarproto.TopicName) *pb.Schema {
	s := &pb.Schema{Name: &tn.Local, SchemaData: e.Data, Type: pb.Schema_Type(e.Type).Enum()}
	if s.SchemaData == nil {
		s.SchemaData = []byte{}
	}
	for k, v := range e.Properties {
		s.Properties = append(s.Properties, &pb.KeyValue{Key: &k, Value: &v})
	}
	return s
}

// refusal is the AttachError of a registry error: IncompatibleSchema
// for a refused or malformed schema, else MetadataError.
func refusal(err error) error {
	code := pb.ServerError_MetadataError
	if errors.Is(err, schema.ErrIncompatible) || errors.Is(err, schema.ErrInvalid) {
		code = pb.ServerError_IncompatibleSchema
	}
	return &broker.AttachError{Code: code, Msg: err.Error()}
}

// AttachProducer implements broker.AttachHook: a producer's schema is
// registered (or found), and its version reported. A producer without
// one (or with BYTES) is accepted, unless the topic has a schema and
// validation is enforced.
func (r *Registry) AttachProducer(ctx context.Context, t broker.Topic, m *pb.CommandProducer) ([]byte, error) {
	tn := t.TopicName().Parent()
	s := m.Schema
	if s == nil || s.GetType() == pb.Schema_None {
		if !r.validationEnforced(t) {
			return nil, nil
		}
		rec, _, err := r.load(ctx, tn)
		if err != nil {
			return nil, refusal(err)
		}
		if _, _, found := rec.get(-1); found {
			return nil, &broker.AttachError{Code: pb.ServerError_IncompatibleSchema,
				Msg: "the topic has a schema and schema validation is enforced: producers must bring a schema"}
		}
		return nil, nil
	}
	v, err := r.register(ctx, tn, wireInfo(s), byProducer)
	if err != nil {
		return nil, refusal(err)
	}
	return versionBytes(v), nil
}

// AttachConsumer implements broker.AttachHook: a consumer's schema must
// be compatible with the topic's; on a topic without one it is
// registered.
func (r *Registry) AttachConsumer(ctx context.Context, t broker.Topic, m *pb.CommandSubscribe) error {
	s := m.Schema
	if s == nil || s.GetType() == pb.Schema_None {
		return nil
	}
	if _, err := r.register(ctx, t.TopicName().Parent(), wireInfo(s), byConsumer); err != nil {
		return refusal(err)
	}
	return nil
}

// TopicDeleted implements broker.DeletionObserver: a deleted topic's
// schema goes with it (its history is meaningless now, unlike after
// DeleteSchema); a partition's is its partitioned topic's, which stays.
func (r *Registry) TopicDeleted(ctx context.Context, tn pulsarproto.TopicName) {
	if tn.IsPartition() {
		return
	}
	if err := r.remove(ctx, tn); err != nil {
		r.log.Warn("delete the schema of a deleted topic", "topic", tn.String(), "err", err)
	}
}

// Commands implements broker.CommandSource.
func (r *Registry) Commands() []broker.Command {
	return []broker.Command{
		{Type: pb.BaseCommand_GET_SCHEMA, Handle: r.getSchema,
			Access: func(cmd *pb.BaseCommand) (string, broker.TopicPermission) {
				return cmd.GetGetSchema().GetTopic(), broker.PermitLookup
			}},
		{Type: pb.BaseCommand_GET_OR_CREATE_SCHEMA, Handle: r.getOrCreateSchema,
			Access: func(cmd *pb.BaseCommand) (string, broker.TopicPermission) {
				return cmd.GetGetOrCreateSchema().GetTopic(), broker.PermitProduce
			}},
	}
}

// getSchema answers GET_SCHEMA: the version asked for (the latest live
// one without schema_version), or TopicNotFound.
func (r *Registry) getSchema(c broker.Conn, cmd *pb.BaseCommand) error {
	m := cmd.GetSchema
	if m == nil {
		return fmt.Errorf("%w: GET_SCHEMA without body", broker.ErrProtocol)
	}
	rid := m.GetRequestId()
	v := int64(-1)
	if len(m.SchemaVersion) == 8 {
		v = int64(binary.BigEndian.Uint64(m.SchemaVersion) & (1<<63 - 1))
	}
	r.spawn(func(ctx context.Context) {
		resp := &pb.CommandGetSchemaResponse{RequestId: &rid}
		tn, err := schemaTopic(m.GetTopic())
		var rec *record
		if err == nil {
			rec, _, err = r.load(ctx, tn)
		}
		var e entry
		var n int
		found := false
		if err == nil {
			e, n, found = rec.get(v)
		}
		switch {
		case err != nil:
			resp.ErrorCode, resp.ErrorMessage = pb.ServerError_TopicNotFound.Enum(), ptr(err.Error())
		case !found:
			resp.ErrorCode, resp.ErrorMessage = pb.ServerError_TopicNotFound.Enum(), ptr("Topic not found or no-schema")
		default:
			resp.Schema, resp.SchemaVersion = wireSchema(e, tn), versionBytes(n)
		}
		c.Send(&pb.BaseCommand{Type: pb.BaseCommand_GET_SCHEMA_RESPONSE.Enum(), GetSchemaResponse: resp})
	})
	return nil
}

// getOrCreateSchema answers GET_OR_CREATE_SCHEMA, registering the schema
// as a producer would (the Go client sends it for AUTO_PRODUCE and
// multi-schema producers).
func (r *Registry) getOrCreateSchema(c broker.Conn, cmd *pb.BaseCommand) error {
	m := cmd.GetOrCreateSchema
	if m == nil {
		return fmt.Errorf("%w: GET_OR_CREATE_SCHEMA without body", broker.ErrProtocol)
	}
	rid := m.GetRequestId()
	r.spawn(func(ctx context.Context) {
		resp := &pb.CommandGetOrCreateSchemaResponse{RequestId: &rid}
		tn, err := schemaTopic(m.GetTopic())
		v := -1
		if err == nil {
			if m.Schema == nil {
				err = fmt.Errorf("%w: missing schema", schema.ErrInvalid)
			} else {
				v, err = r.register(ctx, tn, wireInfo(m.Schema), byProducer)
			}
		}
		if err != nil {
			code := pb.ServerError_IncompatibleSchema
			if !errors.Is(err, schema.ErrIncompatible) && !errors.Is(err, schema.ErrInvalid) {
				code = pb.ServerError_MetadataError
			}
			resp.ErrorCode, resp.ErrorMessage = code.Enum(), ptr(err.Error())
		} else {
			resp.SchemaVersion = versionBytes(v)
		}
		c.Send(&pb.BaseCommand{Type: pb.BaseCommand_GET_OR_CREATE_SCHEMA_RESPONSE.Enum(), GetOrCreateSchemaResponse: resp})
	})
	return nil
}

func ptr[T any](v T) *T { return &v }
