package schemareg_test

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/schema"
	"github.com/magnetar-mq/magnetar/schemareg"
	"github.com/magnetar-mq/magnetar/topicreg"
)

// The registry end to end: a broker from broker/brokertest (the
// registry on, as in the binary) and pulsar-client-go.

const (
	avroV1 = `{"type":"record","name":"User","fields":[{"name":"name","type":"string"}]}`
	// V2 adds a field with a default: compatible both ways with V1.
	avroV2 = `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"age","type":"int","default":0}]}`
	// V3 adds a field without a default: old readers can read it
	// (FORWARD), it cannot read old data (not BACKWARD).
	avroV3 = `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"age","type":"int","default":0},{"name":"email","type":"string"}]}`
	// V4 drops "name": it reads old data (BACKWARD), V1 cannot read it.
	avroV4 = `{"type":"record","name":"User","fields":[{"name":"age","type":"int","default":0}]}`
)

// tryProducer creates a producer with schema s and reports the error.
func tryProducer(t *testing.T, cl pulsar.Client, topic string, s pulsar.Schema) error {
	t.Helper()
	p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: s})
	if err == nil {
		p.Close()
	}
	return err
}

func isIncompatible(err error) bool {
	return err != nil && strings.Contains(err.Error(), "IncompatibleSchema")
}

