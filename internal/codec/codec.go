package codec

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Type is a codec as numbered in Pulsar's CompressionType enum.
type Type int32

// The codecs of PulsarApi.proto's CompressionType.
const (
	None   Type = 0
	LZ4    Type = 1
	ZLIB   Type = 2
	ZSTD   Type = 3
	Snappy Type = 4
)

// MaxSize bounds a decompressed payload: Pulsar's largest frame
// (maxMessageSize is at most a few MB; 128 MiB leaves room for batches).
const MaxSize = 128 << 20

// ErrUnknown is returned for a codec number Pulsar does not define.
var ErrUnknown = errors.New("codec: unknown compression type")

// String is the codec's name as Pulsar spells it.
func (t Type) String() string {
	switch t {
	case None:
		return "NONE"
	case LZ4:
		return "LZ4"
	case ZLIB:
		return "ZLIB"
	case ZSTD:
		return "ZSTD"
	case Snappy:
		return "SNAPPY"
	}
	return fmt.Sprintf("CompressionType(%d)", int32(t))
}

var zstdDec = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(MaxSize))
})

// Decompress returns payload decoded with codec t; size is the
// metadata's uncompressed_size, which the result must match (for None
// the payload is returned as is).
func Decompress(t Type, payload []byte, size int) ([]byte, error) {
	if t == None {
		return payload, nil
	}
	if size < 0 || size > MaxSize {
		return nil, fmt.Errorf("codec: uncompressed size %d out of range [0, %d]", size, MaxSize)
	}
	var out []byte
	var err error
	switch t {
	case LZ4:
		out = make([]byte, size)
		var n int
		if n, err = lz4.UncompressBlock(payload, out); err == nil {
			out = out[:n]
		}
	case ZLIB:
		var zr io.ReadCloser
		if zr, err = zlib.NewReader(bytes.NewReader(payload)); err == nil {
			out, err = io.ReadAll(io.LimitReader(zr, int64(size)+1))
		}
	case ZSTD:
		var d *zstd.Decoder
		if d, err = zstdDec(); err == nil {
			out, err = d.DecodeAll(payload, make([]byte, 0, size))
		}
	case Snappy:
		var n int
		if n, err = snappy.DecodedLen(payload); err == nil {
			if n != size {
				return nil, fmt.Errorf("codec: SNAPPY block holds %d bytes, metadata says %d", n, size)
			}
			out, err = snappy.Decode(nil, payload)
		}
	default:
		return nil, fmt.Errorf("%w %d", ErrUnknown, int32(t))
	}
	if err != nil {
		return nil, fmt.Errorf("codec: %s: %w", t, err)
	}
	if len(out) != size {
		return nil, fmt.Errorf("codec: %s payload decodes to %d bytes, metadata says %d", t, len(out), size)
	}
	return out, nil
}

// Compress encodes payload with codec t in the format Pulsar's clients
// write (tests, tools and the perf tool's raw mode use it).
func Compress(t Type, payload []byte) ([]byte, error) {
	switch t {
	case None:
		return payload, nil
	case LZ4:
		out := make([]byte, lz4.CompressBlockBound(len(payload)))
		var c lz4.Compressor
		n, err := c.CompressBlock(payload, out)
		if err != nil {
			return nil, err
		}
		if n == 0 { // incompressible: LZ4 has no literal-only shortcut, store as literals
			return literalLZ4(payload), nil
		}
		return out[:n], nil
	case ZLIB:
		var b bytes.Buffer
		zw := zlib.NewWriter(&b)
		if _, err := zw.Write(payload); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	case ZSTD:
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		defer enc.Close()
		return enc.EncodeAll(payload, nil), nil
	case Snappy:
		return snappy.Encode(nil, payload), nil
	}
	return nil, fmt.Errorf("%w %d", ErrUnknown, int32(t))
}

// literalLZ4 is an LZ4 block of one sequence holding every byte as a
// literal (valid for any input, including empty).
func literalLZ4(p []byte) []byte {
	n := len(p)
	var out []byte
	if n < 15 {
		out = append(out, byte(n<<4))
	} else {
		out = append(out, 0xF0)
		for r := n - 15; ; r -= 255 {
			if r < 255 {
				out = append(out, byte(r))
				break
			}
			out = append(out, 255)
		}
	}
	return append(out, p...)
}
