package broker

import (
	"bytes"
	"errors"
	"math/rand"
	"testing"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

var codecs = []pb.CompressionType{pb.CompressionType_NONE, pb.CompressionType_LZ4, pb.CompressionType_ZLIB, pb.CompressionType_ZSTD, pb.CompressionType_SNAPPY}

// TestCodecRoundTrip: every codec decompresses what it compressed, for
// empty, tiny, repetitive and incompressible payloads (LZ4's literal-only
// block included).
func TestCodecRoundTrip(t *testing.T) {
	rnd := make([]byte, 70000)
	rand.New(rand.NewSource(1)).Read(rnd)
	inputs := map[string][]byte{
		"empty": {}, "one": {7}, "fourteen": bytes.Repeat([]byte{1}, 14),
		"repeat": bytes.Repeat([]byte("key=value;"), 5000), "random": rnd, "random15": rnd[:15], "random270": rnd[:270],
	}
	for _, c := range codecs {
		for name, in := range inputs {
			z, err := compress(c, in)
			if err != nil {
				t.Fatalf("%s %s: compress: %v", c, name, err)
			}
			out, err := decompress(c, z, uint32(len(in)))
			if err != nil || !bytes.Equal(out, in) {
				t.Fatalf("%s %s: round trip: %v (%d bytes back of %d)", c, name, err, len(out), len(in))
			}
		}
	}
	for _, n := range []int{0, 1, 14, 15, 16, 269, 270, 271, 100000} {
		in := rnd[:min(n, len(rnd))]
		if n > len(rnd) {
			in = append(append([]byte{}, rnd...), rnd[:n-len(rnd)]...)
		}
		out, err := decompress(pb.CompressionType_LZ4, lz4Literals(in), uint32(len(in)))
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("LZ4 literals of %d bytes: %v", n, err)
		}
	}
}

// TestCodecBadInput: a wrong uncompressed size, garbage, an unknown codec
// and a size above the bound are errors (the compactor then keeps the
// entry whole), never a panic or a huge allocation.
func TestCodecBadInput(t *testing.T) {
	in := bytes.Repeat([]byte("abc"), 1000)
	for _, c := range codecs[1:] {
		z, err := compress(c, in)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []uint32{0, uint32(len(in)) - 1, uint32(len(in)) + 1} {
			if _, err := decompress(c, z, n); !errors.Is(err, errCodec) {
				t.Fatalf("%s with size %d: %v, want errCodec", c, n, err)
			}
		}
		if _, err := decompress(c, []byte{0xff, 0xfe, 0xfd, 0x00, 0x13}, 3000); !errors.Is(err, errCodec) {
			t.Fatalf("%s garbage: %v", c, err)
		}
		if _, err := decompress(c, z, 1<<32-1); !errors.Is(err, errCodec) {
			t.Fatalf("%s size MaxUint32: %v", c, err)
		}
	}
	if _, err := decompress(pb.CompressionType(9), in, 3); !errors.Is(err, errCodec) {
		t.Fatalf("unknown codec: %v", err)
	}
	if _, err := compress(pb.CompressionType(-1), in); !errors.Is(err, errCodec) {
		t.Fatalf("unknown codec: %v", err)
	}
}
