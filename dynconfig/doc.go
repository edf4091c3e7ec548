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
// Only keys Pulsar marks dynamic and Magnetar applies are accepted
// (Keys): the broker-wide defaults of the publish, dispatch, replicator
// and subscribe rate limits, of inactive-topic deletion, of topic and
// subscription auto-creation (allowAutoTopicCreation,
// allowAutoSubscriptionCreation) and maxTopicsPerNamespace. They are
// defaults under the namespace and topic policies, so an override
// reaches a topic only where no namespace or topic policy sets the
// value. A number is checked as the configuration file's is; a key that
// is not dynamic (or unknown) is refused (ErrNotDynamic), as is a bad
// number (ErrBadValue). A boolean key takes any value, as Pulsar's does
// (it reads one with Java's Boolean.valueOf): "true" in any case is
// true, anything else false, and the value is kept as given.
//
// # Applying
//
// Config installs an overlay on the policy store
// (policy.Store.SetDefaultsOverlay) that puts the overrides on the
// broker's defaults, and after every change calls policy.Store.Refresh:
// the loaded topics resolve their policy again and the enforcement
// applies the new limits.
//
// # Runtime values
//
// Runtime answers every configuration key the broker read (Static, by
// Pulsar's name, secrets already left out) with the overrides on top,
// as Pulsar's /admin/v2/brokers/configuration/runtime.
package dynconfig