// TestE2ESchemaStrategies evolves a topic's AVRO schema under every
// strategy (set as the topic override) and checks acceptance and refusal
// as the Go client sees them.
func TestE2ESchemaStrategies(t *testing.T) {
	tb := brokertest.Start(t, brokertest.Options{})
	cl := tb.Client(t)
	ctx := context.Background()
	cases := []struct {
		strategy string
		history  []string // registered under ALWAYS_COMPATIBLE first
		cand     string
		ok       bool
	}{
		{"BACKWARD", []string{avroV1}, avroV2, true},
		{"BACKWARD", []string{avroV2}, avroV3, false},
		{"BACKWARD", []string{avroV1}, avroV4, true},
		{"FORWARD", []string{avroV2}, avroV3, true},
		{"FORWARD", []string{avroV1}, avroV4, false},
		{"FULL", []string{avroV1}, avroV2, true},
		{"FULL", []string{avroV2}, avroV3, false},
		{"FULL", []string{avroV1}, avroV4, false},
		{"ALWAYS_COMPATIBLE", []string{avroV1}, avroV4, true},
		{"ALWAYS_INCOMPATIBLE", []string{avroV1}, avroV2, false},
		{"ALWAYS_INCOMPATIBLE", []string{avroV1}, avroV1, true}, // an existing version is not new
		// Transitive forms: compatible with the latest, not with all.
		{"BACKWARD", []string{avroV4, avroV1}, avroV2, true},
		{"BACKWARD_TRANSITIVE", []string{avroV3, avroV1}, avroV2, true},
		{"BACKWARD_TRANSITIVE", []string{avroV4, avroV1}, avroV2, false},
		{"FORWARD", []string{avroV1, avroV4}, avroV2, true},
		{"FORWARD_TRANSITIVE", []string{avroV1, avroV4}, avroV2, true},
		{"FORWARD_TRANSITIVE", []string{avroV1, avroV2}, avroV4, false},
		{"FULL", []string{avroV4, avroV2}, avroV1, true},
		{"FULL_TRANSITIVE", []string{avroV4, avroV2}, avroV1, false},
	}
	for i, c := range cases {
		topic := brokertest.Topic("schema-strat")
		if err := tb.Schemas.SetTopicSchemaStrategy(ctx, topic, "ALWAYS_COMPATIBLE"); err != nil {
			t.Fatal(err)
		}
		for _, h := range c.history {
			if err := tryProducer(t, cl, topic, pulsar.NewAvroSchema(h, nil)); err != nil {
				t.Fatalf("case %d: history: %v", i, err)
			}
		}
		if err := tb.Schemas.SetTopicSchemaStrategy(ctx, topic, c.strategy); err != nil {
			t.Fatal(err)
		}
		err := tryProducer(t, cl, topic, pulsar.NewAvroSchema(c.cand, nil))
		if c.ok && err != nil || !c.ok && !isIncompatible(err) {
			t.Errorf("case %d (%s): producer error %v, want accepted=%v", i, c.strategy, err, c.ok)
		}
		all, err := tb.Schemas.Schemas(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		wantVersions := len(c.history)
		if c.ok && c.cand != c.history[len(c.history)-1] && !(c.strategy == "ALWAYS_INCOMPATIBLE") {
			wantVersions++
		}
		if len(all) != wantVersions {
			t.Errorf("case %d: %d versions registered, want %d", i, len(all), wantVersions)
		}
	}
}

// TestE2ESchemaNamespacePolicies: the namespace strategy applies, a type
// change is refused, producers without a schema are refused only when
// validation is enforced, and is_allow_auto_update_schema=false stops
// clients (not the admin API) from adding versions.
func TestE2ESchemaNamespacePolicies(t *testing.T) {
	tb := brokertest.Start(t, brokertest.Options{})
	cl := tb.Client(t)
	ctx := context.Background()
	ns := "public/default"
	setNS := func(f func(p *policy.Policies)) {
		t.Helper()
		if err := tb.Policies().Update(ctx, ns, func(p *policy.Policies) error { f(p); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	topic := brokertest.Topic("schema-ns")
	if err := tryProducer(t, cl, topic, pulsar.NewAvroSchema(avroV2, nil)); err != nil {
		t.Fatal(err)
	}
	// Default FULL: V3 refused. Namespace FORWARD: accepted.
	if err := tryProducer(t, cl, topic, pulsar.NewAvroSchema(avroV3, nil)); !isIncompatible(err) {
		t.Fatalf("V3 under the FULL default: %v", err)
	}
	setNS(func(p *policy.Policies) { p.SchemaCompatibilityStrategy = "FORWARD" })
	if err := tryProducer(t, cl, topic, pulsar.NewAvroSchema(avroV3, nil)); err != nil {
		t.Fatalf("V3 under namespace FORWARD: %v", err)
	}
	// The topic override beats the namespace.
	if err := tb.Schemas.SetTopicSchemaStrategy(ctx, topic, "ALWAYS_INCOMPATIBLE"); err != nil {
		t.Fatal(err)
	}
	if err := tryProducer(t, cl, topic, pulsar.NewAvroSchema(avroV1, nil)); !isIncompatible(err) {
		t.Fatalf("V1 under topic ALWAYS_INCOMPATIBLE: %v", err)
	}
	if err := tb.Schemas.SetTopicSchemaStrategy(ctx, topic, ""); err != nil {
		t.Fatal(err)
	}
	// STRING on an AVRO topic: refused; a consumer too.
	if err := tryProducer(t, cl, topic, pulsar.NewStringSchema(nil)); !isIncompatible(err) {
		t.Fatalf("STRING producer on an AVRO topic: %v", err)
	}
	if _, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Schema: pulsar.NewStringSchema(nil)}); !isIncompatible(err) {
		t.Fatalf("STRING consumer on an AVRO topic: %v", err)
	}
	// No schema: allowed, until validation is enforced.
	if err := tryProducer(t, cl, topic, nil); err != nil {
		t.Fatalf("bytes producer: %v", err)
	}
	setNS(func(p *policy.Policies) { v := true; p.SchemaValidationEnforced = &v })
	if err := tryProducer(t, cl, topic, nil); !isIncompatible(err) {
		t.Fatalf("bytes producer with validation enforced: %v", err)
	}
	// Auto update off: a compatible new version is refused to clients.
	setNS(func(p *policy.Policies) { f := false; p.IsAllowAutoUpdateSchema = &f })
	v4 := `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"age","type":"int","default":0},{"name":"email","type":"string"},{"name":"x","type":"int","default":1}]}`
	if err := tryProducer(t, cl, topic, pulsar.NewAvroSchema(v4, nil)); !isIncompatible(err) {
		t.Fatalf("new version with auto update off: %v", err)
	}
	if err := tryProducer(t, cl, topic, pulsar.NewAvroSchema(avroV3, nil)); err != nil {
		t.Fatalf("existing version with auto update off: %v", err)
	}
	if _, err := tb.Schemas.CreateSchema(ctx, topic, schema.Info{Type: schema.TypeAvro, Data: []byte(v4)}); err != nil {
		t.Fatalf("admin upload with auto update off: %v", err)
	}
	// Messages round-trip with the schema.
	type user struct {
		Name string `avro:"name"`
		Age  int    `avro:"age"`
	}
	setNS(func(p *policy.Policies) { p.IsAllowAutoUpdateSchema = nil; p.SchemaCompatibilityStrategy = "" })
	t2 := brokertest.Topic("schema-rt")
	prod := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: t2, Schema: pulsar.NewAvroSchema(avroV2, nil)})
	cons := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: t2, SubscriptionName: "s", Schema: pulsar.NewAvroSchema(avroV2, nil), SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Value: &user{Name: "ann", Age: 7}}); err != nil {
		t.Fatal(err)
	}
	m := brokertest.Receive(t, cons, 1)[0]
	var u user
	if err := m.GetSchemaValue(&u); err != nil || u.Name != "ann" || u.Age != 7 {
		t.Fatalf("decoded %+v, %v", u, err)
	}
	// Delete: the next schema starts a new history, and the deleted
	// versions are gone as in Pulsar: a consumer meeting a message written
	// under one gets an error decoding it (pulsar-client-go's
	// TestProducerWithSchemaAndConsumerSchemaNotFound).
	// (A new consumer: the first one has version 0 cached.)
	late := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: t2, SubscriptionName: "late", Schema: pulsar.NewAvroSchema(avroV2, nil), SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if _, err := tb.Schemas.DeleteSchema(ctx, t2); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := tb.Schemas.Schema(ctx, t2, 0); err != nil || ok {
		t.Fatalf("version 0 after delete: found %v, %v", ok, err)
	}
	if m := brokertest.Receive(t, late, 1)[0]; m.GetSchemaValue(&u) == nil {
		t.Fatalf("message under a deleted schema decoded: %+v", u)
	}
	late.Close()
	prod.Close()
	cons.Close()
	if err := tryProducer(t, cl, t2, pulsar.NewStringSchema(nil)); err != nil {
		t.Fatalf("STRING after the AVRO schema was deleted: %v", err)
	}
	if si, ok, err := tb.Schemas.Schema(ctx, t2, -1); err != nil || !ok || si.Number != 2 || si.Type != 1 {
		t.Fatalf("latest after delete and re-register: %+v %v %v", si, ok, err)
	}
}

