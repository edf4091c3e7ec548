package mledger

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
)

// formatVersion is the first byte of every encoded managed-ledger info,
// cursor node and cursor-ledger entry. See doc.go for the layouts.
const formatVersion = 1

// Cursor-ledger record kinds.
const (
	recSnapshotChunk = 1
	recDelta         = 2
)

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrCorrupt)
}

func readUvarint(src []byte) ([]byte, uint64, error) {
	v, n := binary.Uvarint(src)
	if n <= 0 {
		return src, 0, corruptf("bad uvarint")
	}
	return src[n:], v, nil
}

func readVarint(src []byte) ([]byte, int64, error) {
	v, n := binary.Varint(src)
	if n <= 0 {
		return src, 0, corruptf("bad varint")
	}
	return src[n:], v, nil
}

func appendPosition(dst []byte, p Position) []byte {
	dst = binary.AppendVarint(dst, p.LedgerID)
	return binary.AppendVarint(dst, p.EntryID)
}

func decodePosition(src []byte) (rest []byte, p Position, err error) {
	if src, p.LedgerID, err = readVarint(src); err != nil {
		return src, p, err
	}
	src, p.EntryID, err = readVarint(src)
	return src, p, err
}

func appendWords(dst []byte, w []uint64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(w)))
	for _, x := range w {
		dst = binary.LittleEndian.AppendUint64(dst, x)
	}
	return dst
}

func decodeWords(src []byte) ([]byte, []uint64, error) {
	src, n, err := readUvarint(src)
	if err != nil {
		return src, nil, err
	}
	if n > uint64(len(src))/8 {
		return src, nil, corruptf("ack set of %d words in %d bytes", n, len(src))
	}
	w := make([]uint64, n)
	for i := range w {
		w[i] = binary.LittleEndian.Uint64(src[8*i:])
	}
	return src[8*n:], w, nil
}

// appendSnapshot encodes the full ack state s:
//
//	markDelete, uvarint nBatch, nBatch × (position, words),
//	uvarint nLedgers, nLedgers × (varint ledgerID delta, uvarint len, roaring)
//
// If the encoding would exceed maxBytes (> 0), acks furthest from
// mark-delete are left out and dropped reports how many entries were lost.
func appendSnapshot(dst []byte, s *ackState, maxBytes int) (out []byte, dropped int64) {
	start := len(dst)
	dst = appendPosition(dst, s.markDelete)
	keys := s.batchKeys()
	dst = binary.AppendUvarint(dst, uint64(len(keys)))
	for _, p := range keys {
		dst = appendPosition(dst, p)
		dst = appendWords(dst, s.batch[p])
	}
	// Count the ledgers that fit.
	budget := math.MaxInt
	if maxBytes > 0 {
		budget = maxBytes - (len(dst) - start) - binary.MaxVarintLen64
	}
	type enc struct {
		id int64
		bm *roaring.Bitmap
	}
	var fit []enc
	for i, l := range s.ledgers {
		bm := s.acked[l]
		bm.RunOptimize()
		sz := int(bm.GetSerializedSizeInBytes()) + 2*binary.MaxVarintLen64
		if sz > budget {
			// Trim this ledger's bitmap from the top until it fits.
			c := bm.Clone()
			for !c.IsEmpty() && int(c.GetSerializedSizeInBytes())+2*binary.MaxVarintLen64 > budget {
				lo, hi := uint64(c.Minimum()), uint64(c.Maximum())
				c.RemoveRange(lo+(hi-lo)/2, hi+1)
				c.RunOptimize()
			}
			dropped += int64(bm.GetCardinality() - c.GetCardinality())
			if !c.IsEmpty() {
				fit = append(fit, enc{l, c})
			}
			for _, m := range s.ledgers[i+1:] {
				dropped += int64(s.acked[m].GetCardinality())
			}
			break
		}
		budget -= sz
		fit = append(fit, enc{l, bm})
	}
	dst = binary.AppendUvarint(dst, uint64(len(fit)))
	prev := int64(0)
	for _, e := range fit {
		dst = binary.AppendVarint(dst, e.id-prev)
		prev = e.id
		dst = binary.AppendUvarint(dst, e.bm.GetSerializedSizeInBytes())
		var buf bytes.Buffer
		buf.Grow(int(e.bm.GetSerializedSizeInBytes()))
		if _, err := e.bm.WriteTo(&buf); err != nil {
			panic("BUG: roaring WriteTo to bytes.Buffer: " + err.Error())
		}
		dst = append(dst, buf.Bytes()...)
	}
	return dst, dropped
}

