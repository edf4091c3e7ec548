package bkproto

import (
	"encoding/binary"
	"fmt"

	"github.com/magnetar-mq/magnetar/internal/crc32c"
)

// EntryHeaderSize is the size of the entry header written by AppendEntry:
// ledgerId, entryId, LAC, totalLength (8 bytes each) and a CRC32C (4).
const EntryHeaderSize = 36

// EntryHeader is the header the ledger client puts in front of each entry's
// payload.
type EntryHeader struct {
	LedgerID int64
	EntryID  int64
	// LAC is the writer's last-add-confirmed when it sent the entry
	// (piggybacked LAC).
	LAC int64
	// Length is the ledger's cumulative byte length including this entry.
	Length int64
}

// AppendEntry appends the framed entry ledgerId|entryId|LAC|totalLength|
// crc32c|payload to dst. The CRC32C covers the first 32 header bytes and
// the payload.
func AppendEntry(dst []byte, h EntryHeader, payload []byte) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.LedgerID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.EntryID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.LAC))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.Length))
	c := crc32c.Update(0, dst[start:])
	c = crc32c.Update(c, payload)
	dst = binary.BigEndian.AppendUint32(dst, c)
	return append(dst, payload...)
}

// DecodeEntryHeader returns the header of a framed entry without checking
// the digest.
func DecodeEntryHeader(src []byte) (EntryHeader, error) {
	if len(src) < EntryHeaderSize {
		return EntryHeader{}, fmt.Errorf("%w: entry of %d bytes", ErrCorrupt, len(src))
	}
	return EntryHeader{
		LedgerID: int64(binary.BigEndian.Uint64(src)),
		EntryID:  int64(binary.BigEndian.Uint64(src[8:])),
		LAC:      int64(binary.BigEndian.Uint64(src[16:])),
		Length:   int64(binary.BigEndian.Uint64(src[24:])),
	}, nil
}

// DecodeEntry verifies the digest of a framed entry and returns its header
// and payload (aliasing src). A mismatch gives ErrCorrupt.
func DecodeEntry(src []byte) (EntryHeader, []byte, error) {
	h, err := DecodeEntryHeader(src)
	if err != nil {
		return h, nil, err
	}
	payload := src[EntryHeaderSize:]
	c := crc32c.Update(0, src[:32])
	c = crc32c.Update(c, payload)
	if want := binary.BigEndian.Uint32(src[32:]); c != want {
		return h, nil, fmt.Errorf("%w: entry %d/%d digest %08x, want %08x", ErrCorrupt, h.LedgerID, h.EntryID, c, want)
	}
	return h, payload, nil
}
