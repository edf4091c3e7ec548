package broker

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

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// Payload codecs (docs/compaction.md). The broker stores payloads as the
// producer compressed them; only the compactor opens compressed batches,
// to keep the latest message per key inside them, and compresses the
// rewritten batch with the same codec. The formats are those the Pulsar
// clients use: LZ4 is a raw LZ4 block (no frame), ZLIB the zlib stream
// (RFC 1950), ZSTD a zstd frame, SNAPPY a raw snappy block; the
// uncompressed size is MessageMetadata.uncompressed_size.

// maxUncompressed bounds the buffer a compressed payload may claim: a
// larger uncompressed_size is treated as unreadable (the entry is kept
// whole) rather than allocated.
const maxUncompressed = 256 << 20

var errCodec = errors.New("broker: payload codec")

var zstdCodec struct {
	once sync.Once
	enc  *zstd.Encoder
	dec  *zstd.Decoder
	err  error
}

func zstdCoders() (*zstd.Encoder, *zstd.Decoder, error) {
	z := &zstdCodec
	z.once.Do(func() {
		if z.enc, z.err = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1)); z.err != nil {
			return
		}
		z.dec, z.err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxUncompressed))
	})
	return z.enc, z.dec, z.err
}

// decompress returns the payload compressed with c, of size n.
func decompress(c pb.CompressionType, data []byte, n uint32) ([]byte, error) {
	if n > maxUncompressed {
		return nil, fmt.Errorf("%w: uncompressed size %d above %d", errCodec, n, maxUncompressed)
	}
	var out []byte
	var err error
	switch c {
	case pb.CompressionType_NONE:
		return data, nil
	case pb.CompressionType_LZ4:
		out = make([]byte, n)
		var k int
		if k, err = lz4.UncompressBlock(data, out); err == nil {
			out = out[:k]
		}
	case pb.CompressionType_ZLIB:
		var r io.ReadCloser
		if r, err = zlib.NewReader(bytes.NewReader(data)); err == nil {
			out, err = io.ReadAll(io.LimitReader(r, int64(n)+1))
			r.Close()
		}
	case pb.CompressionType_ZSTD:
		_, dec, zerr := zstdCoders()
		if zerr != nil {
			return nil, zerr
		}
		out, err = dec.DecodeAll(data, make([]byte, 0, n))
	case pb.CompressionType_SNAPPY:
		var dn int
		if dn, err = snappy.DecodedLen(data); err == nil && dn > int(n) {
			err = fmt.Errorf("snappy block of %d bytes", dn)
		}
		if err == nil {
			out, err = snappy.Decode(make([]byte, n), data)
		}
	default:
		return nil, fmt.Errorf("%w: unknown compression %d", errCodec, c)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errCodec, c, err)
	}
	if len(out) != int(n) {
		return nil, fmt.Errorf("%w: %s: %d bytes uncompressed, metadata says %d", errCodec, c, len(out), n)
	}
	return out, nil
}

// compress compresses data with c.
func compress(c pb.CompressionType, data []byte) ([]byte, error) {
	switch c {
	case pb.CompressionType_NONE:
		return data, nil
	case pb.CompressionType_LZ4:
		out := make([]byte, lz4.CompressBlockBound(len(data)))
		k, err := lz4.CompressBlock(data, out, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: LZ4: %w", errCodec, err)
		}
		if k == 0 && len(data) > 0 {
			// Incompressible: an LZ4 block of literals only.
			return lz4Literals(data), nil
		}
		return out[:k], nil
	case pb.CompressionType_ZLIB:
		var b bytes.Buffer
		w := zlib.NewWriter(&b)
		if _, err := w.Write(data); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	case pb.CompressionType_ZSTD:
		enc, _, err := zstdCoders()
		if err != nil {
			return nil, err
		}
		return enc.EncodeAll(data, nil), nil
	case pb.CompressionType_SNAPPY:
		return snappy.Encode(nil, data), nil
	}
	return nil, fmt.Errorf("%w: unknown compression %d", errCodec, c)
}

// lz4Literals encodes data as one LZ4 sequence of literals (a valid block
// for data the compressor would not shrink).
func lz4Literals(data []byte) []byte {
	n := len(data)
	out := make([]byte, 0, n+n/255+16)
	if n < 15 {
		out = append(out, byte(n<<4))
	} else {
		out = append(out, 0xf0)
		rest := n - 15
		for rest >= 255 {
			out = append(out, 255)
			rest -= 255
		}
		out = append(out, byte(rest))
	}
	return append(out, data...)
}
