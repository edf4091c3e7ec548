package codec

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestRoundTripEveryCodec(t *testing.T) {
	inputs := [][]byte{
		{},
		[]byte("x"),
		[]byte(strings.Repeat("magnetar ", 5000)),
		bytes.Repeat([]byte{0, 1, 2, 3, 250, 251}, 3),
	}
	for _, c := range []Type{None, LZ4, ZLIB, ZSTD, Snappy} {
		for _, in := range inputs {
			z, err := Compress(c, in)
			if err != nil {
				t.Fatalf("%s compress %d bytes: %v", c, len(in), err)
			}
			out, err := Decompress(c, z, len(in))
			if err != nil {
				t.Fatalf("%s decompress %d bytes: %v", c, len(in), err)
			}
			if !bytes.Equal(out, in) {
				t.Fatalf("%s round trip of %d bytes gave %d bytes", c, len(in), len(out))
			}
		}
	}
}

func TestRefusesWrongSizeAndGarbage(t *testing.T) {
	in := []byte(strings.Repeat("abc", 100))
	for _, c := range []Type{LZ4, ZLIB, ZSTD, Snappy} {
		z, _ := Compress(c, in)
		if _, err := Decompress(c, z, len(in)-1); err == nil {
			t.Errorf("%s: a size one short was accepted", c)
		}
		if _, err := Decompress(c, z, len(in)+1); err == nil {
			t.Errorf("%s: a size one long was accepted", c)
		}
		if _, err := Decompress(c, []byte{0xff, 0xfe, 0xfd, 0xfc, 0xfb}, len(in)); err == nil {
			t.Errorf("%s: garbage was accepted", c)
		}
		if _, err := Decompress(c, z, MaxSize+1); err == nil {
			t.Errorf("%s: size above MaxSize was accepted", c)
		}
		if _, err := Decompress(c, z, -1); err == nil {
			t.Errorf("%s: negative size was accepted", c)
		}
	}
	if _, err := Decompress(Type(5), nil, 0); !errors.Is(err, ErrUnknown) {
		t.Errorf("codec 5: %v, want ErrUnknown", err)
	}
}

func TestLiteralLZ4Lengths(t *testing.T) {
	for _, n := range []int{0, 14, 15, 16, 269, 270, 271, 1000} {
		in := bytes.Repeat([]byte{7}, n)
		out, err := Decompress(LZ4, literalLZ4(in), n)
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("literal block of %d: %v", n, err)
		}
	}
}
