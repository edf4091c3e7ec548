package journal

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/magnetar-mq/magnetar/internal/crc32c"
)

// RecordType says what a record means to the bookie.
type RecordType uint8

const (
	// Entry is a ledger entry: Payload holds the entry body.
	Entry RecordType = 1
	// MasterKey records a ledger's master key (Payload).
	MasterKey RecordType = 2
	// Fence records that a ledger was fenced. Payload is usually empty.
	Fence RecordType = 3
	// ExplicitLAC records an explicit last-add-confirmed (Payload).
	ExplicitLAC RecordType = 4

	// typeMark is internal: a payload-less record written alone as the last
	// group on Close. Being a later group, it proves every record before it
	// was synced (see doc.go, "Torn tails"). Replay does not surface it.
	typeMark RecordType = 5
)

// String returns the name of t.
func (t RecordType) String() string {
	switch t {
	case Entry:
		return "entry"
	case MasterKey:
		return "master-key"
	case Fence:
		return "fence"
	case ExplicitLAC:
		return "explicit-lac"
	case typeMark:
		return "mark"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

func (t RecordType) valid() bool { return t >= Entry && t <= typeMark }

// Record is one journal record. The journal copies Payload during Append;
// in Replay, Payload aliases a read buffer that is only valid during the
// callback.
type Record struct {
	Type     RecordType
	LedgerID int64
	EntryID  int64
	Payload  []byte
	// Appended, when not nil, receives the Nanotime at which Append put
	// the record into its group (stage tracing; see CompletingGroup). It
	// is written before the group can be written, so the record's
	// completion may read it. Not part of the record's bytes.
	Appended *int64
}

// Position is a place in the journal: a file id and a byte offset in it.
// Positions handed out by Append and Replay point just past their record,
// so replaying from one yields exactly the records after it, and
// Checkpoint(pos) declares everything up to and including that record
// persisted elsewhere.
type Position struct {
	FileID uint64
	Offset int64
}

// Less reports whether p is before q.
func (p Position) Less(q Position) bool {
	if p.FileID != q.FileID {
		return p.FileID < q.FileID
	}
	return p.Offset < q.Offset
}

func (p Position) String() string { return fmt.Sprintf("%x:%d", p.FileID, p.Offset) }

// Format constants; doc.go draws the layouts.
const (
	// FormatVersion is the only on-disk format this package reads and writes.
	FormatVersion = 1
	// FileHeaderSize is the size of the header at the start of every file.
	FileHeaderSize = 32
	// RecordHeaderSize is the fixed part of every record.
	RecordHeaderSize = 40
	// MaxPayloadSize is the largest payload one record may carry.
	MaxPayloadSize = 64 << 20

	fileMagic = "MGJL"
)

// fileHeader is the decoded file header.
type fileHeader struct {
	FileID  uint64
	BaseSeq uint64 // sequence number of the first record in the file
}

// appendFileHeader appends the encoded header h to dst.
func appendFileHeader(dst []byte, h fileHeader) []byte {
	var b [FileHeaderSize]byte
	copy(b[0:4], fileMagic)
	binary.LittleEndian.PutUint32(b[4:8], FormatVersion)
	binary.LittleEndian.PutUint64(b[8:16], h.FileID)
	binary.LittleEndian.PutUint64(b[16:24], h.BaseSeq)
	// b[24:28] reserved, zero.
	binary.LittleEndian.PutUint32(b[28:32], crc32c.Checksum(b[:28]))
	return append(dst, b[:]...)
}

// decodeFileHeader decodes the header at the start of src.
func decodeFileHeader(src []byte) (rest []byte, h fileHeader, err error) {
	if len(src) < FileHeaderSize {
		return src, h, fmt.Errorf("short file header (%d bytes): %w", len(src), ErrCorrupt)
	}
	b := src[:FileHeaderSize]
	if string(b[0:4]) != fileMagic {
		return src, h, fmt.Errorf("bad magic %q: %w", b[0:4], ErrCorrupt)
	}
	if got, want := binary.LittleEndian.Uint32(b[28:32]), crc32c.Checksum(b[:28]); got != want {
		return src, h, fmt.Errorf("file header checksum %08x, want %08x: %w", got, want, ErrCorrupt)
	}
	if v := binary.LittleEndian.Uint32(b[4:8]); v != FormatVersion {
		return src, h, fmt.Errorf("format version %d, want %d: %w", v, FormatVersion, ErrCorrupt)
	}
	if binary.LittleEndian.Uint32(b[24:28]) != 0 {
		return src, h, fmt.Errorf("reserved header bytes set: %w", ErrCorrupt)
	}
	h.FileID = binary.LittleEndian.Uint64(b[8:16])
	h.BaseSeq = binary.LittleEndian.Uint64(b[16:24])
	return src[FileHeaderSize:], h, nil
}

// recordHeader is the decoded fixed part of a record.
type recordHeader struct {
	CRC    uint32
	Length uint32 // payload length
	Seq    uint64
	// GroupLag is Seq minus the sequence number of the first record of the
	// group (one write+sync) this record was written in.
	GroupLag uint32
	Type     RecordType
	LedgerID int64
	EntryID  int64
}

// groupFirst is the sequence number of the first record of h's group.
func (h *recordHeader) groupFirst() uint64 { return h.Seq - uint64(h.GroupLag) }

// payloadCRC starts a record checksum: CRC-32C over the payload. The
// journal computes it outside its lock; finishRecord folds in the header.
func payloadCRC(payload []byte) uint32 { return crc32c.Update(0, payload) }

// appendRecord appends the record (header + payload) to dst. pcrc must be
// payloadCRC(rec.Payload). The caller guarantees len(rec.Payload) <=
// MaxPayloadSize and a valid type.
func appendRecord(dst []byte, seq uint64, groupLag uint32, rec *Record, pcrc uint32) []byte {
	n := len(dst)
	dst = append(dst, make([]byte, RecordHeaderSize)...)
	putRecordHeader(dst[n:n+RecordHeaderSize], seq, groupLag, rec, pcrc)
	return append(dst, rec.Payload...)
}

// putRecordHeader encodes rec's header, checksum included, into
// h[:RecordHeaderSize].
func putRecordHeader(h []byte, seq uint64, groupLag uint32, rec *Record, pcrc uint32) {
	h = h[:RecordHeaderSize]
	binary.LittleEndian.PutUint32(h[4:8], uint32(len(rec.Payload)))
	binary.LittleEndian.PutUint64(h[8:16], seq)
	binary.LittleEndian.PutUint32(h[16:20], groupLag)
	h[20] = byte(rec.Type)
	h[21], h[22], h[23] = 0, 0, 0
	binary.LittleEndian.PutUint64(h[24:32], uint64(rec.LedgerID))
	binary.LittleEndian.PutUint64(h[32:40], uint64(rec.EntryID))
	binary.LittleEndian.PutUint32(h[0:4], crc32c.Update(pcrc, h[4:RecordHeaderSize]))
}

// AppendRecord appends one encoded record to dst. It is the codec used by
// the journal writer, exported for tools and tests.
func AppendRecord(dst []byte, seq uint64, groupLag uint32, rec Record) []byte {
	return appendRecord(dst, seq, groupLag, &rec, payloadCRC(rec.Payload))
}

// Decode errors of decodeRecordHeader/decodeRecord. They describe why a
// record is invalid; the scanner decides whether that is a tail or
// corruption.
var (
	errShort    = errors.New("short record")
	errZero     = errors.New("zero record header")
	errBadType  = errors.New("bad record type")
	errReserved = errors.New("reserved record bytes set")
	errTooLarge = errors.New("record length too large")
	errChecksum = errors.New("record checksum mismatch")
)

// decodeRecordHeader decodes and sanity-checks the fixed part of a record
// (no checksum check).
func decodeRecordHeader(src []byte) (h recordHeader, err error) {
	if len(src) < RecordHeaderSize {
		if allZero(src) {
			return h, errZero
		}
		return h, errShort
	}
	b := src[:RecordHeaderSize]
	h.Type = RecordType(b[20])
	if !h.Type.valid() {
		if allZero(b) {
			return h, errZero
		}
		return h, errBadType
	}
	if b[21]|b[22]|b[23] != 0 {
		return h, errReserved
	}
	h.CRC = binary.LittleEndian.Uint32(b[0:4])
	h.Length = binary.LittleEndian.Uint32(b[4:8])
	h.Seq = binary.LittleEndian.Uint64(b[8:16])
	h.GroupLag = binary.LittleEndian.Uint32(b[16:20])
	h.LedgerID = int64(binary.LittleEndian.Uint64(b[24:32]))
	h.EntryID = int64(binary.LittleEndian.Uint64(b[32:40]))
	if h.Length > MaxPayloadSize {
		return h, errTooLarge
	}
	if uint64(h.GroupLag) > h.Seq {
		return h, errReserved
	}
	return h, nil
}

// decodeRecord decodes one record at the start of src and verifies its
// checksum. rec.Payload aliases src.
func decodeRecord(src []byte) (rest []byte, h recordHeader, rec Record, err error) {
	h, err = decodeRecordHeader(src)
	if err != nil {
		return src, h, rec, err
	}
	end := RecordHeaderSize + int(h.Length)
	if len(src) < end {
		return src, h, rec, errShort
	}
	payload := src[RecordHeaderSize:end]
	crc := crc32c.Update(payloadCRC(payload), src[4:RecordHeaderSize])
	if crc != h.CRC {
		return src, h, rec, errChecksum
	}
	rec = Record{Type: h.Type, LedgerID: h.LedgerID, EntryID: h.EntryID, Payload: payload}
	return src[end:], h, rec, nil
}

// DecodeRecord decodes one record at the start of src, verifying its
// checksum. It returns the sequence number and group lag too. Errors wrap
// ErrCorrupt.
func DecodeRecord(src []byte) (rest []byte, seq uint64, groupLag uint32, rec Record, err error) {
	rest, h, rec, err := decodeRecord(src)
	if err != nil {
		return rest, 0, 0, rec, fmt.Errorf("%v: %w", err, ErrCorrupt)
	}
	return rest, h.Seq, h.GroupLag, rec, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
