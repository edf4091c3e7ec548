package pulsarclient

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// compress encodes payload with codec c (see doc.go for the formats).
func compress(c pb.CompressionType, payload []byte) ([]byte, error) {
	switch c {
	case pb.CompressionType_NONE:
		return payload, nil
	case pb.CompressionType_ZLIB:
		var b bytes.Buffer
		w := zlib.NewWriter(&b)
		w.Write(payload)
		if err := w.Close(); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	case pb.CompressionType_LZ4:
		return lz4Compress(payload), nil
	case pb.CompressionType_ZSTD:
		return zstdStore(payload), nil
	}
	return nil, fmt.Errorf("pulsarclient: compression %s is not supported", c)
}

// decompress decodes payload of codec c whose decoded size is size.
func decompress(c pb.CompressionType, payload []byte, size int) ([]byte, error) {
	var out []byte
	var err error
	switch c {
	case pb.CompressionType_NONE:
		return payload, nil
	case pb.CompressionType_ZLIB:
		var r io.ReadCloser
		if r, err = zlib.NewReader(bytes.NewReader(payload)); err == nil {
			var b bytes.Buffer
			b.Grow(size)
			_, err = io.Copy(&b, io.LimitReader(r, int64(size)+1))
			out = b.Bytes()
		}
	case pb.CompressionType_LZ4:
		out, err = lz4Decompress(payload, size)
	case pb.CompressionType_ZSTD:
		out, err = zstdDecode(payload, size)
	default:
		err = fmt.Errorf("codec %s", c)
	}
	if err == nil && len(out) != size {
		err = fmt.Errorf("%s: %d bytes decoded, metadata says %d", c, len(out), size)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDecompress, err)
	}
	return out, nil
}

// LZ4 block format: sequences of [token][literal length+][literals]
// [offset u16 LE][match length+]; the token's high nibble is the literal
// length, its low nibble the match length minus 4 (15: more bytes follow,
// each added, until one below 255). The last sequence holds literals only;
// the last 5 bytes are literals and the last match starts 12 bytes or more
// before the end.

const (
	lz4MinMatch  = 4
	lz4HashLog   = 14
	lz4LastLits  = 5
	lz4MatchSafe = 12
)

func lz4AppendLen(dst []byte, n int) []byte {
	for n >= 255 {
		dst = append(dst, 255)
		n -= 255
	}
	return append(dst, byte(n))
}

func lz4AppendSeq(dst, lits []byte, offset, matchLen int) []byte {
	tok := byte(0)
	ll := len(lits)
	if ll >= 15 {
		tok = 15 << 4
	} else {
		tok = byte(ll) << 4
	}
	ml := matchLen - lz4MinMatch
	if matchLen > 0 {
		if ml >= 15 {
			tok |= 15
		} else {
			tok |= byte(ml)
		}
	}
	dst = append(dst, tok)
	if ll >= 15 {
		dst = lz4AppendLen(dst, ll-15)
	}
	dst = append(dst, lits...)
	if matchLen == 0 {
		return dst
	}
	dst = binary.LittleEndian.AppendUint16(dst, uint16(offset))
	if ml >= 15 {
		dst = lz4AppendLen(dst, ml-15)
	}
	return dst
}

// lz4Compress is a greedy single-pass LZ4 block compressor.
func lz4Compress(src []byte) []byte {
	n := len(src)
	dst := make([]byte, 0, n+n/255+16)
	var table [1 << lz4HashLog]int32 // position+1 of the last 4 bytes hashing there
	anchor, i := 0, 0
	for i < n-lz4MatchSafe {
		seq := binary.LittleEndian.Uint32(src[i:])
		h := (seq * 2654435761) >> (32 - lz4HashLog)
		ref := int(table[h]) - 1
		table[h] = int32(i + 1)
		if ref < 0 || i-ref > 65535 || binary.LittleEndian.Uint32(src[ref:]) != seq {
			i++
			continue
		}
		ml := lz4MinMatch
		for i+ml < n-lz4LastLits && src[ref+ml] == src[i+ml] {
			ml++
		}
		dst = lz4AppendSeq(dst, src[anchor:i], i-ref, ml)
		i += ml
		anchor = i
	}
	return lz4AppendSeq(dst, src[anchor:], 0, 0)
}

