package index

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// segment is one segment file: a header and PagesPerSegment pages of
// SlotsPerPage little-endian uint64 locations.
type segment struct {
	no        uint32
	path      string
	f         vfs.File
	mem       []byte // the pages (header excluded): mmap'd, or heap
	mmap      []byte // the whole mapping, nil in heap mode
	pageBytes int
	// dirty has one bit per page set by writers since the last flush.
	dirty []atomic.Uint64
}

// slot returns the atomic overlay of slot s of page p (within segment).
// Locations are stored little-endian; this package only runs on
// little-endian hosts (amd64, arm64).
func (s *segment) slot(p, sl int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&s.mem[p*s.pageBytes+sl*8]))
}

func (s *segment) markDirty(p int) {
	w := &s.dirty[p/64]
	bit := uint64(1) << (p % 64)
	if w.Load()&bit == 0 {
		w.Or(bit)
	}
}

func newSegmentState(no uint32, path string, f vfs.File, slots, pages int) *segment {
	return &segment{no: no, path: path, f: f, pageBytes: slots * 8, dirty: make([]atomic.Uint64, (pages+63)/64)}
}

// createSegment creates, sizes, syncs and maps segment no.
func createSegment(fs vfs.FS, dir string, no uint32, slots, pages int, useMmap bool) (*segment, error) {
	path := dir + "/" + segmentName(no)
	f, err := fs.Create(path)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	s := newSegmentState(no, path, f, slots, pages)
	size := int64(SegmentHeaderSize + slots*8*pages)
	hdr := AppendSegmentHeader(nil, SegmentHeader{SlotsPerPage: uint32(slots), PagesPerSegment: uint32(pages), Segment: no})
	err = f.Truncate(size)
	if err == nil {
		// Reserve the blocks: a store into a mapped hole on a full disk
		// would be SIGBUS rather than an error.
		err = f.Preallocate(0, size)
	}
	if err == nil {
		_, err = f.WriteAt(hdr, 0)
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = fs.SyncDir(dir)
	}
	if err == nil {
		err = s.load(size, useMmap)
	}
	if err != nil {
		f.Close()
		// Nothing refers to the segment yet: remove it, so that a retry
		// (after ENOSPC, see takePageLocked) starts afresh.
		if fs.Remove(path) == nil {
			_ = fs.SyncDir(dir)
		}
		return nil, fmt.Errorf("index: create %s: %w", path, err)
	}
	return s, nil
}

// openSegment opens and maps an existing segment, checking its header
// against the expected geometry.
func openSegment(fs vfs.FS, path string, no uint32, slots, pages int, useMmap bool) (*segment, error) {
	f, err := fs.OpenReadWrite(path)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	fail := func(err error) (*segment, error) {
		f.Close()
		return nil, fmt.Errorf("index: %s: %w", path, err)
	}
	hdr := make([]byte, SegmentHeaderSize)
	if n, err := f.ReadAt(hdr, 0); n < len(hdr) {
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("short segment header: %w", ErrCorrupt)
		}
		return fail(err)
	}
	_, h, err := DecodeSegmentHeader(hdr)
	if err != nil {
		return fail(err)
	}
	if h.Segment != no || int(h.SlotsPerPage) != slots || int(h.PagesPerSegment) != pages {
		return fail(fmt.Errorf("segment header %+v, want segment %d with %d slots x %d pages: %w", h, no, slots, pages, ErrCorrupt))
	}
	size := int64(SegmentHeaderSize + slots*8*pages)
	fi, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if fi.Size() != size {
		// Created but not sized durably: the pages are all free, extend.
		if err := f.Truncate(size); err != nil {
			return fail(err)
		}
	}
	s := newSegmentState(no, path, f, slots, pages)
	if err := s.load(size, useMmap); err != nil {
		return fail(err)
	}
	return s, nil
}

// load maps the file (mmap mode) or reads it into the heap.
func (s *segment) load(size int64, useMmap bool) error {
	if fd, ok := s.f.(vfs.Fder); ok && useMmap {
		m, err := unix.Mmap(int(fd.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return fmt.Errorf("mmap: %w", err)
		}
		s.mmap, s.mem = m, m[SegmentHeaderSize:]
		return nil
	}
	// Heap mode: 8-byte aligned backing so the atomic overlays are valid.
	words := make([]uint64, (size-SegmentHeaderSize+7)/8)
	s.mem = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), len(words)*8)[:size-SegmentHeaderSize]
	n, err := s.f.ReadAt(s.mem, SegmentHeaderSize)
	if n == len(s.mem) || errors.Is(err, io.EOF) {
		return nil // a short file reads as zero pages
	}
	return err
}

// flush makes the dirty pages durable: in mmap mode the mapping is
// dropped first (release: the dirty bits go to the page cache) and the
// file synced, or WriteAt of each dirty page and one Sync (heap). An
// msync of the still-mapped pages would write-protect every dirty page
// in the page tables one by one, each with a TLB shootdown (an
// inter-processor interrupt, dear in a virtual machine: ~6 % of a busy
// bookie's CPU); dropping the mapping first flushes the TLB once for
// the whole segment.
func (s *segment) flush() error {
	first := -1
	var buf []byte
	for wi := range s.dirty {
		bits := s.dirty[wi].Swap(0)
		for bits != 0 {
			b := 0
			for bits&(1<<b) == 0 {
				b++
			}
			bits &^= 1 << b
			p := wi*64 + b
			if first < 0 {
				first = p
			}
			if s.mmap == nil {
				buf = s.copyPage(buf[:0], p)
				if _, err := s.f.WriteAt(buf, int64(SegmentHeaderSize+p*s.pageBytes)); err != nil {
					return fmt.Errorf("index: write %s: %w", s.path, err)
				}
			}
		}
	}
	if first < 0 {
		s.release(0, len(s.mmap)) // pages only read since the last flush
		return nil
	}
	if s.mmap == nil {
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("index: sync %s: %w", s.path, err)
		}
		return nil
	}
	// A Set racing the release maps its page again and dirties it; the
	// Sync below or the next flush (its dirty bit is set again) writes it.
	s.release(0, len(s.mmap))
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("index: sync %s: %w", s.path, err)
	}
	return nil
}

// release drops the process's mapping of bytes lo..hi of the file (mmap
// mode): the pages stay in the page cache and on disk, and the next access
// maps them again. A segment holds a page per ledger, and most ledgers of
// a broker with many topics are idle: without this every page written,
// read or scanned stays in the resident set. Each flush releases the whole
// segment, so only pages used since the last flush are resident (an
// active ledger's page is mapped again once per flush: a minor fault). MADV_DONTNEED on a shared file
// mapping loses nothing: a page's contents are the file's (a store racing
// it lands in the page cache, and its dirty bit goes with it).
func (s *segment) release(lo, hi int) {
	if s.mmap == nil || hi <= lo {
		return
	}
	_ = unix.Madvise(s.mmap[lo:hi], unix.MADV_DONTNEED) // advice only
}

// copyPage appends page p read slot by slot with atomic loads, so that a
// concurrent Set is not a data race.
func (s *segment) copyPage(dst []byte, p int) []byte {
	for sl := range s.pageBytes / 8 {
		v := s.slot(p, sl).Load()
		dst = append(dst, byte(v), byte(v>>8), byte(v>>16), byte(v>>24), byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56))
	}
	return dst
}

func (s *segment) close() error {
	var err error
	if s.mmap != nil {
		err = unix.Munmap(s.mmap)
		s.mmap, s.mem = nil, nil
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}
