package journal

import (
	"fmt"
	"unsafe"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// A DirectIO journal file is also sized ahead: the preallocated range is
// made part of the file (Truncate up to the preallocation end, reading as
// zeros) so that group writes land inside the file's size. An O_DIRECT
// write past the size is an extending write, which ext4 runs with
// journaled size updates per write; inside the size only the unwritten
// extents are converted. Replay reads the zeros past the last record as a
// torn tail, as it does the padding.

// DefaultAlignment is the write alignment of a DirectIO journal when
// Options.Alignment is zero: the page size, which is a multiple of the
// logical block size of every common device.
const DefaultAlignment = 4096

// directState is the aligned-write state of a DirectIO journal file (see
// doc.go, "Direct I/O"). Owned by the writer goroutine, like Journal.f.
type directState struct {
	align int
	// f is the O_DIRECT descriptor of the current file (nil when the file
	// system has no DirectOpener: aligned writes then go through the
	// ordinary file, which is what tests on MemFS exercise).
	f vfs.File
	// tail holds the bytes of the current file from alignDown(off) to off:
	// the durable (or in-flight) part of the last, partly filled block,
	// which the next group write rewrites unchanged in front of its own
	// records.
	tail []byte
	// stage is the aligned buffer a group is gathered into; it is only
	// reused after the previous write's wait returned (the committer keeps
	// at most one group in flight).
	stage []byte
}

// newDirectState returns the state for a file whose first write starts
// at offset 0 with hdr (the file header, already durable) as its tail.
func newDirectState(align int, f vfs.File, hdr []byte, old *directState) *directState {
	d := &directState{align: align, f: f}
	if old != nil {
		d.stage, d.tail = old.stage, old.tail[:0]
	}
	d.tail = append(d.tail, hdr...)
	return d
}

// alignedBuf returns a zeroed slice of n bytes whose first byte is aligned
// to align (a power of two). Go does not move heap objects, so the
// address stays aligned for the slice's life.
func alignedBuf(n, align int) []byte {
	b := make([]byte, n+align)
	off := 0
	if r := int(uintptr(unsafe.Pointer(&b[0])) & uintptr(align-1)); r != 0 {
		off = align - r
	}
	return b[off : off+n : off+n]
}

// stageGroup gathers the bytes of a group written at logical offset off
// (the tail of the current block, then chunks, then zeros up to the next
// alignment boundary) into d.stage and returns the aligned write offset
// and the buffer. It then keeps the new last partial block as the tail.
func (d *directState) stageGroup(off int64, chunks [][]byte, size int) (int64, []byte) {
	a := int64(d.align)
	start := off - int64(len(d.tail))
	if start%a != 0 {
		panic(fmt.Sprintf("BUG: journal: direct tail of %d bytes at offset %d", len(d.tail), off))
	}
	end := off + int64(size)
	padded := (end + a - 1) / a * a
	n := int(padded - start)
	if cap(d.stage) < n {
		d.stage = alignedBuf(max(n, 2*cap(d.stage)), d.align)
	}
	buf := d.stage[:n]
	w := copy(buf, d.tail)
	for _, c := range chunks {
		w += copy(buf[w:], c)
	}
	clear(buf[w:])
	// The new tail: from the last boundary at or below end.
	last := end / a * a
	d.tail = append(d.tail[:0], buf[last-start:end-start]...)
	return start, buf
}

// paddedEnd is the file offset a group of size bytes at off extends the
// file to.
func (d *directState) paddedEnd(off int64, size int) int64 {
	a := int64(d.align)
	return (off + int64(size) + a - 1) / a * a
}

// validAlignment reports whether a is a usable DirectIO alignment: a power
// of two from 512 to 1 MiB.
func validAlignment(a int) bool {
	return a >= 512 && a <= 1<<20 && a&(a-1) == 0
}
