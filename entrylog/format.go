package entrylog

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/magnetar-mq/magnetar/internal/crc32c"
)

// Format constants. See doc.go for the layouts.
const (
	// HeaderSize is the size of the fixed file header.
	HeaderSize = 1024
	// Version is the only file format version this package reads and writes.
	Version = 1
	// RecordHeaderSize is the size of a record's length, checksum, ledger id
	// and entry id, which precede its payload.
	RecordHeaderSize = 24
	// MapLedgerID is the ledger id of the records that hold the ledgers map.
	MapLedgerID = -1
	// mapPairsPerRecord bounds one ledgers-map record's payload to 64 KiB.
	mapPairsPerRecord = 4096
	mapPairSize       = 16
	headerCRCOffset   = 24
	// syncedEndOffset is where a log's synced end (uint64) and its own
	// CRC-32C (uint32) are kept in the header, outside the map's CRC.
	syncedEndOffset = 28
	syncedEndSize   = 12
)

// magic opens every entry-log file.
var magic = [4]byte{'M', 'G', 'E', 'L'}

// Header is the decoded fixed header of an entry-log file.
type Header struct {
	Version uint32
	// MapOffset is the offset of the first ledgers-map record, 0 if the log
	// was never sealed (still active, or the bookie crashed).
	MapOffset uint64
	// LedgerCount is the number of (ledger, bytes) pairs in the map.
	LedgerCount uint32
	// MapLength is the total size of the ledgers-map records.
	MapLength uint32
	// SyncedEnd is an offset up to which every record was fsynced, as
	// recorded at the log's last Sync (0: unknown). Records before it
	// are never torn by a crash.
	SyncedEnd uint64
}

// AppendHeader appends the HeaderSize-byte encoding of h to dst.
func AppendHeader(dst []byte, h Header) []byte {
	start := len(dst)
	dst = append(dst, magic[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, h.Version)
	dst = binary.LittleEndian.AppendUint64(dst, h.MapOffset)
	dst = binary.LittleEndian.AppendUint32(dst, h.LedgerCount)
	dst = binary.LittleEndian.AppendUint32(dst, h.MapLength)
	dst = binary.LittleEndian.AppendUint32(dst, crc32c.Checksum(dst[start:start+headerCRCOffset]))
	if h.SyncedEnd != 0 {
		dst = appendSyncedEnd(dst, h.SyncedEnd)
	}
	return append(dst, make([]byte, HeaderSize-(len(dst)-start))...)
}

// appendSyncedEnd appends the syncedEndSize-byte synced-end field.
func appendSyncedEnd(dst []byte, end uint64) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, end)
	return binary.LittleEndian.AppendUint32(dst, crc32c.Checksum(dst[len(dst)-8:]))
}

// decodeSyncedEnd reads the synced-end field of a header; a zero or torn
// field (checksum mismatch) is 0, unknown.
func decodeSyncedEnd(hdr []byte) uint64 {
	f := hdr[syncedEndOffset : syncedEndOffset+syncedEndSize]
	if crc32c.Checksum(f[:8]) != binary.LittleEndian.Uint32(f[8:]) {
		return 0
	}
	return binary.LittleEndian.Uint64(f)
}

// DecodeHeader decodes a file header. A bad magic or an unknown version is
// ErrCorrupt. A header whose checksum does not match (a torn patch at roll
// time) decodes with MapOffset 0 and mapValid false: the map is then
// recomputed by a scan.
func DecodeHeader(src []byte) (rest []byte, h Header, mapValid bool, err error) {
	if len(src) < HeaderSize {
		return src, h, false, fmt.Errorf("short header (%d bytes): %w", len(src), ErrCorrupt)
	}
	if [4]byte(src[:4]) != magic {
		return src, h, false, fmt.Errorf("bad magic %q: %w", src[:4], ErrCorrupt)
	}
	h.Version = binary.LittleEndian.Uint32(src[4:])
	if h.Version != Version {
		return src, h, false, fmt.Errorf("unknown version %d: %w", h.Version, ErrCorrupt)
	}
	h.SyncedEnd = decodeSyncedEnd(src)
	if crc32c.Checksum(src[:headerCRCOffset]) != binary.LittleEndian.Uint32(src[headerCRCOffset:]) {
		return src[HeaderSize:], Header{Version: h.Version, SyncedEnd: h.SyncedEnd}, false, nil
	}
	h.MapOffset = binary.LittleEndian.Uint64(src[8:])
	h.LedgerCount = binary.LittleEndian.Uint32(src[16:])
	h.MapLength = binary.LittleEndian.Uint32(src[20:])
	return src[HeaderSize:], h, h.MapOffset != 0, nil
}

// AppendRecord appends one framed record to dst.
func AppendRecord(dst []byte, ledger, entry int64, payload []byte) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(ledger))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(entry))
	dst = append(dst, payload...)
	binary.LittleEndian.PutUint32(dst[start+4:], recordCRC(dst[start:start+RecordHeaderSize], payload))
	return dst
}

// recordCRC is the checksum over the length, the ids and the payload.
func recordCRC(hdr, payload []byte) uint32 {
	c := crc32c.Update(0, hdr[0:4])
	c = crc32c.Update(c, hdr[8:RecordHeaderSize])
	return crc32c.Update(c, payload)
}

// recordHeader is a decoded record header.
type recordHeader struct {
	n      uint32
	crc    uint32
	ledger int64
	entry  int64
}

