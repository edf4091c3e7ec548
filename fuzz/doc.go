// Package fuzz holds Magnetar's cross-package robustness tests: the
// metamorphic bookie test, the ledger crash/recovery harness and fuzz
// targets that span packages (a bookie opened over arbitrary journal or
// entry-log bytes). Codec-level fuzz targets live next to their codecs;
// FUZZ_NOTES.md records how long every target was fuzzed and what it found.
//
// Everything here is test code. CI runs a few seeds of each randomized
// test and the fuzz corpora under testdata/fuzz; more seeds run with
// MAGNETAR_SOAK=1 or -seeds=N. Reproductions of bugs found in other
// packages stay as regression tests (repro_test.go).
//
// # Metamorphic bookie test (meta_test.go)
//
// A seed generates an op sequence (adds, recovery adds, fences, explicit
// LACs, wrong-key adds, deletes, checkpoints, GC passes, reads, crashes)
// that runs against a bookie on vfs.MemFS under several configurations
// (journal group wait, group size, write-cache size, entry-log and journal
// file sizes, GC and compaction settings). A crash takes a crash clone of
// the file system (synced data plus a random prefix of unsynced writes) and
// reopens the bookie on it (every other crash keeps an arbitrary subset of
// the unsynced writes instead: out-of-order writeback, which exposed an
// entry-log seal bug, see repro_test.go). Every configuration must produce the same
// trace of observations for acknowledged operations, and match the model:
// an acknowledged add reads back byte for byte, an add not acknowledged at
// the crash reads back whole or not at all, fences and explicit LACs
// survive, deleted ledgers stay deleted.
//
// The file system wrapper takes a read lock around each file operation and
// the crash takes the write lock, so a clone is one instant across files.
//
// # Ledger crash/recovery (ledger_test.go)
//
// Three in-process bookies, an embedded metadata store, E=3 Qw=2 Qa=2: a
// writer adds at random while bookie clients are switched to failing; the
// writer is abandoned and a second client opens the ledger with recovery.
// Checked (docs/replication.md section 1): every acknowledged entry is readable
// with its bytes, every reader agrees on lastEntryId, the old writer is
// fenced.
package fuzz