// TestE2ESchemaJSONAndProtobufNative: JSON schemas follow the Avro rules;
// PROTOBUF_NATIVE versions must keep their root message type.
func TestE2ESchemaJSONAndProtobufNative(t *testing.T) {
	tb := brokertest.Start(t, brokertest.Options{})
	cl := tb.Client(t)
	jt := brokertest.Topic("schema-json")
	if err := tryProducer(t, cl, jt, pulsar.NewJSONSchema(avroV1, nil)); err != nil {
		t.Fatal(err)
	}
	if err := tryProducer(t, cl, jt, pulsar.NewJSONSchema(avroV2, nil)); err != nil {
		t.Fatalf("compatible JSON: %v", err)
	}
	if err := tryProducer(t, cl, jt, pulsar.NewJSONSchema(avroV3, nil)); !isIncompatible(err) {
		t.Fatalf("incompatible JSON under FULL: %v", err)
	}
	pt := brokertest.Topic("schema-pbn")
	if err := tryProducer(t, cl, pt, pulsar.NewProtoNativeSchemaWithMessage(&pb.MessageIdData{}, nil)); err != nil {
		t.Fatal(err)
	}
	if err := tryProducer(t, cl, pt, pulsar.NewProtoNativeSchemaWithMessage(&pb.MessageIdData{}, nil)); err != nil {
		t.Fatalf("same PROTOBUF_NATIVE: %v", err)
	}
	if err := tryProducer(t, cl, pt, pulsar.NewProtoNativeSchemaWithMessage(&pb.KeyValue{}, nil)); !isIncompatible(err) {
		t.Fatalf("PROTOBUF_NATIVE with another root message: %v", err)
	}
}

