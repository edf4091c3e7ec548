package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// schemaEntry is one registered schema version of a topic. Versions are
// indexes into the topic's list, sent on the wire as 8-byte big-endian
// integers. Every schema is accepted (ALWAYS_COMPATIBLE); an identical
// (type, data, properties) triple maps to its existing version.
type schemaEntry struct {
	Type       int32             `json:"type"`
	Data       []byte            `json:"data"`
	Properties map[string]string `json:"properties,omitempty"`
	Timestamp  int64             `json:"timestamp"`
}

func (e *schemaEntry) equal(o *schemaEntry) bool {
	if e.Type != o.Type || !bytes.Equal(e.Data, o.Data) || len(e.Properties) != len(o.Properties) {
		return false
	}
	for k, v := range e.Properties {
		if o.Properties[k] != v {
			return false
		}
	}
	return true
}

// schemaRegistry keeps per-topic schema lists in the metadata store
// (schemasPath/<tenant>/<ns>/<domain>/<local>, JSON list), with a cache.
type schemaRegistry struct {
	store metadata.Store
	mu    struct {
		sync.Mutex
		cache map[string][]schemaEntry
	}
}

func schemaKey(tn topicName) string {
	return schemasPath + "/" + tn.Tenant + "/" + tn.Namespace + "/" + tn.Domain + "/" + escapeLocal(tn.Local)
}

// schemaTopic returns the topic whose schema a name uses: partitions share
// their parent's schema.
func schemaTopic(tn topicName) topicName { return tn.Parent() }

func (r *schemaRegistry) loadLocked(ctx context.Context, tn topicName) ([]schemaEntry, error) {
	key := schemaKey(tn)
	if l, ok := r.mu.cache[key]; ok {
		return l, nil
	}
	b, _, err := r.store.Get(ctx, key)
	if errors.Is(err, metadata.ErrNotFound) {
		r.mu.cache[key] = nil
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var l []schemaEntry
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, err
	}
	r.mu.cache[key] = l
	return l, nil
}

func versionBytes(v int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// getOrCreate returns the version of s on tn, registering it if new.
func (r *schemaRegistry) getOrCreate(ctx context.Context, tn topicName, s *pb.Schema) ([]byte, error) {
	tn = schemaTopic(tn)
	e := schemaEntry{Type: int32(s.GetType()), Data: s.SchemaData, Properties: kvMap(s.Properties), Timestamp: time.Now().UnixMilli()}
	if len(e.Properties) == 0 {
		e.Properties = nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	l, err := r.loadLocked(ctx, tn)
	if err != nil {
		return nil, err
	}
	if i := slices.IndexFunc(l, func(o schemaEntry) bool { return o.equal(&e) }); i >= 0 {
		return versionBytes(i), nil
	}
	nl := append(slices.Clip(l), e)
	b, err := json.Marshal(nl)
	if err != nil {
		return nil, err
	}
	if _, err := r.store.Put(ctx, schemaKey(tn), b, metadata.AnyVersion); err != nil {
		return nil, err
	}
	r.mu.cache[schemaKey(tn)] = nl
	return versionBytes(len(nl) - 1), nil
}

// get returns version v (or the latest with v < 0) of tn's schema.
func (r *schemaRegistry) get(ctx context.Context, tn topicName, v int64) (schemaEntry, int, bool, error) {
	tn = schemaTopic(tn)
	r.mu.Lock()
	defer r.mu.Unlock()
	l, err := r.loadLocked(ctx, tn)
	if err != nil || len(l) == 0 {
		return schemaEntry{}, 0, false, err
	}
	if v < 0 {
		v = int64(len(l) - 1)
	}
	if v >= int64(len(l)) {
		return schemaEntry{}, 0, false, nil
	}
	return l[v], int(v), true, nil
}

// delete removes every schema of tn.
func (r *schemaRegistry) delete(ctx context.Context, tn topicName) error {
	tn = schemaTopic(tn)
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.mu.cache, schemaKey(tn))
	err := r.store.Delete(ctx, schemaKey(tn), metadata.AnyVersion)
	if errors.Is(err, metadata.ErrNotFound) {
		return nil
	}
	return err
}

func (t *topic) getOrCreateSchema(ctx context.Context, s *pb.Schema) ([]byte, error) {
	return t.b.schemas.getOrCreate(ctx, t.name, s)
}

// ensureSubscription creates a durable subscription at the end of the
// topic if it does not exist (PRODUCER's initial_subscription_name).
func (t *topic) ensureSubscription(name string) error {
	t.mu.Lock()
	_, ok := t.mu.subs[name]
	t.mu.Unlock()
	if ok {
		return nil
	}
	_, err := t.getOrCreateSub(subscribeReq{sub: name, typ: SubExclusive, durable: true, initial: initialLatest})
	return err
}

func (c *conn) handleGetSchema(m *pb.CommandGetSchema) {
	rid := m.GetRequestId()
	resp := &pb.CommandGetSchemaResponse{RequestId: &rid}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	tn, err := parseTopicName(m.GetTopic())
	v := int64(-1)
	if len(m.SchemaVersion) == 8 {
		v = int64(binary.BigEndian.Uint64(m.SchemaVersion))
	}
	var e schemaEntry
	var ver int
	found := false
	if err == nil {
		e, ver, found, err = c.b.schemas.get(ctx, tn, v)
	}
	if err != nil || !found {
		msg := "Topic not found or no-schema"
		if err != nil {
			msg = err.Error()
		}
		resp.ErrorCode = pb.ServerError_TopicNotFound.Enum()
		resp.ErrorMessage = &msg
	} else {
		resp.Schema = e.toPB(tn)
		resp.SchemaVersion = versionBytes(ver)
	}
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_GET_SCHEMA_RESPONSE.Enum(), GetSchemaResponse: resp})
}

func (e *schemaEntry) toPB(tn topicName) *pb.Schema {
	s := &pb.Schema{Name: ptr(tn.Local), SchemaData: e.Data, Type: pb.Schema_Type(e.Type).Enum()}
	if s.SchemaData == nil {
		s.SchemaData = []byte{}
	}
	for k, v := range e.Properties {
		s.Properties = append(s.Properties, &pb.KeyValue{Key: ptr(k), Value: ptr(v)})
	}
	return s
}

func (c *conn) handleGetOrCreateSchema(m *pb.CommandGetOrCreateSchema) {
	rid := m.GetRequestId()
	resp := &pb.CommandGetOrCreateSchemaResponse{RequestId: &rid}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	tn, err := parseTopicName(m.GetTopic())
	var v []byte
	if err == nil {
		if m.Schema == nil {
			err = errors.New("missing schema")
		} else {
			v, err = c.b.schemas.getOrCreate(ctx, tn, m.Schema)
		}
	}
	if err != nil {
		resp.ErrorCode = pb.ServerError_IncompatibleSchema.Enum()
		resp.ErrorMessage = ptr(err.Error())
	} else {
		resp.SchemaVersion = v
	}
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_GET_OR_CREATE_SCHEMA_RESPONSE.Enum(), GetOrCreateSchemaResponse: resp})
}
