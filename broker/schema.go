package broker

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/schema"
)

// schemaEntry is one schema version of a topic; versions are indexes into
// the topic's list, sent on the wire as 8-byte big-endian integers. A
// Deleted entry is a deletion marker: the versions before it are history
// (kept so that a number never names two schemas), the live versions are
// those after the last marker.
type schemaEntry struct {
	Type       int32             `json:"type"`
	Data       []byte            `json:"data"`
	Properties map[string]string `json:"properties,omitempty"`
	Timestamp  int64             `json:"timestamp"`
	Deleted    bool              `json:"deleted,omitempty"`
}

func (e *schemaEntry) info() schema.Info {
	return schema.Info{Type: e.Type, Data: e.Data, Properties: e.Properties}
}

// schemaRecord is a topic's schema node (JSON): its versions and the
// topic's compatibility strategy override. Nodes written before the
// record existed hold a bare JSON list of versions.
type schemaRecord struct {
	Versions      []schemaEntry `json:"versions"`
	Compatibility string        `json:"compatibility,omitempty"`
}

// live returns the index of the first live version.
func (r *schemaRecord) live() int {
	for i := len(r.Versions) - 1; i >= 0; i-- {
		if r.Versions[i].Deleted {
			return i + 1
		}
	}
	return 0
}

func (r *schemaRecord) liveInfos() []schema.Info {
	var out []schema.Info
	for _, e := range r.Versions[r.live():] {
		out = append(out, e.info())
	}
	return out
}

// find returns the live version equal to s, or -1.
func (r *schemaRecord) find(s schema.Info) int {
	for i := r.live(); i < len(r.Versions); i++ {
		if r.Versions[i].info().Equal(s) {
			return i
		}
	}
	return -1
}

// schemaRegistry keeps per-topic schema records in the metadata store
// (schemasPath/<tenant>/<ns>/<domain>/<local>). Every operation reads the
// node and writes it back with compare-and-set, so brokers sharing the
// store never lose a version; mu only serialises this broker's writers.
type schemaRegistry struct {
	store metadata.Store
	b     *Broker
	mu    sync.Mutex
}

func schemaKey(tn topicName) string {
	return schemasPath + "/" + tn.Tenant + "/" + tn.Namespace + "/" + tn.Domain + "/" + escapeLocal(tn.Local)
}

// schemaTopic returns the topic whose schema a name uses: partitions share
// their parent's schema.
func schemaTopic(tn topicName) topicName { return tn.Parent() }

func (r *schemaRegistry) load(ctx context.Context, tn topicName) (*schemaRecord, metadata.Version, error) {
	b, v, err := r.store.Get(ctx, schemaKey(tn))
	if errors.Is(err, metadata.ErrNotFound) {
		return &schemaRecord{}, metadata.NotExists, nil
	}
	if err != nil {
		return nil, 0, err
	}
	rec := &schemaRecord{}
	if len(b) > 0 && b[0] == '[' {
		err = json.Unmarshal(b, &rec.Versions)
	} else {
		err = json.Unmarshal(b, rec)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("schema node of %s: %w", tn, err)
	}
	return rec, v, nil
}

// update applies f to tn's record and stores it (compare-and-set,
// retried on a lost race). f returning errNoWrite stores nothing.
func (r *schemaRegistry) update(ctx context.Context, tn topicName, f func(*schemaRecord) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for attempt := 0; ; attempt++ {
		rec, ver, err := r.load(ctx, tn)
		if err != nil {
			return err
		}
		if err := f(rec); err != nil {
			if errors.Is(err, errNoWrite) {
				return nil
			}
			return err
		}
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		_, err = r.store.Put(ctx, schemaKey(tn), b, ver)
		if (errors.Is(err, metadata.ErrBadVersion) || errors.Is(err, metadata.ErrExists)) && attempt < 10 {
			continue
		}
		return err
	}
}

var errNoWrite = errors.New("no write")

