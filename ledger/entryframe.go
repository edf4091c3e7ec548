package ledger

import (
	"encoding/binary"

	"github.com/magnetar-mq/magnetar/internal/crc32c"
	"github.com/magnetar-mq/magnetar/protocol/bkproto"
)

// putEntryHeader writes the header of h into frame[:bkproto.EntryHeaderSize]
// for the payload frame[bkproto.EntryHeaderSize:], so that frame holds
// exactly what bkproto.AppendEntry(nil, h, payload) returns: the four
// fields, then the CRC32C of those 32 bytes and the payload.
func putEntryHeader(frame []byte, h bkproto.EntryHeader) {
	hdr := frame[:bkproto.EntryHeaderSize]
	binary.BigEndian.PutUint64(hdr[0:], uint64(h.LedgerID))
	binary.BigEndian.PutUint64(hdr[8:], uint64(h.EntryID))
	binary.BigEndian.PutUint64(hdr[16:], uint64(h.LAC))
	binary.BigEndian.PutUint64(hdr[24:], uint64(h.Length))
	c := crc32c.Update(0, hdr[:32])
	c = crc32c.Update(c, frame[bkproto.EntryHeaderSize:])
	binary.BigEndian.PutUint32(hdr[32:], c)
}