// decodeSnapshot decodes what appendSnapshot wrote.
func decodeSnapshot(src []byte) (rest []byte, s *ackState, err error) {
	src, md, err := decodePosition(src)
	if err != nil {
		return src, nil, err
	}
	s = newAckState(md)
	src, nb, err := readUvarint(src)
	if err != nil {
		return src, nil, err
	}
	for range nb {
		var p Position
		var w []uint64
		if src, p, err = decodePosition(src); err != nil {
			return src, nil, err
		}
		if src, w, err = decodeWords(src); err != nil {
			return src, nil, err
		}
		s.batch[p] = w
	}
	src, nl, err := readUvarint(src)
	if err != nil {
		return src, nil, err
	}
	prev := int64(0)
	for range nl {
		var d int64
		var n uint64
		if src, d, err = readVarint(src); err != nil {
			return src, nil, err
		}
		if src, n, err = readUvarint(src); err != nil {
			return src, nil, err
		}
		if n > uint64(len(src)) {
			return src, nil, corruptf("bitmap of %d bytes in %d", n, len(src))
		}
		id := prev + d
		prev = id
		bm := roaring.New()
		if _, err := bm.ReadFrom(bytes.NewReader(src[:n])); err != nil {
			return src, nil, corruptf("ledger %d bitmap: %v", id, err)
		}
		// ReadFrom trusts its input; invalid containers panic later.
		if err := bm.Validate(); err != nil {
			return src, nil, corruptf("ledger %d bitmap: %v", id, err)
		}
		src = src[n:]
		if bm.IsEmpty() {
			continue
		}
		if _, dup := s.acked[id]; dup {
			return src, nil, corruptf("ledger %d twice", id)
		}
		s.acked[id] = bm
		s.ledgers = append(s.ledgers, id)
		s.ackedCount += int64(bm.GetCardinality())
	}
	if !slices.IsSorted(s.ledgers) {
		return src, nil, corruptf("ledgers out of order")
	}
	return src, s, nil
}

// entryRange is entries First..Last (inclusive) of one ledger.
type entryRange struct {
	Ledger, First, Last int64
}

// delta is what changed in an ack state since the previous persist: the new
// mark-delete, newly acked ranges, and batch ack sets that changed (their
// complete new value).
type delta struct {
	markDelete Position
	ranges     []entryRange
	batches    []batchUpdate
}

type batchUpdate struct {
	Pos Position
	Set []uint64
}

// appendDelta encodes d:
//
//	markDelete, uvarint nRanges, nRanges × (varint ledger delta, uvarint
//	first delta from previous last in the same ledger, uvarint last-first),
//	uvarint nBatch, nBatch × (position, words)
//
// Ranges must be sorted and non-overlapping.
func appendDelta(dst []byte, d *delta) []byte {
	dst = appendPosition(dst, d.markDelete)
	dst = binary.AppendUvarint(dst, uint64(len(d.ranges)))
	prevL, prevE := int64(0), int64(-1)
	for _, r := range d.ranges {
		dst = binary.AppendVarint(dst, r.Ledger-prevL)
		if r.Ledger != prevL {
			prevE = -1
		}
		dst = binary.AppendUvarint(dst, uint64(r.First-prevE-1))
		dst = binary.AppendUvarint(dst, uint64(r.Last-r.First))
		prevL, prevE = r.Ledger, r.Last
	}
	dst = binary.AppendUvarint(dst, uint64(len(d.batches)))
	for _, b := range d.batches {
		dst = appendPosition(dst, b.Pos)
		dst = appendWords(dst, b.Set)
	}
	return dst
}

