// Package storage is what the broker core reads and writes a persistent
// topic through, and the adapter over package mledger that implements
// it.
//
// The interface: Position (ledger id, entry id; Pulsar's (-1,-1) and
// (MaxInt64,MaxInt64) sentinels mean earliest and latest), LedgerEntry,
// InitialPosition, Cursor (a subscription's cursor: reads, acks, seeks,
// backlog; one user, the subscription's loop) and ManagedLedger (the
// topic's ordered, durable log: appends acknowledged in order, cursors),
// with the errors the core tests for (ErrTerminated, ErrClosed,
// ErrEntryGone, ErrNoEntries, ErrCursorNotFound; the broker re-exports
// the first three). Features see these types at the core's extension
// points (broker.Topic.Append, SetReadBound, CompactedReads, ...).
//
// The adapter: Opener returns broker.Deps.OpenLedger over an
// *mledger.Factory. Its Ledger and LedgerCursor wrap mledger's types,
// map their errors onto the ones above, bound every call by Timeout
// (reads share one deadline, renewed when half of it is left), and
// expose what they wrap (Ledger.Managed, LedgerCursor.Managed,
// ManagedCursor) for the features that work on mledger directly
// (compaction, tiered storage, deduplication snapshots). A topic's
// ledger opens under its policies: the core attaches them to the
// context (WithLedgerPolicies), Opener sets the retention, the quorum,
// the bookie affinity placement and the cursor persist interval
// (1/managedLedgerMaxMarkDeleteRate) from them.
//
// It knows no broker: that is what lets the core's own tests (package
// broker) open real managed ledgers through Opener, and the core use
// fakes of the interfaces. Invariants: ManagedLedger's methods are safe
// for concurrent use and its add callbacks run in add order; a Cursor
// has one user; a LedgerCursor's ReadEntries result is valid until the
// next call.
package storage
