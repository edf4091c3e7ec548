// Package autorecovery restores the replication of ledgers that had a copy
// on a lost bookie (docs/replication.md section 6): an auditor, elected among
// the candidates, marks the ledgers, and replication workers copy the
// missing entries to other bookies and update the ensembles.
//
//	s, _ := autorecovery.Start(store, ledgerClient, resolver, autorecovery.Options{})
//	defer s.Close()
//
// # Metadata layout
//
// Under Root (/ledgers/underreplication):
//
//   - auditorelection: ephemeral; its value is the auditor's ID and a
//     random token. A candidate becomes auditor by creating it
//     (metadata.Ephemeraler.PutEphemeral succeeds) and checks before every
//     audit that the value is still its own (after a ZooKeeper session
//     expiry another candidate may hold it).
//   - ledgers/<id>: one persistent node per under-replicated ledger (id in
//     decimal), value JSON Mark {"bookies": [lost ids], "since": ms}.
//   - locks/<id>: ephemeral, held by the worker repairing ledger id.
//   - decommission/<bookie>: a decommission request; the bookie's copies
//     no longer count even while it is registered.
//
// A bookie is available when it is registered under ledger.AvailablePath
// (writable) or ledger.ReadOnlyPath (read-only) and not being
// decommissioned. A bookie is lost when a ledger's ensembles name it and it
// is not available.
//
// # Auditor
//
// It watches the registrations and the decommission requests and runs an
// audit on every change, every AuditInterval, and whenever its periodic
// listing of the registrations (every BookieCheckInterval, a safety net
// for missed watch events) differs from the last audit's: it reads every ledger's
// metadata and marks (MarkUnderReplicated, merging with an existing mark)
// each ledger whose ensembles hold a bookie lost for at least
// LostBookieDelay (measured from the first audit that found it lost).
//
// # Worker
//
// It watches the marks and, for each marked ledger not in backoff, takes
// the ledger's lock (skipping it if another worker holds it), runs
// Replicator.ReplicateLedger, and deletes the mark only at the version it
// read, so a mark extended meanwhile survives for the next round.
// ReplicateLedger first re-checks what is missing ("still missing?"): a
// deleted ledger, or one whose bookies are all available again, is just
// unmarked. For each segment with a lost bookie at ensemble position j it
// picks a random writable bookie outside the segment, reads every entry of
// the segment whose write set holds j from a surviving replica (digest and
// ids verified; a decommissioned bookie is read last), sends it unchanged
// as a recovery add (Window in flight, EntriesPerSecond at most), then
// replaces position j of that segment with ledger.Client.ReplaceBookie,
// which refuses if the segment changed meanwhile. Only immutable segments are
// copied: every segment but the last of an OPEN ledger, all of a CLOSED
// one. An OPEN (or IN_RECOVERY) ledger with a lost bookie in its last
// ensemble is fenced and recovered (ledger.Client.Open) once it has been
// marked for OpenLedgerGrace; before that the worker repairs what it can
// and retries when the grace runs out (ErrOpenLedger).
//
// Failures back off per ledger, doubling from MinBackoff to MaxBackoff;
// ErrEntryLost (no surviving copy: a single-replica ledger) goes straight
// to MaxBackoff, so the worker neither spins on an unrepairable ledger nor
// forgets it.
//
// # Coupling with the ledger package
//
// Everything about the ledger format comes from the ledger package: the
// segment update is ledger.Client.ReplaceBookie (a CAS on the record that
// re-reads on a version conflict and refuses a deleted ledger or a changed
// segment), recovery adds carry ledger.MasterKey(password), and the
// fragment's entries are those ledger.Metadata.InWriteSet assigns to the
// position.
//
// # Concurrency
//
// A Service owns two goroutines (election/audit and worker), both waited
// for in Close; watch callbacks only signal buffered channels. Replicator
// methods are safe for concurrent use.
package autorecovery
