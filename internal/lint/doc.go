// Package lint holds tests that enforce project-wide rules through go test:
// the import direction between packages (docs/architecture.md, Package graph),
// typed atomics only, and that the Pulsar client stays in tests and tools.
package lint