func decodeDelta(src []byte) (rest []byte, d *delta, err error) {
	d = &delta{}
	if src, d.markDelete, err = decodePosition(src); err != nil {
		return src, nil, err
	}
	src, n, err := readUvarint(src)
	if err != nil {
		return src, nil, err
	}
	if n > uint64(len(src)) {
		return src, nil, corruptf("%d ranges in %d bytes", n, len(src))
	}
	prevL, prevE := int64(0), int64(-1)
	d.ranges = make([]entryRange, 0, n)
	for range n {
		var dl int64
		var df, dn uint64
		if src, dl, err = readVarint(src); err != nil {
			return src, nil, err
		}
		if src, df, err = readUvarint(src); err != nil {
			return src, nil, err
		}
		if src, dn, err = readUvarint(src); err != nil {
			return src, nil, err
		}
		l := prevL + dl
		if l != prevL {
			prevE = -1
		}
		first := prevE + 1 + int64(df)
		last := first + int64(dn)
		if first < 0 || last < first || last > math.MaxUint32 {
			return src, nil, corruptf("bad range %d:%d..%d", l, first, last)
		}
		d.ranges = append(d.ranges, entryRange{l, first, last})
		prevL, prevE = l, last
	}
	src, nb, err := readUvarint(src)
	if err != nil {
		return src, nil, err
	}
	for range nb {
		var b batchUpdate
		if src, b.Pos, err = decodePosition(src); err != nil {
			return src, nil, err
		}
		if src, b.Set, err = decodeWords(src); err != nil {
			return src, nil, err
		}
		d.batches = append(d.batches, b)
	}
	return src, d, nil
}

// applyDelta replays d onto s (recovery).
func applyDelta(s *ackState, d *delta) {
	if s.markDelete.Less(d.markDelete) {
		s.setMarkDelete(d.markDelete)
	}
	for _, r := range d.ranges {
		s.ackRange(r.Ledger, r.First, r.Last)
	}
	for _, b := range d.batches {
		if !s.isAcked(b.Pos) {
			s.batch[b.Pos] = slices.Clone(b.Set)
		}
	}
}

