package pulsarclient

import (
	"bytes"
	"errors"
	"testing"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestCodecRoundTrip: every codec round-trips sizes around the LZ4 block
// limits (12-byte match safety, 5 literal bytes, 15/255 length
// extensions, the 64 KiB offset window) and the zstd 128 KiB raw block
// size.
func TestCodecRoundTrip(t *testing.T) {
	var inputs [][]byte
	for _, n := range []int{0, 1, 4, 5, 12, 13, 14, 15, 16, 19, 20, 255, 256, 270, 65535, 65536, 65537, 128 << 10, 128<<10 + 1, 300000} {
		inputs = append(inputs, bytes.Repeat([]byte{'a'}, n), randomBytes(n))
		mixed := randomBytes(n)
		for i := 0; i+40 < n; i += 100 {
			copy(mixed[i+20:i+40], mixed[i:i+20]) // short matches
		}
		inputs = append(inputs, mixed)
	}
	for _, c := range []pb.CompressionType{pb.CompressionType_NONE, pb.CompressionType_LZ4, pb.CompressionType_ZLIB, pb.CompressionType_ZSTD} {
		for i, in := range inputs {
			enc, err := compress(c, in)
			if err != nil {
				t.Fatalf("%s input %d: %v", c, i, err)
			}
			dec, err := decompress(c, enc, len(in))
			if err != nil || !bytes.Equal(dec, in) {
				t.Fatalf("%s input %d (%d bytes): %v, equal %v", c, i, len(in), err, bytes.Equal(dec, in))
			}
		}
	}
	if enc := lz4Compress(bytes.Repeat([]byte("abcd"), 10000)); len(enc) > 400 {
		t.Errorf("lz4 of a repeated pattern: %d bytes", len(enc))
	}
}

// TestCodecBadInput: corrupt or truncated input and a wrong size are
// errors (ErrDecompress), never a panic or a silent short result.
func TestCodecBadInput(t *testing.T) {
	good := bytes.Repeat([]byte("pulsar magnetar "), 500)
	for _, c := range []pb.CompressionType{pb.CompressionType_LZ4, pb.CompressionType_ZLIB, pb.CompressionType_ZSTD} {
		enc, _ := compress(c, good)
		cases := map[string][]byte{"empty": {}, "truncated": enc[:len(enc)/2], "garbage": randomBytes(len(enc))}
		flipped := append([]byte(nil), enc...)
		for i := 0; i < len(flipped); i += 7 {
			flipped[i] ^= 0x5a
		}
		cases["flipped"] = flipped
		for name, in := range cases {
			if _, err := decompress(c, in, len(good)); !errors.Is(err, ErrDecompress) {
				t.Errorf("%s %s: %v", c, name, err)
			}
		}
		if _, err := decompress(c, enc, len(good)+1); !errors.Is(err, ErrDecompress) {
			t.Errorf("%s with a wrong size: %v", c, err)
		}
	}
	// Random bytes as LZ4 never panic, whatever size is claimed.
	for i := range 2000 {
		in := randomBytes(i % 97)
		for j := range in {
			in[j] ^= byte(i * 31)
		}
		lz4Decompress(in, i%300)
		zstdDecode(in, i%300)
	}
	if _, err := decompress(pb.CompressionType_SNAPPY, []byte{1}, 1); !errors.Is(err, ErrDecompress) {
		t.Errorf("snappy: %v", err)
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
