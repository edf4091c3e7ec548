package ledger

import "errors"

// Errors returned by the ledger client. Each says whether retrying is safe.
// Callers use errors.Is; errors from bookies additionally wrap the
// bkproto status sentinels.
var (
	// ErrFenced means another client opened the ledger with recovery (its
	// state left OPEN, or a bookie answered EFENCED): this writer has lost
	// the ledger. Final: every later add on the handle fails with it too.
	// Adds not yet acknowledged may or may not be in the recovered ledger.
	ErrFenced = errors.New("ledger: fenced by another client")
	// ErrClosed means the handle or client was closed. Final.
	ErrClosed = errors.New("ledger: closed")
	// ErrNotEnoughBookies means fewer writable bookies than needed: at
	// Create, retry later is safe; on a write handle during an ensemble
	// change it is final for that ledger (close it and roll to a new one).
	ErrNotEnoughBookies = errors.New("ledger: not enough writable bookies")
	// ErrNoSuchLedger means the ledger's metadata does not exist. Final.
	ErrNoSuchLedger = errors.New("ledger: no such ledger")
	// ErrNoSuchEntry means no replica holds the entry (every bookie of its
	// write set answered "no entry"/"no ledger"). Final for that entry.
	ErrNoSuchEntry = errors.New("ledger: no such entry")
	// ErrReadBeyondLAC means a read past the last add confirmed of the
	// handle. Final for the handle (open again to learn a newer LAC).
	ErrReadBeyondLAC = errors.New("ledger: read beyond last add confirmed")
	// ErrBookieUnavailable means a read found no replica that answered
	// (timeouts, connection loss). Safe to retry.
	ErrBookieUnavailable = errors.New("ledger: no bookie of the write set available")
	// ErrDigestMismatch means every replica that answered returned an entry
	// whose CRC32C digest or header did not match. Retrying is safe but
	// will likely fail the same way until the entry is re-replicated.
	ErrDigestMismatch = errors.New("ledger: entry digest mismatch")
	// ErrRecoveryFailed means open-with-recovery could not fence enough
	// bookies or decide on an entry (too many bookies down or slow). The
	// ledger is left IN_RECOVERY, never closed short; retrying Open is safe.
	ErrRecoveryFailed = errors.New("ledger: recovery failed")
	// ErrUnauthorized means a bookie refused the master key (EUA): the
	// password does not match. Final.
	ErrUnauthorized = errors.New("ledger: unauthorized")
	// ErrBadMetadata means a metadata record that does not decode or is
	// inconsistent. Final.
	ErrBadMetadata = errors.New("ledger: bad metadata")
	// ErrEntryTooLarge means an add larger than MaxEntrySize. It fails the
	// write handle (adds complete in order, so later adds fail too); check
	// sizes before adding.
	ErrEntryTooLarge = errors.New("ledger: entry too large")
	// ErrEnsembleChanged means ReplaceBookie found the segment it was to
	// update changed (another replacement, a writer's ensemble change, a
	// ledger not yet closed): nothing was written. Final for that copy;
	// re-read the metadata and start over.
	ErrEnsembleChanged = errors.New("ledger: ensemble changed")
	// ErrInvalidOptions means bad create options (E >= Qw >= Qa >= 1
	// violated). Final.
	ErrInvalidOptions = errors.New("ledger: invalid options")
)
