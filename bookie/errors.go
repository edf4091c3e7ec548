package bookie

import "errors"

var (
	// ErrFenced is returned for a normal (non-recovery) add to a fenced
	// ledger. It is final: retrying the same add on this bookie fails the
	// same way; the writer has lost the ledger to a recovering client.
	ErrFenced = errors.New("bookie: ledger is fenced")
	// ErrUnauthorized is returned when the master key of a request does not
	// match the one the ledger was created with. Final, never retry.
	ErrUnauthorized = errors.New("bookie: master key does not match")
	// ErrReadOnly is returned for adds while the bookie is read-only (disk
	// usage above the threshold, failed journal, corruption seen). The
	// wrapped message names the reason. A writer should move the entry to
	// another bookie (ensemble change); reads keep working.
	ErrReadOnly = errors.New("bookie: read-only, adds refused")
	// ErrNoLedger is returned by reads of a ledger this bookie does not hold.
	ErrNoLedger = errors.New("bookie: no such ledger")
	// ErrNoEntry is returned by reads of an entry this bookie does not hold
	// (the ledger exists).
	ErrNoEntry = errors.New("bookie: no such entry")
	// ErrClosed is returned by every call after Close.
	ErrClosed = errors.New("bookie: closed")
	// ErrTooManyRequests is returned by an add that waited the configured
	// maximum for write-cache space (both halves full, the flush behind).
	// Safe to retry later.
	ErrTooManyRequests = errors.New("bookie: write cache full, add throttled")
	// ErrBadRequest is returned for invalid arguments (negative ids, an
	// empty master key).
	ErrBadRequest = errors.New("bookie: bad request")
)