// toRanges sorts positions and merges them into ranges (consecutive entry
// ids of the same ledger), dropping those at or before md.
func toRanges(ps []Position, md Position) []entryRange {
	slices.SortFunc(ps, Position.Compare)
	var out []entryRange
	for _, p := range ps {
		if !md.Less(p) {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Ledger == p.LedgerID && out[n-1].Last+1 >= p.EntryID {
			if p.EntryID > out[n-1].Last {
				out[n-1].Last = p.EntryID
			}
			continue
		}
		out = append(out, entryRange{p.LedgerID, p.EntryID, p.EntryID})
	}
	return out
}

// Cursor-ledger entries: version, kind, body.
//
//	snapshot chunk: uvarint index, byte last (0/1), chunk bytes
//	delta:          delta encoding
func appendSnapshotChunk(dst []byte, index int, last bool, chunk []byte) []byte {
	dst = append(dst, formatVersion, recSnapshotChunk)
	dst = binary.AppendUvarint(dst, uint64(index))
	l := byte(0)
	if last {
		l = 1
	}
	dst = append(dst, l)
	return append(dst, chunk...)
}

func appendDeltaRecord(dst []byte, d *delta) []byte {
	dst = append(dst, formatVersion, recDelta)
	return appendDelta(dst, d)
}

// cursorNode is the value of a cursor's metadata node.
//
//	byte version, varint cursorLedgerID (-1: none), markDelete,
//	uvarint len, inline snapshot (used only without a cursor ledger),
//	[uvarint nProps, nProps × (uvarint len, key, uvarint len, value)]
//
// The properties section is optional (absent in nodes written before it
// existed, and when there are none).
type cursorNode struct {
	ledgerID   int64
	markDelete Position
	inline     []byte
	props      map[string]string
}

func appendCursorNode(dst []byte, n *cursorNode) []byte {
	dst = append(dst, formatVersion)
	dst = binary.AppendVarint(dst, n.ledgerID)
	dst = appendPosition(dst, n.markDelete)
	dst = binary.AppendUvarint(dst, uint64(len(n.inline)))
	dst = append(dst, n.inline...)
	if len(n.props) == 0 {
		return dst
	}
	dst = binary.AppendUvarint(dst, uint64(len(n.props)))
	for _, k := range slices.Sorted(maps.Keys(n.props)) {
		dst = appendString(dst, k)
		dst = appendString(dst, n.props[k])
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func readString(src []byte) ([]byte, string, error) {
	src, l, err := readUvarint(src)
	if err != nil {
		return src, "", err
	}
	if l > uint64(len(src)) {
		return src, "", corruptf("string of %d bytes in %d", l, len(src))
	}
	return src[l:], string(src[:l]), nil
}

func decodeCursorNode(src []byte) (rest []byte, n *cursorNode, err error) {
	if len(src) < 1 || src[0] != formatVersion {
		return src, nil, corruptf("cursor node version")
	}
	src = src[1:]
	n = &cursorNode{}
	if src, n.ledgerID, err = readVarint(src); err != nil {
		return src, nil, err
	}
	if src, n.markDelete, err = decodePosition(src); err != nil {
		return src, nil, err
	}
	src, l, err := readUvarint(src)
	if err != nil {
		return src, nil, err
	}
	if l > uint64(len(src)) {
		return src, nil, corruptf("inline state of %d bytes in %d", l, len(src))
	}
	if l > 0 {
		n.inline = slices.Clone(src[:l])
	}
	src = src[l:]
	if len(src) == 0 {
		return src, n, nil
	}
	src, np, err := readUvarint(src)
	if err != nil {
		return src, nil, err
	}
	if np > uint64(len(src))/2 {
		return src, nil, corruptf("%d cursor properties in %d bytes", np, len(src))
	}
	n.props = make(map[string]string, np)
	for range np {
		var k, v string
		if src, k, err = readString(src); err != nil {
			return src, nil, err
		}
		if src, v, err = readString(src); err != nil {
			return src, nil, err
		}
		n.props[k] = v
	}
	return src, n, nil
}

// LedgerInfo describes one ledger of a managed ledger.
type LedgerInfo struct {
	LedgerID int64
	Entries  int64
	Size     int64
	// Messages is the sum of the message counts passed to AddEntry.
	Messages int64
	// Timestamp is the close time (unix ms); 0 while the ledger is open.
	Timestamp int64
	// Offload is the ledger's offload state (nil: never offloaded). The
	// pointee is never modified: a change replaces the pointer.
	Offload *OffloadContext
}

// mlInfo is the value of the managed ledger's metadata node.
//
//	byte version, byte flags (bit 0: terminated), uvarint nLedgers,
//	nLedgers × (varint id delta, uvarint entries, uvarint size,
//	            uvarint messages, varint timestamp)
//
// With flags bit 1 (compaction, compaction.go) it is followed by
//
//	varint compactedLedger, position horizon, varint pendingLedger
//
// With flags bit 3 (properties, SetInfoProperties) it is then followed by
//
//	uvarint n, n × (uvarint len, key, uvarint len, value), keys sorted
type mlInfo struct {
	terminated bool
	ledgers    []LedgerInfo
	compaction *Compaction
	props      map[string]string
}

// infoFlagProps marks an info node ending with the properties section.
const infoFlagProps = 8

// maxInfoProps bounds the properties an info node may carry.
const maxInfoProps = 64

func appendInfo(dst []byte, in *mlInfo) []byte {
	var flags byte
	if in.terminated {
		flags |= 1
	}
	nOff := 0
	for _, l := range in.ledgers {
		if l.Offload != nil {
			nOff++
		}
	}
	if nOff > 0 {
		flags |= infoFlagOffload
	}
	if in.compaction != nil {
		flags |= infoFlagCompaction
	}
	if len(in.props) > 0 {
		flags |= infoFlagProps
	}
	dst = append(dst, formatVersion, flags)
	dst = binary.AppendUvarint(dst, uint64(len(in.ledgers)))
	prev := int64(0)
	for _, l := range in.ledgers {
		dst = binary.AppendVarint(dst, l.LedgerID-prev)
		prev = l.LedgerID
		dst = binary.AppendUvarint(dst, uint64(l.Entries))
		dst = binary.AppendUvarint(dst, uint64(l.Size))
		dst = binary.AppendUvarint(dst, uint64(l.Messages))
		dst = binary.AppendVarint(dst, l.Timestamp)
	}
	if nOff > 0 {
		dst = appendOffloadSection(dst, in.ledgers, nOff)
	}
	if c := in.compaction; c != nil {
		dst = binary.AppendVarint(dst, c.Ledger)
		dst = binary.AppendVarint(dst, c.Horizon.LedgerID)
		dst = binary.AppendVarint(dst, c.Horizon.EntryID)
		dst = binary.AppendVarint(dst, c.Pending)
	}
	if len(in.props) > 0 {
		keys := slices.Sorted(maps.Keys(in.props))
		dst = binary.AppendUvarint(dst, uint64(len(keys)))
		for _, k := range keys {
			dst = binary.AppendUvarint(dst, uint64(len(k)))
			dst = append(dst, k...)
			v := in.props[k]
			dst = binary.AppendUvarint(dst, uint64(len(v)))
			dst = append(dst, v...)
		}
	}
	return dst
}

// readInfoString reads a uvarint-length-prefixed string.
func readInfoString(src []byte) ([]byte, string, error) {
	src, n, err := readUvarint(src)
	if err != nil {
		return src, "", err
	}
	if n > uint64(len(src)) {
		return src, "", corruptf("property of %d bytes in %d", n, len(src))
	}
	return src[n:], string(src[:n]), nil
}

func decodeInfo(src []byte) (rest []byte, in *mlInfo, err error) {
	if len(src) < 2 || src[0] != formatVersion {
		return src, nil, corruptf("managed ledger info version")
	}
	flags := src[1]
	in = &mlInfo{terminated: flags&1 != 0}
	src, n, err := readUvarint(src[2:])
	if err != nil {
		return src, nil, err
	}
	if n > uint64(len(src)) {
		return src, nil, corruptf("%d ledgers in %d bytes", n, len(src))
	}
	prev := int64(0)
	for range n {
		var l LedgerInfo
		var d int64
		var e, s, m uint64
		if src, d, err = readVarint(src); err != nil {
			return src, nil, err
		}
		if src, e, err = readUvarint(src); err != nil {
			return src, nil, err
		}
		if src, s, err = readUvarint(src); err != nil {
			return src, nil, err
		}
		if src, m, err = readUvarint(src); err != nil {
			return src, nil, err
		}
		if src, l.Timestamp, err = readVarint(src); err != nil {
			return src, nil, err
		}
		l.LedgerID = prev + d
		if l.LedgerID <= prev && len(in.ledgers) > 0 {
			return src, nil, corruptf("ledger ids out of order")
		}
		prev = l.LedgerID
		l.Entries, l.Size, l.Messages = int64(e), int64(s), int64(m)
		in.ledgers = append(in.ledgers, l)
	}
	if flags&infoFlagOffload != 0 {
		if src, err = decodeOffloadSection(src, in.ledgers); err != nil {
			return src, nil, err
		}
	}
	if flags&infoFlagCompaction != 0 {
		c := &Compaction{}
		for _, f := range []*int64{&c.Ledger, &c.Horizon.LedgerID, &c.Horizon.EntryID, &c.Pending} {
			if src, *f, err = readVarint(src); err != nil {
				return src, nil, err
			}
		}
		in.compaction = c
	}
	if flags&infoFlagProps != 0 {
		var n uint64
		if src, n, err = readUvarint(src); err != nil {
			return src, nil, err
		}
		if n > maxInfoProps {
			return src, nil, corruptf("%d properties", n)
		}
		in.props = make(map[string]string, n)
		for range n {
			var k, v string
			if src, k, err = readInfoString(src); err != nil {
				return src, nil, err
			}
			if src, v, err = readInfoString(src); err != nil {
				return src, nil, err
			}
			in.props[k] = v
		}
	}
	return src, in, nil
}
