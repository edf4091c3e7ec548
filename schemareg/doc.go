// Package schemareg is the broker's schema registry: every topic's list
// of schema versions (a partitioned topic and its partitions share one),
// checked under the topic's compatibility strategy when a producer or
// consumer brings a schema, served to clients (GET_SCHEMA,
// GET_OR_CREATE_SCHEMA) and administered through the admin API
// (/admin/v2/schemas, the topic's strategy override). The compatibility
// rules themselves are package schema's; docs/schema.md has the model.
//
// It is a feature of the broker core (broker/extension.go): a
// broker.AttachHook (the schema step of PRODUCER and SUBSCRIBE), a
// broker.CommandSource (the two schema commands, each declaring the
// permission it needs: lookup for GET_SCHEMA, produce for
// GET_OR_CREATE_SCHEMA), a broker.DeletionObserver (a deleted topic's
// schema goes with it) and a broker.Lifecycle (Close waits for the
// commands in flight). Wiring, before b.Start:
//
//	reg, err := schemareg.Enable(b, schemareg.Config{CompatibilityStrategy: "FULL"})
//	deps := admin.BrokerDeps(b)
//	deps.Schemas = reg
//
// # Storage
//
// One node per topic in the broker's metadata store,
// /schemas/<tenant>/<ns>/<domain>/<topic> (Path; the local name escaped
// as broker.EscapeName does), holding JSON:
//
//	{"versions":[{"type":4,"data":"<base64>","properties":{...},"timestamp":<ms>,"deleted":true?}, ...],
//	 "compatibility":"<the topic's strategy override, if any>"}
//
// Nodes written before the override existed hold the bare list of
// versions, and are read as such. A version's number is its index in the
// list (on the wire: 8 bytes, big-endian).
//
// # Invariants
//
//   - Every write reads the node and writes it back with compare-and-set
//     (retried on a lost race), so brokers sharing the store never lose a
//     version or give one number to two schemas; a mutex serialises this
//     broker's own writers.
//   - Deleting a schema (the admin API) appends a deletion marker: the
//     versions before it are history, never served again (a consumer
//     reading a message written under one gets an error, as in Pulsar),
//     and the next schema starts a new history not checked against them.
//   - Deleting a topic (not a partition) removes its node.
//
// # Who may register
//
// A producer's new schema is registered if the namespace's
// is_allow_auto_update_schema allows it and the strategy accepts it; a
// consumer's is only checked, and registered only on a topic with none;
// an admin upload ignores is_allow_auto_update_schema. A producer without
// a schema is refused only on a topic that has one when validation is
// enforced (the namespace's schema_validation_enforced, else
// Config.ValidationEnforced). The strategy: the topic's override, the
// namespace's schema_compatibility_strategy, its older
// schema_auto_update_compatibility_strategy, Config.CompatibilityStrategy
// (default FULL).
package schemareg
