package offload

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// Object format (version 1; see doc.go for the byte layouts).
const (
	// FormatVersion is the value of the metaVersion user metadata key on
	// every object; readers refuse any other.
	FormatVersion = "1"

	blockMagic      = 0xFBDBABCB
	blockHeaderSize = 128
	entryHeaderSize = 12 // int32 length | int64 entry id
	indexMagic      = 0xDE47DE47
	indexHeaderSize = 32
	indexEntrySize  = 20
	segmentVersion  = 1
	segmentSize     = 1 + 8*4 // version | lastEntryId | length | entries | ctime
)

// padding is written after the last entry of a block up to its length.
var padding = [4]byte{0xFE, 0xDC, 0xDE, 0xAD}

// Object metadata keys (S3 x-amz-meta-*; a sidecar for the directory
// store). Lower case, as Pulsar's jclouds writes them.
const (
	metaVersion = "s3managedledgeroffloaderformatversion"
	metaRole    = "role"
	metaML      = "managedledgername"
)

// DataKey and IndexKey name the objects of ledger id offloaded under uid.
func DataKey(uid UID, ledgerID int64) string  { return fmt.Sprintf("%s-ledger-%d", uid, ledgerID) }
func IndexKey(uid UID, ledgerID int64) string { return DataKey(uid, ledgerID) + "-index" }

// blockBuilder lays entries into one data block.
type blockBuilder struct {
	buf   []byte
	size  int // target block length
	first int64
	n     int // entries in the block
}

func (b *blockBuilder) reset(size int, first int64) {
	if cap(b.buf) < size {
		b.buf = make([]byte, 0, size)
	}
	b.buf = b.buf[:blockHeaderSize]
	clear(b.buf)
	binary.BigEndian.PutUint32(b.buf[0:], blockMagic)
	binary.BigEndian.PutUint64(b.buf[4:], blockHeaderSize)
	binary.BigEndian.PutUint64(b.buf[12:], uint64(size))
	binary.BigEndian.PutUint64(b.buf[20:], uint64(first))
	b.size, b.first, b.n = size, first, 0
}

// add appends entry id when all of its record fits; entries never span
// blocks.
func (b *blockBuilder) add(id int64, data []byte) bool {
	if len(b.buf)+entryHeaderSize+len(data) > b.size {
		return false
	}
	b.buf = binary.BigEndian.AppendUint32(b.buf, uint32(len(data)))
	b.buf = binary.BigEndian.AppendUint64(b.buf, uint64(id))
	b.buf = append(b.buf, data...)
	b.n++
	return true
}

// finish pads the block to its length and returns it.
func (b *blockBuilder) finish() []byte {
	for i := 0; len(b.buf) < b.size; i++ {
		b.buf = append(b.buf, padding[i%4])
	}
	return b.buf
}

// Segment describes the offloaded ledger (the index's segment metadata).
type Segment struct {
	LastEntryID int64
	Length      int64
	Entries     int64
	CtimeMs     int64
}

// indexEntry locates one data block (part numbers from 1).
type indexEntry struct {
	firstEntryID int64
	partID       int32
	offset       int64
}

// index is the decoded index object.
type index struct {
	dataLength int64
	seg        Segment
	blocks     []indexEntry
}

func appendSegment(dst []byte, s Segment) []byte {
	dst = append(dst, segmentVersion)
	for _, v := range []int64{s.LastEntryID, s.Length, s.Entries, s.CtimeMs} {
		dst = binary.BigEndian.AppendUint64(dst, uint64(v))
	}
	return dst
}

func (ix *index) encode() []byte {
	seg := appendSegment(nil, ix.seg)
	n := indexHeaderSize + len(seg) + indexEntrySize*len(ix.blocks)
	b := make([]byte, 0, n)
	b = binary.BigEndian.AppendUint32(b, indexMagic)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = binary.BigEndian.AppendUint64(b, uint64(ix.dataLength))
	b = binary.BigEndian.AppendUint64(b, blockHeaderSize)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ix.blocks)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(seg)))
	b = append(b, seg...)
	for _, e := range ix.blocks {
		b = binary.BigEndian.AppendUint64(b, uint64(e.firstEntryID))
		b = binary.BigEndian.AppendUint32(b, uint32(e.partID))
		b = binary.BigEndian.AppendUint64(b, uint64(e.offset))
	}
	return b
}

func decodeIndex(b []byte) (*index, error) {
	bad := func(what string) (*index, error) {
		return nil, fmt.Errorf("index object: %s: %w", what, ErrCorrupt)
	}
	if len(b) < indexHeaderSize || binary.BigEndian.Uint32(b) != indexMagic {
		return bad("bad magic")
	}
	if int(binary.BigEndian.Uint32(b[4:])) != len(b) {
		return bad("length mismatch")
	}
	ix := &index{dataLength: int64(binary.BigEndian.Uint64(b[8:]))}
	if binary.BigEndian.Uint64(b[16:]) != blockHeaderSize {
		return bad("data header length")
	}
	n := int(binary.BigEndian.Uint32(b[24:]))
	sl := int(binary.BigEndian.Uint32(b[28:]))
	if sl != segmentSize || len(b) != indexHeaderSize+sl+n*indexEntrySize {
		return bad("sizes")
	}
	seg := b[indexHeaderSize : indexHeaderSize+sl]
	if seg[0] != segmentVersion {
		return bad("segment metadata version")
	}
	ix.seg = Segment{
		LastEntryID: int64(binary.BigEndian.Uint64(seg[1:])),
		Length:      int64(binary.BigEndian.Uint64(seg[9:])),
		Entries:     int64(binary.BigEndian.Uint64(seg[17:])),
		CtimeMs:     int64(binary.BigEndian.Uint64(seg[25:])),
	}
	p := b[indexHeaderSize+sl:]
	for i := range n {
		e := p[i*indexEntrySize:]
		ix.blocks = append(ix.blocks, indexEntry{
			firstEntryID: int64(binary.BigEndian.Uint64(e)),
			partID:       int32(binary.BigEndian.Uint32(e[8:])),
			offset:       int64(binary.BigEndian.Uint64(e[12:])),
		})
	}
	if !sort.SliceIsSorted(ix.blocks, func(i, j int) bool { return ix.blocks[i].firstEntryID < ix.blocks[j].firstEntryID }) {
		return bad("blocks out of order")
	}
	if ix.seg.LastEntryID < 0 || len(ix.blocks) == 0 || ix.blocks[0].firstEntryID != 0 || ix.blocks[0].offset != 0 {
		return bad("no blocks")
	}
	return ix, nil
}

// block returns the index of the block holding entry id (floor search).
func (ix *index) block(id int64) int {
	return sort.Search(len(ix.blocks), func(i int) bool { return ix.blocks[i].firstEntryID > id }) - 1
}

// blockEnd is where block i ends in the data object.
func (ix *index) blockEnd(i int) int64 {
	if i+1 < len(ix.blocks) {
		return ix.blocks[i+1].offset
	}
	return ix.dataLength
}
