package entrylog

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// Defaults.
const (
	DefaultLogSizeLimit    = 1 << 30
	DefaultWriteBufferSize = 64 << 10
	DefaultPreallocateSize = 4 << 20
	// MaxLogSizeLimit keeps every offset (plus the ledgers map appended after
	// the limit) below 2^32, as a location holds a 32-bit offset.
	MaxLogSizeLimit = 3 << 30
)

// Options configure a Log.
type Options struct {
	// FS is the file system. Required.
	FS vfs.FS
	// Remove deletes the logs GC removed, once no reader holds them (nil:
	// FS.Remove). A bookie passes a vfs.Remover's, which frees a log in
	// steps instead of all at once.
	Remove func(path string) error
	// Dirs are the ledger directories. New logs are placed in them round
	// robin. Required, at least one.
	Dirs []string
	// LogSizeLimit is the size at which the active log is rolled.
	LogSizeLimit int64
	// WriteBufferSize is the size of the append buffer; Add writes to the
	// file when it fills, Flush writes it out.
	WriteBufferSize int
	// PreallocateSize is how far ahead of the write offset the active file
	// is preallocated (fallocate KEEP_SIZE on the OS file system).
	PreallocateSize int64
	// FlushBytes, if positive, paces the active log's writeback: after
	// every FlushBytes written, writeback of them starts and the log waits
	// for the previous FlushBytes to reach the disk (BookKeeper's
	// flushEntrylogBytes, which flushes every that many bytes). A
	// checkpoint then never has more than two steps queued at the device
	// ahead of a journal sync. Durability still comes from Sync. Zero
	// means no pacing.
	FlushBytes int64
	// CompactionRateBytes limits Compact to this many payload bytes per
	// second. 0 means unlimited.
	CompactionRateBytes int64
	// Logger receives warnings (map-less logs, removed empty logs). Nil
	// means no logging.
	Logger *slog.Logger
}

// EnsureDefaults fills zero fields with defaults.
func (o *Options) EnsureDefaults() {
	if o.LogSizeLimit == 0 {
		o.LogSizeLimit = DefaultLogSizeLimit
	}
	if o.WriteBufferSize == 0 {
		o.WriteBufferSize = DefaultWriteBufferSize
	}
	if o.PreallocateSize == 0 {
		o.PreallocateSize = DefaultPreallocateSize
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports an unusable configuration.
func (o *Options) Validate() error {
	if o.FS == nil {
		return errors.New("entrylog: Options.FS is nil")
	}
	if len(o.Dirs) == 0 {
		return errors.New("entrylog: Options.Dirs is empty")
	}
	if o.LogSizeLimit < 4*HeaderSize || o.LogSizeLimit > MaxLogSizeLimit {
		return fmt.Errorf("entrylog: LogSizeLimit %d out of range [%d, %d]", o.LogSizeLimit, 4*HeaderSize, MaxLogSizeLimit)
	}
	if o.WriteBufferSize < RecordHeaderSize {
		return fmt.Errorf("entrylog: WriteBufferSize %d too small", o.WriteBufferSize)
	}
	if o.PreallocateSize < 0 || o.CompactionRateBytes < 0 || o.FlushBytes < 0 {
		return errors.New("entrylog: negative PreallocateSize, CompactionRateBytes or FlushBytes")
	}
	return nil
}
