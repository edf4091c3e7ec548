package journal

import (
	"errors"

	"github.com/magnetar-mq/magnetar/internal/corrupt"
)

var (
	// ErrCorrupt marks data that fails validation somewhere other than the
	// torn tail of the journal: a bad checksum followed by records of a later
	// group, a sequence gap between files, a damaged file header. It is always
	// wrapped with the file path and offset. Replay does not skip it and a
	// retry will not help: the bookie should go read-only.
	ErrCorrupt = corrupt.New("journal: corrupt")

	// ErrClosed is passed to completions of appends made after Close began.
	// Retrying on the same Journal is pointless.
	ErrClosed = errors.New("journal: closed")

	// ErrTooLarge is passed to the completion of an append whose payload is
	// larger than MaxPayloadSize. The record was not written.
	ErrTooLarge = errors.New("journal: record too large")

	// ErrInvalidType is passed to the completion of an append whose record
	// type is not one of the exported RecordType values.
	ErrInvalidType = errors.New("journal: invalid record type")

	// ErrMarkNotFound is returned by Replay when the journal file the given
	// position names has been removed by a checkpoint.
	ErrMarkNotFound = errors.New("journal: position not in journal")

	// ErrBadOptions wraps every Options.Validate failure.
	ErrBadOptions = errors.New("journal: invalid options")
)

// ErrFailed is wrapped (together with the underlying I/O error) in the error
// every completion receives once a write or sync has failed. The failure is
// sticky: the journal never retries and never acknowledges anything after
// it. Reopen the journal (replay decides what survived).
var ErrFailed = errors.New("journal: failed after an I/O error")
