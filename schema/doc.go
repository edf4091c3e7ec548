// Package schema holds Pulsar's schema compatibility rules: the
// strategies a namespace or topic selects and the check that decides
// whether a new schema version may follow the existing ones, and the
// plain types (Info, Version) the registry and the admin API share. It
// knows nothing of storage or the wire; the registry (package schemareg)
// stores versions and calls Check.
//
// # Types
//
// Type values are the protocol's Schema.Type numbers (0 NONE = bytes,
// 1 STRING, 2 JSON, 3 PROTOBUF, 4 AVRO, 5..14 and 16..19 primitives and
// time types, 15 KEY_VALUE, 20 PROTOBUF_NATIVE).
//
//   - AVRO, JSON and PROTOBUF carry an Avro schema definition (JSON text);
//     they are parsed and compared by github.com/hamba/avro/v2 (Avro's
//     schema resolution rules: a reader field missing from the writer
//     needs a default, promotions int→long→float→double, etc.).
//   - PROTOBUF_NATIVE carries {"fileDescriptorSet", "rootMessageTypeName",
//     "rootFileDescriptorName"}; versions are compatible when the root
//     message type name is unchanged (Pulsar's rule).
//   - KEY_VALUE carries [u32 BE key length][key schema][u32 BE value
//     length][value schema], with the parts' types in the properties
//     key.schema.type / value.schema.type; each part is checked on its own.
//   - Every other type is compatible only with an equal schema.
//
// # Strategies
//
// For a candidate C and existing versions V1..Vn (oldest first):
// BACKWARD: C can read data written with Vn (reader C, writer Vn);
// FORWARD: Vn can read data written with C; FULL: both. The _TRANSITIVE
// forms check against every Vi instead of Vn. ALWAYS_COMPATIBLE accepts
// anything (even a type change); ALWAYS_INCOMPATIBLE refuses any new
// version. A type change is refused by every other strategy.
package schema
