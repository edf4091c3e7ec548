package offload

import (
	"errors"

	"github.com/magnetar-mq/magnetar/internal/corrupt"
)

// Errors returned by this package. Callers use errors.Is.
var (
	// ErrBadConfig: the offload settings cannot work (unknown driver,
	// missing bucket, block size under the minimum). Not retryable.
	ErrBadConfig = errors.New("offload: bad configuration")
	// ErrNotOffloadable: the ledger is empty (or still open). Not
	// retryable for that ledger.
	ErrNotOffloadable = errors.New("offload: ledger cannot be offloaded")
	// ErrStoreUnavailable: the object store could not be reached or
	// answered with an error. Retrying later is safe: writes are
	// all-or-nothing per object and reads have no side effect.
	ErrStoreUnavailable = errors.New("offload: object store unavailable")
	// ErrNotFound: an object of the offload does not exist.
	ErrNotFound = errors.New("offload: object not found")
	// ErrCorrupt: an object failed to decode, carries an unknown format
	// version, or does not match what was written (verification).
	ErrCorrupt = corrupt.New("offload: corrupt object")
	// ErrBadRange: a read outside 0..LastAddConfirmed or with first >
	// last. Not retryable with the same arguments.
	ErrBadRange = errors.New("offload: entry range out of bounds")
	// ErrClosed: the read handle was closed.
	ErrClosed = errors.New("offload: read handle closed")
)
