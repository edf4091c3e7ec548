package broker

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

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
	tb := startBroker(t, nil)
	cl := tb.client(t)
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
		topic := newTopicName("schema-strat")
		if err := tb.SetTopicSchemaStrategy(ctx, topic, "ALWAYS_COMPATIBLE"); err != nil {
			t.Fatal(err)
		}
		for _, h := range c.history {
			if err := tryProducer(t, cl, topic, pulsar.NewAvroSchema(h, nil)); err != nil {
				t.Fatalf("case %d: history: %v", i, err)
			}
		}
		if err := tb.SetTopicSchemaStrategy(ctx, topic, c.strategy); err != nil {
			t.Fatal(err)
		}
		err := tryProducer(t, cl, topic, pulsar.NewAvroSchema(c.cand, nil))
		if c.ok && err != nil || !c.ok && !isIncompatible(err) {
			t.Errorf("case %d (%s): producer error %v, want accepted=%v", i, c.strategy, err, c.ok)
		}
		all, err := tb.Schemas(ctx, topic)
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
	tb := startBroker(t, nil)
	cl := tb.client(t)
	ctx := context.Background()
	ns := "public/default"
	setNS := func(f func(p *policy.Policies)) {
		t.Helper()
		if err := tb.Policies().Update(ctx, ns, func(p *policy.Policies) error { f(p); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	topic := newTopicName("schema-ns")
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
	if err := tb.SetTopicSchemaStrategy(ctx, topic, "ALWAYS_INCOMPATIBLE"); err != nil {
		t.Fatal(err)
	}
	if err := tryProducer(t, cl, topic, pulsar.NewAvroSchema(avroV1, nil)); !isIncompatible(err) {
		t.Fatalf("V1 under topic ALWAYS_INCOMPATIBLE: %v", err)
	}
	if err := tb.SetTopicSchemaStrategy(ctx, topic, ""); err != nil {
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
	if _, err := tb.CreateSchema(ctx, topic, SchemaInfo{Type: 4, Data: []byte(v4)}); err != nil {
		t.Fatalf("admin upload with auto update off: %v", err)
	}
	// Messages round-trip with the schema.
	type user struct {
		Name string `avro:"name"`
		Age  int    `avro:"age"`
	}
	setNS(func(p *policy.Policies) { p.IsAllowAutoUpdateSchema = nil; p.SchemaCompatibilityStrategy = "" })
	t2 := newTopicName("schema-rt")
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: t2, Schema: pulsar.NewAvroSchema(avroV2, nil)})
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: t2, SubscriptionName: "s", Schema: pulsar.NewAvroSchema(avroV2, nil), SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Value: &user{Name: "ann", Age: 7}}); err != nil {
		t.Fatal(err)
	}
	m := receiveN(t, cons, 1)[0]
	var u user
	if err := m.GetSchemaValue(&u); err != nil || u.Name != "ann" || u.Age != 7 {
		t.Fatalf("decoded %+v, %v", u, err)
	}
	// Delete: the next schema starts a new history.
	if _, err := tb.DeleteSchema(ctx, t2); err != nil {
		t.Fatal(err)
	}
	prod.Close()
	cons.Close()
	if err := tryProducer(t, cl, t2, pulsar.NewStringSchema(nil)); err != nil {
		t.Fatalf("STRING after the AVRO schema was deleted: %v", err)
	}
	if si, ok, err := tb.Schema(ctx, t2, -1); err != nil || !ok || si.Version != 2 || si.Type != 1 {
		t.Fatalf("latest after delete and re-register: %+v %v %v", si, ok, err)
	}
}

// TestE2ESchemaJSONAndProtobufNative: JSON schemas follow the Avro rules;
// PROTOBUF_NATIVE versions must keep their root message type.
func TestE2ESchemaJSONAndProtobufNative(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	jt := newTopicName("schema-json")
	if err := tryProducer(t, cl, jt, pulsar.NewJSONSchema(avroV1, nil)); err != nil {
		t.Fatal(err)
	}
	if err := tryProducer(t, cl, jt, pulsar.NewJSONSchema(avroV2, nil)); err != nil {
		t.Fatalf("compatible JSON: %v", err)
	}
	if err := tryProducer(t, cl, jt, pulsar.NewJSONSchema(avroV3, nil)); !isIncompatible(err) {
		t.Fatalf("incompatible JSON under FULL: %v", err)
	}
	pt := newTopicName("schema-pbn")
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
