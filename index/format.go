package index

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/magnetar-mq/magnetar/internal/crc32c"
)

// Format constants. See doc.go for the layouts.
const (
	// Version is the segment format version (and that of the first
	// metadata file format, which is still read).
	Version = 1
	// MetaVersion is the metadata file version written: 2 adds the
	// generation that ties a metadata log to its snapshot.
	MetaVersion = 2
	// SegmentHeaderSize is the size of a segment file's header; pages
	// follow it, so they stay aligned for mmap.
	SegmentHeaderSize  = 4096
	segHeaderCRCOffset = 20
	// MetaFile is the name of the metadata file in Options.Dir.
	MetaFile        = "INDEX-META"
	metaTmpFile     = "INDEX-META.tmp"
	metaHeaderLenV1 = 24
	metaHeaderLen   = 32
	flagFenced      = 1 << 0
	flagLAC         = 1 << 1
)

var (
	segMagic  = [4]byte{'M', 'G', 'I', 'X'}
	metaMagic = [4]byte{'M', 'G', 'I', 'M'}
)

// SegmentHeader is the decoded header of a segment file.
type SegmentHeader struct {
	SlotsPerPage    uint32
	PagesPerSegment uint32
	Segment         uint32
}

// AppendSegmentHeader appends the SegmentHeaderSize-byte header to dst.
func AppendSegmentHeader(dst []byte, h SegmentHeader) []byte {
	start := len(dst)
	dst = append(dst, segMagic[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, Version)
	dst = binary.LittleEndian.AppendUint32(dst, h.SlotsPerPage)
	dst = binary.LittleEndian.AppendUint32(dst, h.PagesPerSegment)
	dst = binary.LittleEndian.AppendUint32(dst, h.Segment)
	dst = binary.LittleEndian.AppendUint32(dst, crc32c.Checksum(dst[start:start+segHeaderCRCOffset]))
	return append(dst, make([]byte, SegmentHeaderSize-(len(dst)-start))...)
}

// DecodeSegmentHeader decodes a segment header.
func DecodeSegmentHeader(src []byte) (rest []byte, h SegmentHeader, err error) {
	if len(src) < SegmentHeaderSize {
		return src, h, fmt.Errorf("short segment header (%d bytes): %w", len(src), ErrCorrupt)
	}
	if [4]byte(src[:4]) != segMagic {
		return src, h, fmt.Errorf("bad segment magic %q: %w", src[:4], ErrCorrupt)
	}
	if v := binary.LittleEndian.Uint32(src[4:]); v != Version {
		return src, h, fmt.Errorf("unknown segment version %d: %w", v, ErrCorrupt)
	}
	if crc32c.Checksum(src[:segHeaderCRCOffset]) != binary.LittleEndian.Uint32(src[segHeaderCRCOffset:]) {
		return src, h, fmt.Errorf("segment header checksum mismatch: %w", ErrCorrupt)
	}
	h.SlotsPerPage = binary.LittleEndian.Uint32(src[8:])
	h.PagesPerSegment = binary.LittleEndian.Uint32(src[12:])
	h.Segment = binary.LittleEndian.Uint32(src[16:])
	if !geometryOK(int(h.SlotsPerPage), int(h.PagesPerSegment)) {
		return src, h, fmt.Errorf("segment geometry %d slots x %d pages out of range: %w", h.SlotsPerPage, h.PagesPerSegment, ErrCorrupt)
	}
	return src[SegmentHeaderSize:], h, nil
}

// segmentName is the file name of segment n.
func segmentName(n uint32) string { return fmt.Sprintf("%08x.seg", n) }

func parseSegmentName(name string) (uint32, bool) {
	hex, ok := strings.CutSuffix(name, ".seg")
	if !ok || len(hex) != 8 {
		return 0, false
	}
	n, err := strconv.ParseUint(hex, 16, 32)
	return uint32(n), err == nil
}

// Meta is the per-ledger metadata the bookie keeps.
type Meta struct {
	Fenced bool
	// MasterKey is the ledger's master key as sent by the writer.
	MasterKey []byte
	// ExplicitLAC is the last explicit LAC frame, nil if none.
	ExplicitLAC []byte
}

func (m Meta) clone() Meta {
	m.MasterKey = cloneBytes(m.MasterKey)
	m.ExplicitLAC = cloneBytes(m.ExplicitLAC)
	return m
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// metaHeader is the fixed start of the metadata file.
type metaHeader struct {
	SlotsPerPage    uint32
	PagesPerSegment uint32
	Segments        uint32 // segment files that existed at the flush
	Ledgers         uint32
	// Generation counts snapshots; the metadata log that continues this
	// snapshot carries the same number. 0 in a version 1 file.
	Generation uint64
}

// ledgerRecord is one ledger in the metadata file.
type ledgerRecord struct {
	ID    int64
	Meta  Meta
	Pages []uint32 // page table: physical page + 1, 0 for a hole
}

// appendMeta encodes the metadata file.
func appendMeta(dst []byte, h metaHeader, ledgers []ledgerRecord) []byte {
	start := len(dst)
	dst = append(dst, metaMagic[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, MetaVersion)
	dst = binary.LittleEndian.AppendUint32(dst, h.SlotsPerPage)
	dst = binary.LittleEndian.AppendUint32(dst, h.PagesPerSegment)
	dst = binary.LittleEndian.AppendUint32(dst, h.Segments)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(ledgers)))
	dst = binary.LittleEndian.AppendUint64(dst, h.Generation)
	for _, l := range ledgers {
		dst = appendLedgerRecord(dst, l)
	}
	return binary.LittleEndian.AppendUint32(dst, crc32c.Checksum(dst[start:]))
}

// appendMetaCRC appends the checksum of body to it.
func appendMetaCRC(body []byte) []byte {
	return binary.LittleEndian.AppendUint32(body, crc32c.Checksum(body))
}

func appendLedgerRecord(dst []byte, l ledgerRecord) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(l.ID))
	var flags byte
	if l.Meta.Fenced {
		flags |= flagFenced
	}
	if l.Meta.ExplicitLAC != nil {
		flags |= flagLAC
	}
	dst = append(dst, flags)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(l.Meta.MasterKey)))
	dst = append(dst, l.Meta.MasterKey...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(l.Meta.ExplicitLAC)))
	dst = append(dst, l.Meta.ExplicitLAC...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(l.Pages)))
	for _, p := range l.Pages {
		dst = binary.LittleEndian.AppendUint32(dst, p)
	}
	return dst
}

