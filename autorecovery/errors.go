package autorecovery

import "errors"

// Errors. Callers use errors.Is.
var (
	// ErrInvalidOptions: Options.Validate refused a setting.
	ErrInvalidOptions = errors.New("autorecovery: invalid options")
	// ErrOpenLedger: the ledger is still open and its last ensemble holds a
	// lost bookie, but the grace period before fencing it has not passed.
	// The worker retries later.
	ErrOpenLedger = errors.New("autorecovery: open ledger within its grace period")
	// ErrNoTarget: no writable bookie outside the segment's ensemble is
	// available to take the copies.
	ErrNoTarget = errors.New("autorecovery: no bookie available to re-replicate to")
	// ErrEntryLost: no surviving replica holds an entry the lost bookie
	// should have held (a single-replica ledger lost its only copy). Not
	// retried quickly: the worker backs off to its maximum.
	ErrEntryLost = errors.New("autorecovery: entry has no surviving replica")
	// ErrClosed: the service was closed.
	ErrClosed = errors.New("autorecovery: closed")
)
