package mledger

import (
	"errors"

	"github.com/magnetar-mq/magnetar/internal/corrupt"
	"github.com/magnetar-mq/magnetar/offload"
)

// Errors returned by this package. Callers use errors.Is.
var (
	// ErrClosed: the managed ledger or cursor was closed. Final.
	ErrClosed = errors.New("mledger: closed")
	// ErrTerminated: the managed ledger was terminated; no more entries can
	// be added. Final.
	ErrTerminated = errors.New("mledger: terminated")
	// ErrFenced: another owner opened the managed ledger (its ledger was
	// fenced or the info node changed under us). Final for this instance:
	// the caller must drop it and, if it still owns the topic, reopen.
	ErrFenced = errors.New("mledger: fenced by another owner")
	// ErrCursorExists: OpenCursor with a name that exists as a non-durable
	// cursor, or NewNonDurableCursor with a taken name.
	ErrCursorExists = errors.New("mledger: cursor already exists")
	// ErrCursorNotFound: DeleteCursor of an unknown cursor.
	ErrCursorNotFound = errors.New("mledger: cursor not found")
	// ErrInvalidPosition: a position beyond the last confirmed entry or
	// otherwise not addressable. Not retryable with the same arguments.
	ErrInvalidPosition = errors.New("mledger: invalid position")
	// ErrNoEntries: a read found no entry available at the read position.
	ErrNoEntries = errors.New("mledger: no entries available")
	// ErrCorrupt: a stored managed-ledger info, cursor node or cursor
	// ledger entry failed to decode.
	ErrCorrupt = corrupt.New("mledger: corrupt metadata")
	// ErrWriteFailed: an add failed on the ledger store and could not be
	// retried on a new ledger (creating one failed too, or the retry budget
	// was exhausted). The entry was not persisted; retrying is safe but may
	// produce a duplicate if the store had partially written it.
	ErrWriteFailed = errors.New("mledger: add failed")
	// ErrOffloadInProgress: an offload of this managed ledger is already
	// running (Pulsar's "Offload already running"). Retry once it ended.
	ErrOffloadInProgress = errors.New("mledger: offload already running")
	// ErrNoOffloader: an offload or a read of offloaded data needs an
	// offloader and none is configured. Final until one is configured.
	ErrNoOffloader = errors.New("mledger: no offloader configured")
	// ErrOffloadStoreUnavailable: a read of offloaded data failed because
	// the object store could not be reached (offload.ErrStoreUnavailable,
	// the same value, so that the managed ledger's users need not import
	// package offload). Retry later.
	ErrOffloadStoreUnavailable = offload.ErrStoreUnavailable
	// ErrOffloadConflict: the ledger changed while it was offloaded
	// (trimmed, or another attempt took it over); this attempt's objects
	// were removed. Not retried for that ledger.
	ErrOffloadConflict = errors.New("mledger: offload conflict")
)
