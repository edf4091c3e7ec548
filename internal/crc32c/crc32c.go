// Package crc32c is the project's one CRC-32C (Castagnoli) table and the
// operations on it that the storage formats and wire protocols use:
// Checksum, Update, and Combine (the CRC of a concatenation from the
// CRCs of its parts, without reading the data again).
//
// CRC-32C is CRC-32 with the Castagnoli polynomial 0x1EDC6F41
// (bit-reflected 0x82F63B78), pre- and post-inverted, as in RFC 3720 and
// hash/crc32. Pulsar's frame checksum, BookKeeper's entry digest, and
// Magnetar's journal, entry-log and index records all use it (see
// docs/storage-format.md and docs/protocol.md).
package crc32c

import "hash/crc32"

// Table is the CRC-32C table (hash/crc32's, with its hardware paths).
var Table = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC-32C of b.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, Table) }

// Update returns the CRC-32C of the data whose CRC-32C is crc followed by
// b.
func Update(crc uint32, b []byte) uint32 { return crc32.Update(crc, Table, b) }

// For CRCs with the usual pre- and post-inversion,
//
//	crc(A ++ B) = crc(A)·x^(8·len(B)) mod P  xor  crc(B)
//
// where the product is in GF(2)[x] modulo the CRC polynomial P. The
// multiplication below works on the bit-reflected representation the
// table-driven CRC uses (bit 31 is the coefficient of x^0).

// reflected is the Castagnoli polynomial, bit-reflected.
const reflected = 0x82f63b78

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
			b = b>>1 ^ reflected
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

// shift returns crc·x^(8n) mod P: the effect on a CRC register of n zero
// bytes, without its pre- and post-inversion.
func shift(crc uint32, n int) uint32 {
	e := uint64(n) * 8
	for k := 0; e != 0; k, e = k+1, e>>1 {
		if e&1 != 0 {
			crc = gfMul(crc, xPow2[k])
		}
	}
	return crc
}

// Combine returns the CRC-32C of A ++ B from crcA = Checksum(A),
// crcB = Checksum(B) and n = len(B).
func Combine(crcA, crcB uint32, n int) uint32 { return shift(crcA, n) ^ crcB }
