package entrylog

import (
	"encoding/binary"
	"hash/crc32"
)

// A record's checksum is CRC-32C over its length and ids followed by the
// payload. Callers that already have the CRC-32C of the payload alone (the
// bookie computes it once for the journal and the entry log) get the
// record checksum without a second pass over the payload: for CRCs with
// the usual pre- and post-inversion,
//
//	crc(A ++ B) = crc(A)·x^(8·len(B)) mod P  xor  crc(B)
//
// where the product is in GF(2)[x] modulo the CRC polynomial P. The
// multiplication below works on the bit-reflected representation the
// table-driven CRC uses (bit 31 is the coefficient of x^0).

// castagnoliReflected is the Castagnoli polynomial, bit-reflected.
const castagnoliReflected = 0x82f63b78

// gfMul returns a·b mod P for bit-reflected a and b.
func gfMul(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0 && a != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
			a &^= m
		}
		// b *= x (mod P): in reflected form a right shift, reduced when
		// the x^31 coefficient (bit 0) falls off.
		if b&1 != 0 {
			b = b>>1 ^ castagnoliReflected
		} else {
			b >>= 1
		}
	}
	return p
}

// xPow2 holds x^(2^k) mod P, bit-reflected, for k < 64.
var xPow2 = func() (t [64]uint32) {
	t[0] = 1 << 30 // x^1
	for k := 1; k < len(t); k++ {
		t[k] = gfMul(t[k-1], t[k-1])
	}
	return t
}()

// crcShift returns crc·x^(8n) mod P: the effect on a CRC register of n
// zero bytes, without its pre- and post-inversion.
func crcShift(crc uint32, n int) uint32 {
	e := uint64(n) * 8
	for k := 0; e != 0; k, e = k+1, e>>1 {
		if e&1 != 0 {
			crc = gfMul(crc, xPow2[k])
		}
	}
	return crc
}

// crcCombine returns the CRC-32C of A ++ B from crcA = CRC-32C(A),
// crcB = CRC-32C(B) and n = len(B).
func crcCombine(crcA, crcB uint32, n int) uint32 { return crcShift(crcA, n) ^ crcB }

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
	binary.LittleEndian.PutUint32(h[4:], crcCombine(headerCRC(h), payloadCRC, n))
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
func PayloadCRC(payload []byte) uint32 { return crc32.Update(0, castagnoli, payload) }

// headerCRC is the CRC-32C of a record header's length and ids (bytes
// [0,4) and [8,24)), computed a byte at a time: hash/crc32 would make a
// header on the caller's stack escape to the heap, an allocation per
// record, for 20 bytes.
func headerCRC(h []byte) uint32 {
	c := ^uint32(0)
	for _, b := range h[0:4] {
		c = castagnoli[byte(c)^b] ^ c>>8
	}
	for _, b := range h[8:RecordHeaderSize] {
		c = castagnoli[byte(c)^b] ^ c>>8
	}
	return ^c
}
