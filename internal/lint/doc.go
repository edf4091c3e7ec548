// Package lint holds tests that enforce project-wide rules through go test:
// the import direction between packages (architecture.md, style.md §10),
// typed atomics only, and that the Pulsar client stays in tests and tools.
package lint
