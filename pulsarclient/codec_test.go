package pulsarclient

import (
	"bytes"
	"errors"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/codec"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestDecompressErrorsAreErrDecompress: the consumer's decompress (on
// internal/codec) reports a corrupt payload, a wrong size and an
// unknown codec as ErrDecompress, and decodes every codec Pulsar
// defines.
func TestDecompressErrorsAreErrDecompress(t *testing.T) {
	good := bytes.Repeat([]byte("pulsar magnetar "), 500)
	for _, c := range []pb.CompressionType{pb.CompressionType_LZ4, pb.CompressionType_ZLIB, pb.CompressionType_ZSTD, pb.CompressionType_SNAPPY} {
		enc, err := codec.Compress(codec.Type(c), good)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := decompress(c, enc, len(good)); err != nil || !bytes.Equal(out, good) {
			t.Fatalf("%s: %v", c, err)
		}
		if _, err := decompress(c, enc[:len(enc)/2], len(good)); !errors.Is(err, ErrDecompress) {
			t.Errorf("%s truncated: %v", c, err)
		}
		if _, err := decompress(c, enc, len(good)+1); !errors.Is(err, ErrDecompress) {
			t.Errorf("%s with a wrong size: %v", c, err)
		}
	}
	if _, err := decompress(pb.CompressionType(7), []byte{1}, 1); !errors.Is(err, ErrDecompress) {
		t.Errorf("unknown codec: %v", err)
	}
}

// randomBytes is n deterministic pseudo-random bytes (xorshift).
func randomBytes(n int) []byte {
	b := make([]byte, n)
	x := uint64(88172645463325252)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}
