// Package lint holds tests that enforce project-wide rules through go test:
// the import direction between packages (docs/architecture.md, Package graph),
// typed atomics only, one CRC-32C table and one payload codec
// (internal/codec), and that the Pulsar client stays in tests and tools.
package lint
