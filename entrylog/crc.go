package entrylog

import (
	"encoding/binary"

	"github.com/magnetar-mq/magnetar/internal/crc32c"
)

// A record's checksum is CRC-32C over its length and ids followed by the
// payload. Callers that already have the CRC-32C of the payload alone (the
// bookie computes it once for the journal and the entry log) get the
// record checksum without a second pass over the payload, with
// crc32c.Combine.

// FoldMin is the payload size from which PutRecordHeader (folding a
// payload CRC computed anyway into the record checksum: a few hundred word
// operations) is cheaper than SetRecordCRC's pass over the payload.
const FoldMin = 2048

// PutRecordHeader encodes the RecordHeaderSize-byte header of a record
// holding (ledger, entry) and a payload of n bytes whose CRC-32C
// (PayloadCRC) is payloadCRC, into dst[:RecordHeaderSize], without reading
// the payload. The bytes are those AppendRecord writes.
func PutRecordHeader(dst []byte, ledger, entry int64, n int, payloadCRC uint32) {
	h := dst[:RecordHeaderSize]
	PutRecordFields(h, ledger, entry, n)
	binary.LittleEndian.PutUint32(h[4:], crc32c.Combine(headerCRC(h), payloadCRC, n))
}

// PutRecordFields encodes a record header's length and ids into
// dst[:RecordHeaderSize], leaving the checksum to SetRecordCRC.
func PutRecordFields(dst []byte, ledger, entry int64, n int) {
	h := dst[:RecordHeaderSize]
	binary.LittleEndian.PutUint32(h[0:], uint32(n))
	binary.LittleEndian.PutUint32(h[4:], 0)
	binary.LittleEndian.PutUint64(h[8:], uint64(ledger))
	binary.LittleEndian.PutUint64(h[16:], uint64(entry))
}

// SetRecordCRC computes the checksum of rec, a record (header, then
// payload) whose length and ids are encoded, and stores it in the header.
func SetRecordCRC(rec []byte) {
	binary.LittleEndian.PutUint32(rec[4:], recordCRC(rec, rec[RecordHeaderSize:]))
}

// PayloadCRC is the CRC-32C (Castagnoli) of payload, what PutRecordHeader
// takes (and what the journal's record checksum starts from).
func PayloadCRC(payload []byte) uint32 { return crc32c.Update(0, payload) }

// headerCRC is the CRC-32C of a record header's length and ids (bytes
// [0,4) and [8,24)), computed a byte at a time: hash/crc32 would make a
// header on the caller's stack escape to the heap, an allocation per
// record, for 20 bytes.
func headerCRC(h []byte) uint32 {
	c := ^uint32(0)
	for _, b := range h[0:4] {
		c = crc32c.Table[byte(c)^b] ^ c>>8
	}
	for _, b := range h[8:RecordHeaderSize] {
		c = crc32c.Table[byte(c)^b] ^ c>>8
	}
	return ^c
}