func versionBytes(v int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// schemaMode says who brings a schema: it decides whether a new version
// may be registered.
type schemaMode int

const (
	schemaProducer schemaMode = iota
	schemaConsumer
	schemaAdmin
)

// strategy returns the compatibility strategy of tn: the topic's
// override, the namespace's schema_compatibility_strategy, its older
// schema_auto_update_compatibility_strategy, the broker default.
func (r *schemaRegistry) strategy(tn topicName, rec *schemaRecord) schema.Strategy {
	var topicSt, nsSt, nsAuto schema.Strategy
	topicSt, _ = schema.ParseStrategy(rec.Compatibility)
	if p := r.b.namespacePolicies(tn.NamespaceName()); p != nil {
		nsSt, _ = schema.ParseStrategy(p.SchemaCompatibilityStrategy)
		nsAuto, _ = schema.ParseStrategy(p.SchemaAutoUpdateCompatibilityStrategy)
	}
	def, err := schema.ParseStrategy(r.b.cfg.SchemaCompatibilityStrategy)
	if err != nil || def == schema.Undefined {
		def = schema.Full
	}
	return schema.Resolve(def, topicSt, nsSt, nsAuto)
}

// allowAutoUpdate reports the namespace's is_allow_auto_update_schema.
func (r *schemaRegistry) allowAutoUpdate(tn topicName) bool {
	if p := r.b.namespacePolicies(tn.NamespaceName()); p != nil && p.IsAllowAutoUpdateSchema != nil {
		return *p.IsAllowAutoUpdateSchema
	}
	return true
}

// validationEnforced reports whether producers without a schema are
// refused on topics that have one.
func (r *schemaRegistry) validationEnforced(tn topicName) bool {
	if p := r.b.namespacePolicies(tn.NamespaceName()); p != nil && p.SchemaValidationEnforced != nil {
		return *p.SchemaValidationEnforced
	}
	return r.b.cfg.SchemaValidationEnforced
}

// register returns the version of s on tn: an equal live version, or a
// new one if the strategy allows it and mode may register. A consumer's
// schema compatible with the topic's is accepted without registering
// (version -1). Refusals wrap schema.ErrIncompatible or ErrInvalid.
func (r *schemaRegistry) register(ctx context.Context, tn topicName, s schema.Info, mode schemaMode) (int, error) {
	tn = schemaTopic(tn)
	version := -1
	err := r.update(ctx, tn, func(rec *schemaRecord) error {
		if i := rec.find(s); i >= 0 {
			version = i
			return errNoWrite
		}
		live := rec.liveInfos()
		if mode != schemaAdmin && len(live) > 0 && !r.allowAutoUpdate(tn) {
			return fmt.Errorf("%w: the namespace does not allow automatic schema updates (is_allow_auto_update_schema=false)", schema.ErrIncompatible)
		}
		if err := schema.Check(live, s, r.strategy(tn, rec)); err != nil {
			return err
		}
		if mode == schemaConsumer && len(live) > 0 {
			return errNoWrite
		}
		rec.Versions = append(rec.Versions, schemaEntry{Type: s.Type, Data: s.Data, Properties: s.Properties, Timestamp: time.Now().UnixMilli()})
		version = len(rec.Versions) - 1
		return nil
	})
	return version, err
}

// check tests s against tn's versions without registering it.
func (r *schemaRegistry) check(ctx context.Context, tn topicName, s schema.Info) (schema.Strategy, error) {
	tn = schemaTopic(tn)
	rec, _, err := r.load(ctx, tn)
	if err != nil {
		return schema.Undefined, err
	}
	st := r.strategy(tn, rec)
	if rec.find(s) >= 0 {
		return st, nil
	}
	return st, schema.Check(rec.liveInfos(), s, st)
}

// get returns version v (or the latest live one with v < 0) of tn's
// schema; found is false for a deleted or absent version.
func (r *schemaRegistry) get(ctx context.Context, tn topicName, v int64) (schemaEntry, int, bool, error) {
	tn = schemaTopic(tn)
	rec, _, err := r.load(ctx, tn)
	if err != nil || len(rec.Versions) == 0 {
		return schemaEntry{}, 0, false, err
	}
	if v < 0 {
		v = int64(len(rec.Versions) - 1)
	}
	if v >= int64(len(rec.Versions)) || rec.Versions[v].Deleted {
		return schemaEntry{}, 0, false, nil
	}
	return rec.Versions[v], int(v), true, nil
}

// all returns the live versions with their numbers, oldest first.
func (r *schemaRegistry) all(ctx context.Context, tn topicName) ([]schemaEntry, int, error) {
	rec, _, err := r.load(ctx, schemaTopic(tn))
	if err != nil {
		return nil, 0, err
	}
	first := rec.live()
	return rec.Versions[first:], first, nil
}

// versionOf returns the live version equal to s, or -1.
func (r *schemaRegistry) versionOf(ctx context.Context, tn topicName, s schema.Info) (int, error) {
	rec, _, err := r.load(ctx, schemaTopic(tn))
	if err != nil {
		return -1, err
	}
	return rec.find(s), nil
}

// markDeleted deletes tn's schema as the admin API does: a marker
// version, so the next schema starts a new history (not checked against
// the deleted one) and old version numbers stay unambiguous. It returns
// the marker's version, or -1 when there was no live schema.
func (r *schemaRegistry) markDeleted(ctx context.Context, tn topicName) (int, error) {
	v := -1
	err := r.update(ctx, schemaTopic(tn), func(rec *schemaRecord) error {
		if len(rec.Versions) == 0 || rec.Versions[len(rec.Versions)-1].Deleted {
			return errNoWrite
		}
		rec.Versions = append(rec.Versions, schemaEntry{Deleted: true, Timestamp: time.Now().UnixMilli()})
		v = len(rec.Versions) - 1
		return nil
	})
	return v, err
}

// setStrategy sets (st == Undefined: removes) the topic's strategy
// override.
func (r *schemaRegistry) setStrategy(ctx context.Context, tn topicName, st schema.Strategy) error {
	return r.update(ctx, schemaTopic(tn), func(rec *schemaRecord) error {
		rec.Compatibility = ""
		if st != schema.Undefined {
			rec.Compatibility = st.String()
		}
		return nil
	})
}

// delete removes tn's schema node (topic deletion).
func (r *schemaRegistry) delete(ctx context.Context, tn topicName) error {
	tn = schemaTopic(tn)
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.store.Delete(ctx, schemaKey(tn), metadata.AnyVersion)
	if errors.Is(err, metadata.ErrNotFound) {
		return nil
	}
	return err
}

func pbSchemaInfo(s *pb.Schema) schema.Info {
	props := kvMap(s.Properties)
	if len(props) == 0 {
		props = nil
	}
	return schema.Info{Type: int32(s.GetType()), Data: s.SchemaData, Properties: props}
}

// attachSchema is the schema step of PRODUCER (producer) and SUBSCRIBE
// (consumer): the version to report, or a refusal with its code.
func (t *topic) attachSchema(ctx context.Context, s *pb.Schema, mode schemaMode) ([]byte, int32, error) {
	r := t.b.schemas
	if s == nil || s.GetType() == pb.Schema_None {
		// Bytes, no schema: allowed unless the topic has a schema and
		// validation is enforced (producers only, as in Pulsar).
		if mode == schemaProducer && r.validationEnforced(t.name) {
			if _, _, found, err := r.get(ctx, t.name, -1); err != nil {
				return nil, codeMetadataError, err
			} else if found {
				return nil, codeIncompatibleSchema, errors.New("the topic has a schema and schema validation is enforced: producers must bring a schema")
			}
		}
		return nil, 0, nil
	}
	v, err := r.register(ctx, t.name, pbSchemaInfo(s), mode)
	switch {
	case errors.Is(err, schema.ErrIncompatible), errors.Is(err, schema.ErrInvalid):
		return nil, codeIncompatibleSchema, err
	case err != nil:
		return nil, codeMetadataError, err
	case v < 0:
		return nil, 0, nil
	}
	return versionBytes(v), 0, nil
}

const codeIncompatibleSchema = int32(pb.ServerError_IncompatibleSchema)

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
		v = int64(binary.BigEndian.Uint64(m.SchemaVersion) & (1<<63 - 1))
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

// handleGetOrCreateSchema registers a schema as a producer would (the Go
// client sends it for AUTO_PRODUCE and multi-schema producers).
func (c *conn) handleGetOrCreateSchema(m *pb.CommandGetOrCreateSchema) {
	rid := m.GetRequestId()
	resp := &pb.CommandGetOrCreateSchemaResponse{RequestId: &rid}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	tn, err := parseTopicName(m.GetTopic())
	v := -1
	if err == nil {
		if m.Schema == nil {
			err = fmt.Errorf("%w: missing schema", schema.ErrInvalid)
		} else {
			v, err = c.b.schemas.register(ctx, tn, pbSchemaInfo(m.Schema), schemaProducer)
		}
	}
	if err != nil {
		code := pb.ServerError_IncompatibleSchema
		if !errors.Is(err, schema.ErrIncompatible) && !errors.Is(err, schema.ErrInvalid) {
			code = pb.ServerError_MetadataError
		}
		resp.ErrorCode = code.Enum()
		resp.ErrorMessage = ptr(err.Error())
	} else {
		resp.SchemaVersion = versionBytes(v)
	}
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_GET_OR_CREATE_SCHEMA_RESPONSE.Enum(), GetOrCreateSchemaResponse: resp})
}
