// Package stack is the wiring of Magnetar's server roles: how a metadata
// store, a ledger client, managed ledgers, the broker, its features
// (policy enforcement, entry metadata, the schema registry, compaction,
// transactions, geo-replication), the admin API, the console and the
// function worker are put together, started and stopped. The `magnetar`
// binary (cmd/magnetar: flags and configuration files) and the in-process
// test server (package magnetartest) both start their servers through it,
// so a test server is the standalone users run, not a copy.
//
// Three entry points:
//   - OpenStack: managed ledgers and a broker over a given metadata store
//     and ledger client (what `magnetar broker` and the standalone share).
//   - OpenStandalone: the standalone deployment in one process: an
//     embedded metadata store (DataDir/metadata.db), one bookie (journal
//     and ledger dirs under DataDir unless given) reached in process at
//     E=Qw=Qa=1 under the ID StandaloneBookieID, optionally the function
//     worker, and the stack above them.
//   - OpenWorker: a function worker as a process of its own (`magnetar
//     functions-worker`): its stores, security, listeners (loopback
//     unless authentication is on or the remote is allowed explicitly),
//     routes and /metrics.
//
// Invariants:
//   - Close stops in reverse order of opening (function worker, broker,
//     managed ledgers, configuration store; then ledger client, bookie,
//     metadata store) and runs every step even when one fails; the
//     errors are joined (CloseSteps).
//   - A failed Open closes what it opened before returning.
//   - Nothing here is process-global: listeners come from the given
//     addresses (":0" gives free ports), metrics go to the broker's own
//     registry, files stay under the given directories; two standalones
//     in one process do not share state.
//
// This package never imports package testing (the binary links it; the
// lint test TestBinaryDoesNotLinkTesting checks that).
package stack