type jsonRec struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

const jsonRecSchema = `{"type":"record","name":"Rec","namespace":"test","fields":[{"name":"id","type":"int"},{"name":"name","type":"string"}]}`

func TestE2ESchema(t *testing.T) {
	tb := brokertest.Start(t, brokertest.Options{})
	cl := tb.Client(t)
	topic := brokertest.Topic("schema")
	cons := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Schema: pulsar.NewJSONSchema(jsonRecSchema, nil)})
	prod := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewJSONSchema(jsonRecSchema, nil)})
	if _, err := prod.Send(brokertest.Ctx(t), &pulsar.ProducerMessage{Value: &jsonRec{ID: 7, Name: "seven"}}); err != nil {
		t.Fatal(err)
	}
	m := brokertest.Receive(t, cons, 1)[0]
	var r jsonRec
	if err := m.GetSchemaValue(&r); err != nil {
		t.Fatal(err)
	}
	if r.ID != 7 || r.Name != "seven" {
		t.Fatalf("decoded %+v", r)
	}
	if len(m.SchemaVersion()) != 8 {
		t.Fatalf("schema version %x, want 8 bytes", m.SchemaVersion())
	}
	// A schema-less producer is allowed on a topic with a schema.
	plain := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic})
	if _, err := plain.Send(brokertest.Ctx(t), &pulsar.ProducerMessage{Payload: []byte(`{"id":1,"name":"x"}`)}); err != nil {
		t.Fatal(err)
	}
}

// TestRawSchemaCommands: GET_SCHEMA of a topic without a schema answers
// an error; GET_OR_CREATE_SCHEMA on a partition registers on the
// partitioned topic (an equal schema gets its old version back), and
// GET_SCHEMA without a version answers the latest.
func TestRawSchemaCommands(t *testing.T) {
	// Schema types other than AVRO/JSON are compatible only when equal:
	// this test registers two STRING versions, so it allows any change.
	tb := brokertest.Start(t, brokertest.Options{Schema: schemareg.Config{CompatibilityStrategy: "ALWAYS_COMPATIBLE"}})
	r := brokertest.Dial(t, tb)
	r.Send(&pb.BaseCommand{Type: pb.BaseCommand_GET_SCHEMA.Enum(), GetSchema: &pb.CommandGetSchema{
		RequestId: proto.Uint64(2), Topic: proto.String("sch"),
	}})
	f := r.Next()
	if f.Type != pb.BaseCommand_GET_SCHEMA_RESPONSE || f.Cmd.GetSchemaResponse.Schema != nil ||
		f.Cmd.GetSchemaResponse.GetErrorCode() != pb.ServerError_TopicNotFound || f.Cmd.GetSchemaResponse.ErrorMessage == nil {
		t.Fatalf("GET_SCHEMA without schema: %v", f.Cmd)
	}
	for i, data := range []string{"s1", "s2", "s1"} {
		r.Send(&pb.BaseCommand{Type: pb.BaseCommand_GET_OR_CREATE_SCHEMA.Enum(), GetOrCreateSchema: &pb.CommandGetOrCreateSchema{
			RequestId: proto.Uint64(uint64(3 + i)), Topic: proto.String("persistent://public/default/sch-partition-1"),
			Schema: &pb.Schema{Name: proto.String("x"), SchemaData: []byte(data), Type: pb.Schema_String.Enum()},
		}})
		f = r.Next()
		v := f.Cmd.GetOrCreateSchemaResponse.SchemaVersion
		want := []uint64{0, 1, 0}[i]
		if len(v) != 8 || binary.BigEndian.Uint64(v) != want {
			t.Fatalf("GET_OR_CREATE_SCHEMA %s: version %x, want %d", data, v, want)
		}
	}
	r.Send(&pb.BaseCommand{Type: pb.BaseCommand_GET_SCHEMA.Enum(), GetSchema: &pb.CommandGetSchema{
		RequestId: proto.Uint64(9), Topic: proto.String("sch"),
	}})
	f = r.Next()
	if s := f.Cmd.GetSchemaResponse.Schema; s == nil || string(s.SchemaData) != "s2" {
		t.Fatalf("GET_SCHEMA latest: %v", f.Cmd)
	}
}

