package index

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// Defaults.
const (
	DefaultSlotsPerPage    = 512   // 4 KiB pages
	DefaultPagesPerSegment = 16384 // 64 MiB segments
	maxSlotsPerPage        = 1 << 16
	maxPagesPerSegment     = 1 << 20
	// maxSegmentBytes bounds a segment's size (SlotsPerPage*8*PagesPerSegment).
	maxSegmentBytes = 1 << 30
	// maxPageTable bounds one ledger's page table (entry id / SlotsPerPage).
	maxPageTable = 1 << 26
)

// Options configure an Index. SlotsPerPage and PagesPerSegment apply to a
// new index; an existing one keeps the values it was created with.
type Options struct {
	// FS is the file system. Required.
	FS vfs.FS
	// Dir holds the segment files and the metadata file. Required.
	Dir string
	// SlotsPerPage is the number of 8-byte locations in one page.
	SlotsPerPage int
	// PagesPerSegment is the number of pages in one segment file.
	PagesPerSegment int
	// NoMmap keeps segments in heap memory and flushes them with WriteAt
	// and Sync even when the FS supports mmap (files with vfs.Fder). Files
	// without a descriptor (MemFS) always use this mode.
	NoMmap bool
	// Logger receives warnings. Nil means no logging.
	Logger *slog.Logger
	// MetaLogLimit is the size the metadata log may reach before a Flush
	// writes a whole snapshot instead of appending its changes (doc.go,
	// "Metadata log"). Zero means the larger of 1 MiB and the last
	// snapshot's size, so a Flush writes in proportion to what changed and
	// the snapshot is rewritten at most once per its own size of changes.
	MetaLogLimit int64
}

// EnsureDefaults fills zero fields with defaults.
func (o *Options) EnsureDefaults() {
	if o.SlotsPerPage == 0 {
		o.SlotsPerPage = DefaultSlotsPerPage
	}
	if o.PagesPerSegment == 0 {
		o.PagesPerSegment = DefaultPagesPerSegment
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports an unusable configuration.
func (o *Options) Validate() error {
	if o.FS == nil {
		return errors.New("index: Options.FS is nil")
	}
	if o.Dir == "" {
		return errors.New("index: Options.Dir is empty")
	}
	if o.SlotsPerPage < 1 || o.SlotsPerPage > maxSlotsPerPage {
		return fmt.Errorf("index: SlotsPerPage %d out of range [1, %d]", o.SlotsPerPage, maxSlotsPerPage)
	}
	if o.PagesPerSegment < 1 || o.PagesPerSegment > maxPagesPerSegment {
		return fmt.Errorf("index: PagesPerSegment %d out of range [1, %d]", o.PagesPerSegment, maxPagesPerSegment)
	}
	if !geometryOK(o.SlotsPerPage, o.PagesPerSegment) {
		return fmt.Errorf("index: segment of %d slots x %d pages exceeds %d bytes", o.SlotsPerPage, o.PagesPerSegment, maxSegmentBytes)
	}
	return nil
}

// geometryOK bounds the page and segment sizes.
func geometryOK(slots, pages int) bool {
	return slots >= 1 && slots <= maxSlotsPerPage && pages >= 1 && pages <= maxPagesPerSegment &&
		int64(slots)*8*int64(pages) <= maxSegmentBytes
}
