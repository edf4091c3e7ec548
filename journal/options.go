package journal

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/magnetar-mq/magnetar/internal/uring"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// Defaults for Options (BookKeeper's names in brackets).
const (
	DefaultMaxGroupWait   = time.Millisecond // [journalMaxGroupWaitMSec, OMB value]
	DefaultMaxGroupBytes  = 512 << 10        // [journalBufferedWritesThreshold]
	DefaultMaxQueuedBytes = 64 << 20         // [journalMaxMemorySizeMb]
	DefaultPreallocSize   = 16 << 20         // [journalPreAllocSizeMB]
	DefaultMaxFileSize    = 2048 << 20       // [journalMaxSizeMB]
	DefaultMaxBackups     = 5                // [journalMaxBackups]
)

// maxQueuedLimit bounds MaxQueuedBytes so that a group's offsets fit in
// 32 bits (a group holds at most MaxQueuedBytes plus one record).
const maxQueuedLimit = 1 << 30

// Options configures a Journal. Build it with DefaultOptions, or fill it in
// and call EnsureDefaults; Open does both EnsureDefaults and Validate.
type Options struct {
	// Dir is the journal directory. Required.
	Dir string
	// FS is the file system. Nil means vfs.NewOS().
	FS vfs.FS
	// Remove deletes the journal files a checkpoint leaves behind (nil:
	// FS.Remove). A bookie passes a vfs.Remover's, which frees a file of
	// up to 2 GiB in steps instead of all at once.
	Remove func(path string) error
	// WriterMode selects the durable-write path: io_uring, pwrite, or
	// (ModeAuto, the default) io_uring for large groups and pwrite for
	// small ones where io_uring works, pwrite elsewhere.
	WriterMode uring.Mode
	// Logger receives torn-tail repairs and failures. Nil discards.
	Logger *slog.Logger

	// MaxGroupWait is the longest the first record of a group waits for
	// company before the group is written. Zero means no waiting: a group
	// is written as soon as the writer finds the queue non-empty and no
	// write in flight (records still batch up behind an in-flight sync).
	// EnsureDefaults leaves zero alone; DefaultOptions sets 1 ms.
	MaxGroupWait time.Duration
	// MaxGroupBytes makes a group ready to write once it holds this many
	// bytes. It is a trigger, not a cap: records that arrive while a sync is
	// in flight join the waiting group however large it gets (bounded by
	// MaxQueuedBytes). Zero means DefaultMaxGroupBytes.
	MaxGroupBytes int
	// MaxGroupEntries makes a group ready once it holds this many records.
	// Zero means no entry threshold.
	MaxGroupEntries int
	// MaxQueuedBytes bounds the bytes appended but not yet completed;
	// Append blocks above it. It also bounds a group's size under load.
	// Zero means DefaultMaxQueuedBytes; at most 1 GiB.
	MaxQueuedBytes int64

	// PreallocSize is the step in which journal files are preallocated.
	// Zero means DefaultPreallocSize.
	PreallocSize int64
	// MaxFileSize rolls to a new file once a write would pass it. Zero
	// means DefaultMaxFileSize.
	MaxFileSize int64
	// MaxBackups is how many files wholly before the checkpoint are kept.
	// Zero means DefaultMaxBackups; negative keeps none.
	MaxBackups int

	// DirectIO writes the journal with O_DIRECT (page cache bypassed), in
	// groups padded to Alignment: see doc.go, "Direct I/O". On a file
	// system without O_DIRECT support Open fails; on one without a
	// DirectOpener (MemFS) the aligned writes go through the ordinary file.
	DirectIO bool
	// Alignment is the offset and length granularity of DirectIO writes, a
	// power of two in [512, 1 MiB]. Zero means DefaultAlignment. Ignored
	// without DirectIO.
	Alignment int

	// ZeroFill writes zeros (and syncs them) into the preallocated space
	// of the current file a few MiB ahead of the writer, off its path, so
	// that group writes overwrite written blocks and their fdatasync
	// commits no file-system metadata: see doc.go, "Zero fill". A writer
	// that overtakes the filler (a journal near its disk's bandwidth)
	// pauses it for a second at a time. Needs PreallocSize > 0; ignored
	// with NoSync (there is no fdatasync to spare the metadata of, and the
	// filler's own syncs would be the journal's only ones).
	ZeroFill bool

	// NoSync skips fdatasync: completions fire after the write reaches the
	// page cache. For benchmarks only; Durable reports false.
	NoSync bool
}

// DefaultOptions returns the defaults for a journal in dir.
func DefaultOptions(dir string) Options {
	o := Options{Dir: dir, MaxGroupWait: DefaultMaxGroupWait}
	o.EnsureDefaults()
	return o
}

// EnsureDefaults replaces zero fields with their defaults (MaxGroupWait and
// MaxGroupEntries excepted: their zero is meaningful).
func (o *Options) EnsureDefaults() {
	if o.FS == nil {
		o.FS = vfs.NewOS()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxGroupBytes == 0 {
		o.MaxGroupBytes = DefaultMaxGroupBytes
	}
	if o.MaxQueuedBytes == 0 {
		o.MaxQueuedBytes = DefaultMaxQueuedBytes
	}
	if o.PreallocSize == 0 {
		o.PreallocSize = DefaultPreallocSize
	}
	if o.MaxFileSize == 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	if o.MaxBackups == 0 {
		o.MaxBackups = DefaultMaxBackups
	}
	if o.DirectIO && o.Alignment == 0 {
		o.Alignment = DefaultAlignment
	}
}

// Validate reports the first invalid field; errors wrap ErrBadOptions.
func (o *Options) Validate() error {
	switch {
	case o.Dir == "":
		return fmt.Errorf("%w: Dir is empty", ErrBadOptions)
	case o.FS == nil:
		return fmt.Errorf("%w: FS is nil", ErrBadOptions)
	case o.MaxGroupWait < 0:
		return fmt.Errorf("%w: MaxGroupWait %v < 0", ErrBadOptions, o.MaxGroupWait)
	case o.MaxGroupBytes < 0:
		return fmt.Errorf("%w: MaxGroupBytes %d < 0", ErrBadOptions, o.MaxGroupBytes)
	case o.MaxGroupEntries < 0:
		return fmt.Errorf("%w: MaxGroupEntries %d < 0", ErrBadOptions, o.MaxGroupEntries)
	case o.MaxQueuedBytes < 0 || o.MaxQueuedBytes > maxQueuedLimit:
		return fmt.Errorf("%w: MaxQueuedBytes %d not in [0, %d]", ErrBadOptions, o.MaxQueuedBytes, maxQueuedLimit)
	case o.PreallocSize < 0:
		return fmt.Errorf("%w: PreallocSize %d < 0", ErrBadOptions, o.PreallocSize)
	case o.MaxFileSize < FileHeaderSize:
		return fmt.Errorf("%w: MaxFileSize %d too small", ErrBadOptions, o.MaxFileSize)
	case o.DirectIO && !validAlignment(o.Alignment):
		return fmt.Errorf("%w: Alignment %d is not a power of two in [512, 1 MiB]", ErrBadOptions, o.Alignment)
	case o.WriterMode < uring.ModeAuto || o.WriterMode > uring.ModePwrite:
		return fmt.Errorf("%w: WriterMode %d", ErrBadOptions, o.WriterMode)
	}
	return nil
}
