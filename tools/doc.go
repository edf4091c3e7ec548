// Package tools holds Magnetar's operations tools as a library: ledger
// and bookie inspection over a running cluster (list bookies and
// ledgers, ledger metadata, read a ledger, under-replicated ledgers),
// recovery (re-replicate a lost bookie's ledgers, decommission a
// bookie), health checks (bookie sanity, simple write/read test), and
// offline inspection of a bookie's directories (journal and entry-log
// listings, index rebuild, per-ledger storage stats). `magnetar shell`
// only wires these functions to flags and output.
//
// Results are plain structs with JSON field names (the shell's --json
// output) and a Text method (its text output). Long operations report to
// a Progress; nil reports nothing. Record listings are streamed through
// a callback so a caller can print as the scan goes.
//
// Nothing here writes to a bookie's directories except RebuildIndex
// (which the bookie must not be running for); the cluster tools write
// only through the ledger client and the autorecovery package, under the
// same rules as the autorecovery workers.
package tools
