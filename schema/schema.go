package schema

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/hamba/avro/v2"
)

// Pulsar schema type values (protocol Schema.Type).
const (
	TypeNone           int32 = 0
	TypeString         int32 = 1
	TypeJSON           int32 = 2
	TypeProtobuf       int32 = 3
	TypeAvro           int32 = 4
	TypeKeyValue       int32 = 15
	TypeProtobufNative int32 = 20
	maxType            int32 = 20
)

var typeNames = []string{"NONE", "STRING", "JSON", "PROTOBUF", "AVRO", "BOOLEAN", "INT8", "INT16",
	"INT32", "INT64", "FLOAT", "DOUBLE", "DATE", "TIME", "TIMESTAMP", "KEY_VALUE", "INSTANT",
	"LOCAL_DATE", "LOCAL_TIME", "LOCAL_DATE_TIME", "PROTOBUF_NATIVE"}

// TypeName returns Pulsar's name of a type value.
func TypeName(t int32) string {
	if t >= 0 && t <= maxType {
		return typeNames[t]
	}
	return fmt.Sprintf("UNKNOWN(%d)", t)
}

// Info is one schema: type, definition and properties.
type Info struct {
	Type       int32
	Data       []byte
	Properties map[string]string
}

// Version is one registered version of a topic's schema.
type Version struct {
	// Number is the version's number on its topic: versions are numbered
	// from 0 in registration order, and a number never names two
	// schemas.
	Number int64
	Info
	// Timestamp is when the version was registered (Unix ms).
	Timestamp int64
}

// Equal reports whether a and b are the same schema.
func (a Info) Equal(b Info) bool {
	return a.Type == b.Type && bytes.Equal(a.Data, b.Data) && maps.Equal(a.Properties, b.Properties)
}

// ErrIncompatible is wrapped by every refusal of Check.
var ErrIncompatible = errors.New("incompatible schema")

// ErrInvalid is wrapped by Validate's errors.
var ErrInvalid = errors.New("invalid schema")

func incompatible(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrIncompatible, fmt.Sprintf(format, args...))
}

// Validate checks that s is well formed for its type.
func Validate(s Info) error {
	switch s.Type {
	case TypeAvro, TypeJSON, TypeProtobuf:
		if _, err := parseAvro(s.Data); err != nil {
			return fmt.Errorf("%w: %s schema: %w", ErrInvalid, TypeName(s.Type), err)
		}
	case TypeProtobufNative:
		if _, err := protobufRoot(s.Data); err != nil {
			return fmt.Errorf("%w: PROTOBUF_NATIVE schema: %w", ErrInvalid, err)
		}
	case TypeKeyValue:
		k, v, err := splitKeyValue(s)
		if err != nil {
			return fmt.Errorf("%w: KEY_VALUE schema: %w", ErrInvalid, err)
		}
		if err := Validate(k); err != nil {
			return fmt.Errorf("key: %w", err)
		}
		if err := Validate(v); err != nil {
			return fmt.Errorf("value: %w", err)
		}
	default:
		if s.Type < 0 || s.Type > maxType {
			return fmt.Errorf("%w: unknown type %d", ErrInvalid, s.Type)
		}
	}
	return nil
}

// Check reports whether cand may be registered after existing (oldest
// first, live versions only) under st: nil, or an error wrapping
// ErrIncompatible (or ErrInvalid for a malformed cand).
func Check(existing []Info, cand Info, st Strategy) error {
	if err := Validate(cand); err != nil {
		return err
	}
	if len(existing) == 0 {
		return nil
	}
	switch st {
	case AlwaysCompatible:
		return nil
	case AlwaysIncompatible:
		return incompatible("the compatibility strategy is ALWAYS_INCOMPATIBLE")
	}
	against := existing
	if !st.Transitive() {
		against = existing[len(existing)-1:]
	}
	for i := len(against) - 1; i >= 0; i-- {
		if err := checkPair(against[i], cand, st); err != nil {
			return err
		}
	}
	return nil
}