// decodeMeta decodes and verifies the metadata file.
func decodeMeta(src []byte) (h metaHeader, ledgers []ledgerRecord, err error) {
	if len(src) < metaHeaderLenV1+4 {
		return h, nil, fmt.Errorf("short metadata file (%d bytes): %w", len(src), ErrCorrupt)
	}
	body, sum := src[:len(src)-4], binary.LittleEndian.Uint32(src[len(src)-4:])
	if [4]byte(src[:4]) != metaMagic {
		return h, nil, fmt.Errorf("bad metadata magic %q: %w", src[:4], ErrCorrupt)
	}
	hdrLen := metaHeaderLen
	switch v := binary.LittleEndian.Uint32(src[4:]); v {
	case Version:
		hdrLen = metaHeaderLenV1
	case MetaVersion:
		if len(body) < metaHeaderLen {
			return h, nil, fmt.Errorf("short metadata file (%d bytes): %w", len(src), ErrCorrupt)
		}
	default:
		return h, nil, fmt.Errorf("unknown metadata version %d: %w", v, ErrCorrupt)
	}
	if crc32c.Checksum(body) != sum {
		return h, nil, fmt.Errorf("metadata checksum mismatch: %w", ErrCorrupt)
	}
	h.SlotsPerPage = binary.LittleEndian.Uint32(src[8:])
	h.PagesPerSegment = binary.LittleEndian.Uint32(src[12:])
	h.Segments = binary.LittleEndian.Uint32(src[16:])
	h.Ledgers = binary.LittleEndian.Uint32(src[20:])
	if hdrLen == metaHeaderLen {
		h.Generation = binary.LittleEndian.Uint64(src[24:])
	}
	if !geometryOK(int(h.SlotsPerPage), int(h.PagesPerSegment)) {
		return h, nil, fmt.Errorf("metadata geometry %d slots x %d pages out of range: %w", h.SlotsPerPage, h.PagesPerSegment, ErrCorrupt)
	}
	rest := body[hdrLen:]
	// Each record takes at least 19 bytes: bound the allocation by the input.
	if uint64(h.Ledgers)*19 > uint64(len(rest)) {
		return h, nil, fmt.Errorf("metadata claims %d ledgers in %d bytes: %w", h.Ledgers, len(rest), ErrCorrupt)
	}
	ledgers = make([]ledgerRecord, 0, h.Ledgers)
	for i := range h.Ledgers {
		var l ledgerRecord
		if rest, l, err = decodeLedgerRecord(rest); err != nil {
			return h, nil, fmt.Errorf("metadata ledger record %d: %w", i, err)
		}
		ledgers = append(ledgers, l)
	}
	if len(rest) != 0 {
		return h, nil, fmt.Errorf("%d bytes after the last ledger record: %w", len(rest), ErrCorrupt)
	}
	return h, ledgers, nil
}

// errShortRecord: a ledger record cut short (made once: Open decodes a
// record per ledger).
var errShortRecord = fmt.Errorf("truncated ledger record: %w", ErrCorrupt)

// decodeLedgerRecord decodes one ledger record at the start of src. The
// master key it returns is src's bytes, not a copy: Open passes every
// decoded record through keyTable.share, which stores the table's copy
// (one allocation per distinct key instead of one per ledger).
func decodeLedgerRecord(src []byte) (rest []byte, l ledgerRecord, err error) {
	short := errShortRecord
	if len(src) < 11 {
		return src, l, short
	}
	l.ID = int64(binary.LittleEndian.Uint64(src))
	flags := src[8]
	if l.ID < 0 || flags&^(flagFenced|flagLAC) != 0 {
		return src, l, fmt.Errorf("ledger %d flags %#x: %w", l.ID, flags, ErrCorrupt)
	}
	l.Meta.Fenced = flags&flagFenced != 0
	n := int(binary.LittleEndian.Uint16(src[9:]))
	src = src[11:]
	if len(src) < n+4 {
		return src, l, short
	}
	if n > 0 {
		l.Meta.MasterKey = src[:n:n]
	}
	m := uint64(binary.LittleEndian.Uint32(src[n:]))
	src = src[n+4:]
	if uint64(len(src)) < m+4 {
		return src, l, short
	}
	if flags&flagLAC != 0 {
		l.Meta.ExplicitLAC = cloneBytes(src[:m])
	} else if m != 0 {
		return src, l, fmt.Errorf("ledger %d: LAC bytes without the LAC flag: %w", l.ID, ErrCorrupt)
	}
	p := uint64(binary.LittleEndian.Uint32(src[m:]))
	src = src[m+4:]
	if uint64(len(src)) < p*4 || p > maxPageTable {
		return src, l, short
	}
	l.Pages = make([]uint32, p)
	for i := range l.Pages {
		l.Pages[i] = binary.LittleEndian.Uint32(src[4*i:])
	}
	return src[p*4:], l, nil
}
