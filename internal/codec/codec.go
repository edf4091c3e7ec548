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

	"github.com/magnetar-mq/magnetar/internal/corrupt"
)

// Type is a codec as numbered in Pulsar's CompressionType enum (so a
// pb.CompressionType converts to it directly).
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

var (
	// ErrUnknown is returned for a codec number Pulsar does not define.
	ErrUnknown = errors.New("codec: unknown compression type")
	// ErrCorrupt is returned for a payload that does not decode, or
	// decodes to another length than the metadata states, or states a
	// length out of [0, MaxSize]. It matches corrupt.Err, the marker the
	// storage packages share.
	ErrCorrupt = corrupt.New("codec: corrupt payload")
)

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

// The zstd coders are safe for concurrent EncodeAll/DecodeAll and costly
// to build, so one of each serves the process. The decoder writes at most
// cap(dst)-len(dst) bytes (Decompress passes the stated size).
var zstdCoders = sync.OnceValues(func() (*zstdPair, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(MaxSize), zstd.WithDecodeAllCapLimit(true))
	if err != nil {
		return nil, err
	}
	return &zstdPair{enc, dec}, nil
})

type zstdPair struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

// lz4Pool and zlibPool keep compressor state (hash tables, deflate
// windows) between calls.
var (
	lz4Pool  = sync.Pool{New: func() any { return new(lz4.Compressor) }}
	zlibPool = sync.Pool{New: func() any { return zlib.NewWriter(nil) }}
)

func corruptf(t Type, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrCorrupt, t, fmt.Sprintf(format, args...))
}

// Decompress returns payload decoded with codec t; size is the
// metadata's uncompressed_size, which the result must match (for None
// the payload is returned as is, without a copy).
func Decompress(t Type, payload []byte, size int) ([]byte, error) {
	if t == None {
		return payload, nil
	}
	if t < None || t > Snappy {
		return nil, fmt.Errorf("%w %d", ErrUnknown, int32(t))
	}
	if size < 0 || size > MaxSize {
		return nil, corruptf(t, "uncompressed size %d out of range [0, %d]", size, MaxSize)
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
			out = make([]byte, 0, size)
			b := bytes.NewBuffer(out)
			_, err = b.ReadFrom(io.LimitReader(zr, int64(size)+1))
			out = b.Bytes()
		}
	case ZSTD:
		var z *zstdPair
		if z, err = zstdCoders(); err != nil {
			return nil, err
		}
		// One byte of room beyond size, so a longer frame shows as
		// longer rather than as a refused write.
		out, err = z.dec.DecodeAll(payload, make([]byte, 0, size+1))
	case Snappy:
		var n int
		if n, err = snappy.DecodedLen(payload); err == nil {
			if n != size {
				return nil, corruptf(t, "block holds %d bytes, metadata says %d", n, size)
			}
			out, err = snappy.Decode(make([]byte, size), payload)
		}
	}
	if err != nil {
		return nil, corruptf(t, "%v", err)
	}
	if len(out) != size {
		return nil, corruptf(t, "decodes to %d bytes or more, metadata says %d", len(out), size)
	}
	return out, nil
}

// Compress encodes payload with codec t in the format Pulsar's clients
// write (doc.go). For None the payload is returned as is.
func Compress(t Type, payload []byte) ([]byte, error) {
	switch t {
	case None:
		return payload, nil
	case LZ4:
		if len(payload) == 0 {
			return literalLZ4(payload), nil
		}
		out := make([]byte, lz4.CompressBlockBound(len(payload)))
		c := lz4Pool.Get().(*lz4.Compressor)
		n, err := c.CompressBlock(payload, out)
		lz4Pool.Put(c)
		if err != nil {
			return nil, fmt.Errorf("codec: LZ4: %w", err)
		}
		if n == 0 { // cannot happen with a CompressBlockBound buffer; stay valid anyway
			return literalLZ4(payload), nil
		}
		return out[:n], nil
	case ZLIB:
		var b bytes.Buffer
		zw := zlibPool.Get().(*zlib.Writer)
		zw.Reset(&b)
		_, err := zw.Write(payload)
		if err == nil {
			err = zw.Close()
		}
		zlibPool.Put(zw)
		if err != nil {
			return nil, fmt.Errorf("codec: ZLIB: %w", err)
		}
		return b.Bytes(), nil
	case ZSTD:
		z, err := zstdCoders()
		if err != nil {
			return nil, err
		}
		return z.enc.EncodeAll(payload, make([]byte, 0, len(payload)/2+64)), nil
	case Snappy:
		return snappy.Encode(nil, payload), nil
	}
	return nil, fmt.Errorf("%w %d", ErrUnknown, int32(t))
}

// literalLZ4 is an LZ4 block of one sequence holding every byte as a
// literal (valid for any input, including empty).
func literalLZ4(p []byte) []byte {
	n := len(p)
	out := make([]byte, 0, n+n/255+2)
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
