// Package dynconfig is the broker's dynamic configuration, as Pulsar's
// `pulsar-admin brokers update-dynamic-config`: settings Pulsar marks
// dynamic, changed at run time through the admin API, that take effect
// on the running broker at once and on every broker of the cluster.
//
// # Format
//
// The overrides are one JSON object of key → value (both strings, the
// value as it would be written in broker.conf) at /admin/configuration
// in the cluster's metadata store, where Pulsar keeps them. A broker
// reads it when it starts (an override beats the configuration file)
// and watches it: a write by any broker applies on all of them. A key
// absent from the object has the configuration file's value.
//
// # Keys
//
// Every key Pulsar marks dynamic is accepted (pulsarDynamic, as Pulsar
// stores any of them), its value checked against the key's Java type
// and Pulsar's minValue (ErrBadValue); an unknown key, or one Pulsar
// does not mark dynamic, is refused (ErrNotDynamic). Where Magnetar
// reads a key it also refuses what its configuration file may not hold
// (checks); a key it could only read at start would be refused as
// not dynamic (none is: the brokerClient* keys apply through
// auth.BrokerClient). A boolean key takes any value, as Pulsar's does
// (it reads one with Java's Boolean.valueOf): "true" in any case is
// true, anything else false, and the value is kept as given.
// docs/dynamic-config.md lists every key and how it applies.
//
// # Applying
//
// Config installs an overlay on the policy store
// (policy.Store.SetDefaultsOverlay) that puts the overrides of the
// policy defaults (Keys: rate limits, inactive-topic deletion,
// auto-creation, maxTopicsPerNamespace) on the broker's defaults, and
// after every change calls policy.Store.Refresh: the loaded topics
// resolve their policy again and the enforcement applies the new
// limits. The other keys are applied by the package that owns them,
// which Watches the key: it hears the override when it registers, on
// every change and on its removal (then it restores its own value).
//
// # Runtime values
//
// Runtime answers every configuration key the broker read (Static, by
// Pulsar's name, secrets already left out) with the overrides on top,
// as Pulsar's /admin/v2/brokers/configuration/runtime.
package dynconfig
