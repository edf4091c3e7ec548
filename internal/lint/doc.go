// Package lint holds tests that enforce project-wide rules through go test:
// the import direction between packages (docs/architecture.md, Package graph),
// typed atomics only, one CRC-32C table and one payload codec
// (internal/codec), that the Pulsar client stays in tests and tools, and that the test
// kits (magnetartest, broker/brokertest, internal/zktest) stay in tests, and
// that cmd/magnetar stays wiring (no init(), bounded lines and function length).
package lint
