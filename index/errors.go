package index

import (
	"errors"

	"github.com/magnetar-mq/magnetar/internal/corrupt"
)

var (
	// ErrCorrupt marks index files that cannot be what this package wrote:
	// a bad magic, version or checksum, a page table naming a page that does
	// not exist or is used twice. It is wrapped with the file path. The
	// index can be rebuilt from the entry logs.
	ErrCorrupt = corrupt.New("index: corrupt")
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("index: closed")
	// ErrOutOfRange is returned by Set for a negative entry id, an entry id
	// too large for a page table, or location 0 (reserved for "absent").
	ErrOutOfRange = errors.New("index: entry or location out of range")
)
