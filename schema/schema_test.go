package schema

import (
	"encoding/binary"
	"errors"
	"testing"
)

const (
	v1 = `{"type":"record","name":"User","fields":[{"name":"name","type":"string"}]}`
	// v2 adds a field with a default: readable both ways.
	v2 = `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"age","type":"int","default":0}]}`
	// v3 adds a field without default: new readers cannot read old data.
	v3 = `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"age","type":"int","default":0},{"name":"email","type":"string"}]}`
	// v4 drops "name" (no default in v1): old readers cannot read new data.
	v4 = `{"type":"record","name":"User","fields":[{"name":"age","type":"int","default":0}]}`
)

func avroInfo(s string) Info { return Info{Type: TypeAvro, Data: []byte(s)} }

func TestCheckStrategies(t *testing.T) {
	cases := []struct {
		st       Strategy
		existing []string
		cand     string
		ok       bool
	}{
		{Backward, []string{v1}, v2, true},
		{Backward, []string{v2}, v3, false}, // email has no default
		{Forward, []string{v2}, v3, true},   // old readers ignore email
		{Forward, []string{v1}, v4, false},  // v1 needs name
		{Backward, []string{v1}, v4, true},  // v4 reads v1 data (age default)
		{Full, []string{v1}, v2, true},
		{Full, []string{v2}, v3, false},
		{Full, []string{v1}, v4, false},
		{AlwaysCompatible, []string{v1}, v4, true},
		{AlwaysIncompatible, []string{v1}, v2, false},
		// Transitive: v4 after v1,v2 under FORWARD: v2 reads v4 (name? v2
		// needs name without default) -> refused either way; use
		// BACKWARD: v3 vs latest v3-compatible chain.
		{ForwardTransitive, []string{v1, v2}, v4, false},
		{Forward, []string{v4}, v2, true},               // latest only: v4 reads v2 data
		{ForwardTransitive, []string{v1, v4}, v2, true}, // v1 and v4 can read v2 data
		{BackwardTransitive, []string{v1, v2}, v3, false},
		{Backward, []string{v4}, v1, false},               // v1 needs name, v4 data has none
		{BackwardTransitive, []string{v1, v4}, v2, false}, // v2 cannot read v4 data (no name)
		{Backward, []string{v1, v2}, v2, true},            // equal to the latest
	}
	for i, c := range cases {
		var ex []Info
		for _, s := range c.existing {
			ex = append(ex, avroInfo(s))
		}
		err := Check(ex, avroInfo(c.cand), c.st)
		if (err == nil) != c.ok {
			t.Errorf("case %d %s: err=%v, want ok=%v", i, c.st, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrIncompatible) {
			t.Errorf("case %d: error %v does not wrap ErrIncompatible", i, err)
		}
	}
}

func TestCheckTypes(t *testing.T) {
	str := Info{Type: TypeString}
	if err := Check([]Info{avroInfo(v1)}, str, Full); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("STRING after AVRO: %v", err)
	}
	if err := Check([]Info{avroInfo(v1)}, str, AlwaysCompatible); err != nil {
		t.Fatalf("ALWAYS_COMPATIBLE type change: %v", err)
	}
	if err := Check([]Info{str}, str, Full); err != nil {
		t.Fatalf("STRING after STRING: %v", err)
	}
	if err := Check([]Info{{Type: 9}}, Info{Type: 8}, Full); err == nil {
		t.Fatal("INT32 after INT64 accepted")
	}
	if err := Check(nil, Info{Type: TypeAvro, Data: []byte("{not json")}, Full); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad AVRO: %v", err)
	}
	if err := Check(nil, Info{Type: 99}, Full); !errors.Is(err, ErrInvalid) {
		t.Fatalf("unknown type: %v", err)
	}
}

func kv(k, v Info) Info {
	d := binary.BigEndian.AppendUint32(nil, uint32(len(k.Data)))
	d = append(d, k.Data...)
	d = binary.BigEndian.AppendUint32(d, uint32(len(v.Data)))
	d = append(d, v.Data...)
	return Info{Type: TypeKeyValue, Data: d, Properties: map[string]string{
		PropKeyType: TypeName(k.Type), PropValueType: TypeName(v.Type), "kv.encoding.type": "INLINE"}}
}

func TestCheckKeyValue(t *testing.T) {
	str := Info{Type: TypeString}
	if err := Check([]Info{kv(str, avroInfo(v1))}, kv(str, avroInfo(v2)), Backward); err != nil {
		t.Fatalf("compatible value: %v", err)
	}
	if err := Check([]Info{kv(str, avroInfo(v2))}, kv(str, avroInfo(v3)), Backward); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("incompatible value: %v", err)
	}
	if err := Check([]Info{kv(str, avroInfo(v1))}, kv(Info{Type: 9}, avroInfo(v1)), Backward); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("key type change: %v", err)
	}
	bad := Info{Type: TypeKeyValue, Data: []byte{0, 0, 0, 9, 1}}
	if err := Validate(bad); !errors.Is(err, ErrInvalid) {
		t.Fatalf("truncated KEY_VALUE: %v", err)
	}
	huge := Info{Type: TypeKeyValue, Data: []byte{0xff, 0xff, 0xff, 0xff}}
	if err := Validate(huge); !errors.Is(err, ErrInvalid) {
		t.Fatalf("KEY_VALUE with a 4 GiB part: %v", err)
	}
}

func TestCheckProtobufNative(t *testing.T) {
	pn := func(root string) Info {
		return Info{Type: TypeProtobufNative, Data: []byte(`{"fileDescriptorSet":"AAAA","rootMessageTypeName":"` + root + `","rootFileDescriptorName":"a.proto"}`)}
	}
	if err := Check([]Info{pn("a.M")}, Info{Type: TypeProtobufNative, Data: []byte(`{"fileDescriptorSet":"BBBB","rootMessageTypeName":"a.M","rootFileDescriptorName":"a.proto"}`)}, Full); err != nil {
		t.Fatalf("same root: %v", err)
	}
	if err := Check([]Info{pn("a.M")}, pn("a.N"), Full); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("root change: %v", err)
	}
}

func TestParseStrategy(t *testing.T) {
	for in, want := range map[string]Strategy{
		"": Undefined, "FULL": Full, "full_transitive": FullTransitive, "BackwardTransitive": BackwardTransitive,
		"AutoUpdateDisabled": AlwaysIncompatible, "AlwaysCompatible": AlwaysCompatible, "ALWAYS_INCOMPATIBLE": AlwaysIncompatible,
	} {
		got, err := ParseStrategy(in)
		if err != nil || got != want {
			t.Errorf("ParseStrategy(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseStrategy("SIDEWAYS"); err == nil {
		t.Error("unknown strategy accepted")
	}
	if Resolve(Full, Undefined, Backward) != Backward || Resolve(Full) != Full {
		t.Error("Resolve")
	}
}