// lz4Decompress decodes an LZ4 block of decoded size size.
func lz4Decompress(src []byte, size int) ([]byte, error) {
	dst := make([]byte, 0, size)
	readLen := func(i int, n int) (int, int, bool) {
		if n != 15 {
			return n, i, true
		}
		for {
			if i >= len(src) {
				return 0, i, false
			}
			b := src[i]
			i++
			n += int(b)
			if n > size+255 {
				return 0, i, false
			}
			if b != 255 {
				return n, i, true
			}
		}
	}
	i := 0
	for i < len(src) {
		tok := src[i]
		i++
		ll, ni, ok := readLen(i, int(tok>>4))
		if !ok || ni+ll > len(src) || len(dst)+ll > size {
			return nil, fmt.Errorf("lz4: bad literal run at %d", i)
		}
		dst = append(dst, src[ni:ni+ll]...)
		i = ni + ll
		if i == len(src) {
			break // the last sequence has no match
		}
		if i+2 > len(src) {
			return nil, fmt.Errorf("lz4: truncated offset at %d", i)
		}
		off := int(binary.LittleEndian.Uint16(src[i:]))
		i += 2
		ml, ni, ok := readLen(i, int(tok&15))
		if !ok {
			return nil, fmt.Errorf("lz4: bad match length at %d", i)
		}
		i = ni
		ml += lz4MinMatch
		if off == 0 || off > len(dst) || len(dst)+ml > size {
			return nil, fmt.Errorf("lz4: bad match (offset %d, length %d) at %d", off, ml, len(dst))
		}
		start := len(dst) - off
		for k := range ml { // overlapping copies repeat the pattern
			dst = append(dst, dst[start+k])
		}
	}
	return dst, nil
}

// Zstandard frames (RFC 8878). The encoder stores the payload in raw
// blocks: a valid frame any decoder reads, without the size reduction. The
// decoder reads frames made of raw and RLE blocks; a compressed block is
// reported as ErrDecompress.

const (
	zstdMagic     = 0xFD2FB528
	zstdMaxBlock  = 128 << 10
	zstdBlockRaw  = 0
	zstdBlockRLE  = 1
	zstdBlockComp = 2
)

func zstdStore(src []byte) []byte {
	dst := make([]byte, 0, len(src)+13+3*(len(src)/zstdMaxBlock+1))
	dst = binary.LittleEndian.AppendUint32(dst, zstdMagic)
	dst = append(dst, 0xA0) // FCS 4 bytes, single segment, no checksum, no dictionary
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(src)))
	for {
		n := min(len(src), zstdMaxBlock)
		last := uint32(0)
		if n == len(src) {
			last = 1
		}
		h := last | zstdBlockRaw<<1 | uint32(n)<<3
		dst = append(dst, byte(h), byte(h>>8), byte(h>>16))
		dst = append(dst, src[:n]...)
		src = src[n:]
		if last == 1 {
			return dst
		}
	}
}

func zstdDecode(src []byte, size int) ([]byte, error) {
	dst := make([]byte, 0, size)
	for len(src) > 0 {
		if len(src) < 5 {
			return nil, fmt.Errorf("zstd: truncated frame header")
		}
		magic := binary.LittleEndian.Uint32(src)
		if magic&0xFFFFFFF0 == 0x184D2A50 { // skippable frame
			if len(src) < 8 {
				return nil, fmt.Errorf("zstd: truncated skippable frame")
			}
			n := int(binary.LittleEndian.Uint32(src[4:]))
			if 8+n > len(src) {
				return nil, fmt.Errorf("zstd: truncated skippable frame")
			}
			src = src[8+n:]
			continue
		}
		if magic != zstdMagic {
			return nil, fmt.Errorf("zstd: bad magic %#x", magic)
		}
		fhd := src[4]
		src = src[5:]
		single := fhd&0x20 != 0
		hdr := 0
		if !single {
			hdr++ // window descriptor
		}
		hdr += [4]int{0, 1, 2, 4}[fhd&3]
		fcs := [4]int{0, 2, 4, 8}[fhd>>6]
		if fhd>>6 == 0 && single {
			fcs = 1
		}
		hdr += fcs
		if len(src) < hdr {
			return nil, fmt.Errorf("zstd: truncated frame header")
		}
		src = src[hdr:]
		for {
			if len(src) < 3 {
				return nil, fmt.Errorf("zstd: truncated block header")
			}
			h := uint32(src[0]) | uint32(src[1])<<8 | uint32(src[2])<<16
			src = src[3:]
			last, typ, n := h&1 == 1, (h>>1)&3, int(h>>3)
			switch typ {
			case zstdBlockRaw:
				if n > len(src) || len(dst)+n > size {
					return nil, fmt.Errorf("zstd: bad raw block of %d bytes", n)
				}
				dst = append(dst, src[:n]...)
				src = src[n:]
			case zstdBlockRLE:
				if len(src) < 1 || len(dst)+n > size {
					return nil, fmt.Errorf("zstd: bad RLE block of %d bytes", n)
				}
				for range n {
					dst = append(dst, src[0])
				}
				src = src[1:]
			case zstdBlockComp:
				return nil, fmt.Errorf("zstd: entropy-coded blocks are not supported by this client")
			default:
				return nil, fmt.Errorf("zstd: reserved block type")
			}
			if last {
				break
			}
		}
		if fhd&4 != 0 {
			if len(src) < 4 {
				return nil, fmt.Errorf("zstd: truncated checksum")
			}
			src = src[4:]
		}
	}
	return dst, nil
}
