// Package brokerconf is the broker's configuration: Config (listeners,
// limits, rate defaults, intervals, the history sampler's window, the
// broker-wide policy defaults) and ClusterConfig (multi-broker
// operation), their defaults (EnsureDefaults) and the checks that refuse
// a configuration that cannot work (Validate, ErrInvalid).
//
// It is data only: it knows no broker, so that the binary's flag and
// configuration-file parsing (cmd/magnetar, internal/cliflags), the
// wiring (internal/stack), the test kits and the features that read the
// configuration (broker.Broker.Config) share one definition without
// depending on the broker core, which imports this package and nothing
// it configures.
//
// Invariants: the zero Config plus EnsureDefaults is a valid single-node
// configuration on Pulsar's default ports; EnsureDefaults only fills
// zero fields (a negative value keeps its meaning: off or unlimited, as
// each field documents) and is idempotent; Validate neither changes the
// Config nor looks at anything outside it.
package brokerconf