// TestTopicDeletionDeletesSchema: deleting a topic deletes its schema
// (the next producer starts a new history, so a type change is
// accepted); deleting one partition leaves the partitioned topic's
// schema, deleting the partitioned topic removes it.
func TestTopicDeletionDeletesSchema(t *testing.T) {
	tb := brokertest.Start(t, brokertest.Options{})
	cl := tb.Client(t)
	ctx := brokertest.Ctx(t)
	topic := brokertest.Topic("schema-del")
	if err := tryProducer(t, cl, topic, pulsar.NewStringSchema(nil)); err != nil {
		t.Fatal(err)
	}
	if err := tryProducer(t, cl, topic, pulsar.NewAvroSchema(avroV1, nil)); !isIncompatible(err) {
		t.Fatalf("AVRO after STRING under FULL: %v", err)
	}
	if err := tb.Registry().DeleteTopic(ctx, topic, true); err != nil {
		t.Fatal(err)
	}
	if vs, err := tb.Schemas.Schemas(ctx, topic); err != nil || len(vs) != 0 {
		t.Fatalf("versions after the topic was deleted: %v %v", vs, err)
	}
	if err := tryProducer(t, cl, topic, pulsar.NewAvroSchema(avroV1, nil)); err != nil {
		t.Fatalf("AVRO on the topic created again: %v", err)
	}
	if si, ok, err := tb.Schemas.Schema(ctx, topic, -1); err != nil || !ok || si.Number != 0 || si.Type != schema.TypeAvro {
		t.Fatalf("schema of the topic created again: %+v %v %v, want AVRO version 0", si, ok, err)
	}

	pt := brokertest.Topic("schema-delp")
	if err := tb.Admin().Topics.CreatePartitionedTopic(ctx, pt, topicreg.PartitionedMetadata{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	if err := tryProducer(t, cl, pt, pulsar.NewStringSchema(nil)); err != nil {
		t.Fatal(err)
	}
	if err := tb.Registry().DeleteTopic(ctx, pt+"-partition-0", true); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := tb.Schemas.Schema(ctx, pt, -1); err != nil || !ok {
		t.Fatalf("schema after deleting one partition: found %v, %v", ok, err)
	}
	if err := tb.Admin().Topics.DeletePartitionedTopic(ctx, pt); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := tb.Schemas.Schema(ctx, pt+"-partition-1", -1); err != nil || ok {
		t.Fatalf("schema after deleting the partitioned topic: found %v, %v", ok, err)
	}
	if ok, err := tb.Meta.Exists(ctx, schemareg.Path+"/public/default/persistent/"+strings.TrimPrefix(pt, "persistent://public/default/")); err != nil || ok {
		t.Fatalf("schema node of the deleted partitioned topic: exists %v, %v", ok, err)
	}
}
