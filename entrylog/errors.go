package entrylog

import (
	"errors"
	"syscall"

	"github.com/magnetar-mq/magnetar/internal/corrupt"
)

var (
	// ErrCorrupt marks on-disk bytes that cannot be what this package wrote:
	// a bad magic or version, a checksum mismatch, or a record whose ledger
	// or entry id differs from what the caller expected. It is always wrapped
	// with the file path and offset. Retrying does not help; the bookie
	// switches to read-only mode when it sees it.
	ErrCorrupt = corrupt.New("entrylog: corrupt")
	// ErrNotFound is returned by Read for a location that holds no record: a
	// log that does not exist (removed by compaction), or an offset past the
	// data written (zeroed, never synced before a crash). It is final for
	// that location.
	ErrNotFound = errors.New("entrylog: no record at location")
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("entrylog: closed")
	// ErrTooLarge is returned by Add for a payload that cannot fit in one
	// log file. Nothing is written.
	ErrTooLarge = errors.New("entrylog: entry too large")
	// ErrActiveLog is returned by Compact and RemoveLog for the log that is
	// currently being written.
	ErrActiveLog = errors.New("entrylog: log is being written")
)

// IsNoSpace reports whether err is a write that found the file system full
// (ENOSPC, or EDQUOT: over quota). Such a failure is not sticky: the Log's
// state is unchanged and the operation may be retried once space is back.
// A failed fsync never counts, whatever its errno: the kernel may have
// dropped the dirty pages, so retrying it could report success for data
// that is gone.
func IsNoSpace(err error) bool {
	if err == nil {
		return false
	}
	var s syncError
	if errors.As(err, &s) {
		return false
	}
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// syncError marks a failed fsync (see IsNoSpace).
type syncError struct{ error }

func (e syncError) Unwrap() error { return e.error }