// checkPair checks cand against one existing version old.
func checkPair(old, cand Info, st Strategy) error {
	if old.Type != cand.Type {
		return incompatible("the topic's schema type is %s, the new one %s", TypeName(old.Type), TypeName(cand.Type))
	}
	if old.Equal(cand) {
		return nil
	}
	switch cand.Type {
	case TypeAvro, TypeJSON, TypeProtobuf:
		return checkAvro(old.Data, cand.Data, st)
	case TypeProtobufNative:
		a, err := protobufRoot(old.Data)
		if err != nil {
			return incompatible("existing PROTOBUF_NATIVE schema: %v", err)
		}
		b, _ := protobufRoot(cand.Data)
		if a != b {
			return incompatible("the root message type changed from %q to %q", a, b)
		}
		return nil
	case TypeKeyValue:
		ok, ov, err := splitKeyValue(old)
		if err != nil {
			return incompatible("existing KEY_VALUE schema: %v", err)
		}
		ck, cv, _ := splitKeyValue(cand)
		if err := checkPair(ok, ck, st); err != nil {
			return fmt.Errorf("key schema: %w", err)
		}
		if err := checkPair(ov, cv, st); err != nil {
			return fmt.Errorf("value schema: %w", err)
		}
		return nil
	}
	if !bytes.Equal(old.Data, cand.Data) {
		return incompatible("%s schemas differ", TypeName(cand.Type))
	}
	return nil // same type and definition; only properties differ
}

// parseAvro parses an Avro definition with a cache of its own, so that
// named types of unrelated schemas never clash.
func parseAvro(data []byte) (avro.Schema, error) {
	return avro.ParseWithCache(string(data), "", &avro.SchemaCache{})
}

func checkAvro(oldData, candData []byte, st Strategy) error {
	old, err := parseAvro(oldData)
	if err != nil {
		return incompatible("existing schema does not parse: %v", err)
	}
	cand, err := parseAvro(candData)
	if err != nil {
		return incompatible("new schema does not parse: %v", err)
	}
	sc := avro.NewSchemaCompatibility()
	if st.backward() {
		if err := sc.Compatible(cand, old); err != nil {
			return incompatible("the new schema cannot read data written with an existing one (%s): %v", st, err)
		}
	}
	if st.forward() {
		if err := sc.Compatible(old, cand); err != nil {
			return incompatible("an existing schema cannot read data written with the new one (%s): %v", st, err)
		}
	}
	return nil
}

func protobufRoot(data []byte) (string, error) {
	var d struct {
		FileDescriptorSet      string `json:"fileDescriptorSet"`
		RootMessageTypeName    string `json:"rootMessageTypeName"`
		RootFileDescriptorName string `json:"rootFileDescriptorName"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return "", err
	}
	if d.RootMessageTypeName == "" || d.FileDescriptorSet == "" {
		return "", errors.New("fileDescriptorSet and rootMessageTypeName are required")
	}
	return d.RootMessageTypeName, nil
}

// Key/value property names (Pulsar's KeyValueSchemaInfo).
const (
	PropKeyType   = "key.schema.type"
	PropValueType = "value.schema.type"
	PropKeyProps  = "key.schema.properties"
	PropValProps  = "value.schema.properties"
)

// splitKeyValue decodes a KEY_VALUE schema into its key and value.
func splitKeyValue(s Info) (k, v Info, err error) {
	d := s.Data
	part := func() ([]byte, error) {
		if len(d) < 4 {
			return nil, errors.New("truncated")
		}
		n := binary.BigEndian.Uint32(d)
		if uint64(n) > uint64(len(d)-4) {
			return nil, fmt.Errorf("part length %d beyond the data", n)
		}
		p := d[4 : 4+n]
		d = d[4+n:]
		return p, nil
	}
	kd, err := part()
	if err != nil {
		return k, v, err
	}
	vd, err := part()
	if err != nil {
		return k, v, err
	}
	kt, err := typeFromName(s.Properties[PropKeyType])
	if err != nil {
		return k, v, fmt.Errorf("key type: %w", err)
	}
	vt, err := typeFromName(s.Properties[PropValueType])
	if err != nil {
		return k, v, fmt.Errorf("value type: %w", err)
	}
	return Info{Type: kt, Data: kd, Properties: subProps(s.Properties[PropKeyProps])},
		Info{Type: vt, Data: vd, Properties: subProps(s.Properties[PropValProps])}, nil
}

func subProps(js string) map[string]string {
	var m map[string]string
	if js != "" {
		_ = json.Unmarshal([]byte(js), &m)
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// typeFromName maps a Pulsar type name (as in KEY_VALUE properties and
// the admin API) to its value; "" and BYTES are NONE.
func typeFromName(n string) (int32, error) {
	n = strings.ToUpper(n)
	switch n {
	case "", "BYTES":
		return TypeNone, nil
	case "KEYVALUE":
		return TypeKeyValue, nil
	case "BOOL":
		return 5, nil
	}
	for i, tn := range typeNames {
		if tn == n {
			return int32(i), nil
		}
	}
	return 0, fmt.Errorf("unknown schema type %q", n)
}

// TypeFromName is typeFromName for other packages.
func TypeFromName(n string) (int32, error) { return typeFromName(n) }