func decodeRecordHeader(b []byte) recordHeader {
	return recordHeader{
		n:      binary.LittleEndian.Uint32(b),
		crc:    binary.LittleEndian.Uint32(b[4:]),
		ledger: int64(binary.LittleEndian.Uint64(b[8:])),
		entry:  int64(binary.LittleEndian.Uint64(b[16:])),
	}
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// DecodeRecord decodes one record from src. It returns the remaining bytes,
// the ids and the payload (aliasing src).
func DecodeRecord(src []byte) (rest []byte, ledger, entry int64, payload []byte, err error) {
	if len(src) < RecordHeaderSize {
		return src, 0, 0, nil, fmt.Errorf("short record header: %w", ErrCorrupt)
	}
	h := decodeRecordHeader(src)
	if uint64(h.n) > uint64(len(src)-RecordHeaderSize) {
		return src, 0, 0, nil, fmt.Errorf("record length %d past end: %w", h.n, ErrCorrupt)
	}
	payload = src[RecordHeaderSize : RecordHeaderSize+int(h.n)]
	if recordCRC(src, payload) != h.crc {
		return src, 0, 0, nil, fmt.Errorf("record checksum mismatch: %w", ErrCorrupt)
	}
	if h.ledger < MapLedgerID {
		return src, 0, 0, nil, fmt.Errorf("negative ledger id %d: %w", h.ledger, ErrCorrupt)
	}
	return src[RecordHeaderSize+int(h.n):], h.ledger, h.entry, payload, nil
}

// Pair is one ledgers-map entry: the bytes (record headers included) a
// ledger occupies in a log.
type Pair struct {
	Ledger int64
	Bytes  uint64
}

// AppendLedgersMap appends the ledgers-map records for pairs (sorted by the
// caller for determinism) to dst.
func AppendLedgersMap(dst []byte, pairs []Pair) []byte {
	var payload []byte
	for chunk := int64(0); len(pairs) > 0 || chunk == 0; chunk++ {
		n := min(len(pairs), mapPairsPerRecord)
		payload = payload[:0]
		for _, p := range pairs[:n] {
			payload = binary.LittleEndian.AppendUint64(payload, uint64(p.Ledger))
			payload = binary.LittleEndian.AppendUint64(payload, p.Bytes)
		}
		dst = AppendRecord(dst, MapLedgerID, chunk, payload)
		pairs = pairs[n:]
	}
	return dst
}

// DecodeLedgersMap decodes count pairs from the map records at the start of
// src, sorted by ledger with the bytes of a ledger listed twice summed
// (a sealed log lists each ledger once, in order).
func DecodeLedgersMap(src []byte, count uint32) (rest []byte, pairs []Pair, err error) {
	pairs = make([]Pair, 0, min(int(count), len(src)/mapPairSize)) // a corrupt count allocates no more than src holds
	left := int64(count)
	for chunk := int64(0); left > 0 || chunk == 0; chunk++ {
		var ledger, entry int64
		var payload []byte
		src, ledger, entry, payload, err = DecodeRecord(src)
		if err != nil {
			return src, nil, fmt.Errorf("ledgers map record %d: %w", chunk, err)
		}
		if ledger != MapLedgerID || entry != chunk || len(payload)%mapPairSize != 0 || int64(len(payload)/mapPairSize) > left {
			return src, nil, fmt.Errorf("ledgers map record %d malformed: %w", chunk, ErrCorrupt)
		}
		for ; len(payload) > 0; payload = payload[mapPairSize:] {
			l := int64(binary.LittleEndian.Uint64(payload))
			if l < 0 {
				return src, nil, fmt.Errorf("ledgers map: negative ledger %d: %w", l, ErrCorrupt)
			}
			pairs = append(pairs, Pair{l, binary.LittleEndian.Uint64(payload[8:])})
			left--
		}
	}
	return src, mergePairs(pairs), nil
}

// mergePairs sorts pairs by ledger and sums the bytes of a ledger listed
// more than once, in place.
func mergePairs(pairs []Pair) []Pair {
	if !slices.IsSortedFunc(pairs, comparePairs) {
		slices.SortFunc(pairs, comparePairs)
	}
	out := pairs[:0]
	for _, p := range pairs {
		if n := len(out); n > 0 && out[n-1].Ledger == p.Ledger {
			out[n-1].Bytes += p.Bytes
			continue
		}
		out = append(out, p)
	}
	if len(out) < cap(out) {
		out = slices.Clone(out) // kept for the log's life: no spare capacity
	}
	return out
}

func comparePairs(a, b Pair) int { return cmp.Compare(a.Ledger, b.Ledger) }

// Location packs a log id and an offset into one word.
func Location(logID uint32, offset uint32) uint64 { return uint64(logID)<<32 | uint64(offset) }

// SplitLocation is the inverse of Location.
func SplitLocation(loc uint64) (logID uint32, offset uint32) { return uint32(loc >> 32), uint32(loc) }

// FileName is the base name of log id: eight hex digits and ".log".
func FileName(id uint32) string { return fmt.Sprintf("%08x.log", id) }

// ParseFileName returns the id of a log file name, false for other names.
func ParseFileName(name string) (uint32, bool) {
	hex, ok := strings.CutSuffix(name, ".log")
	if !ok || len(hex) != 8 {
		return 0, false
	}
	id, err := strconv.ParseUint(hex, 16, 32)
	return uint32(id), err == nil
}
