package codec

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/corrupt"
)

var every = []Type{None, LZ4, ZLIB, ZSTD, Snappy}

// inputs are payloads around the codecs' edges: LZ4's 12-byte match
// safety, 5 trailing literals, 15/255 length extensions and 64 KiB
// offset window; zstd's 128 KiB block size; empty and one byte. Each
// size comes repetitive, random and random with short matches.
func inputs() [][]byte {
	rnd := rand.New(rand.NewSource(1))
	var out [][]byte
	for _, n := range []int{0, 1, 4, 5, 12, 13, 14, 15, 16, 19, 20, 255, 256, 269, 270, 271, 65535, 65536, 65537, 128 << 10, 128<<10 + 1, 300000} {
		random := make([]byte, n)
		rnd.Read(random)
		mixed := bytes.Clone(random)
		for i := 0; i+40 < n; i += 100 {
			copy(mixed[i+20:i+40], mixed[i:i+20])
		}
		out = append(out, bytes.Repeat([]byte{'a'}, n), random, mixed)
	}
	return out
}

// TestRoundTripEveryCodec: every codec decodes what it encoded, at every
// edge size, and the compressing codecs shrink a repetitive payload.
func TestRoundTripEveryCodec(t *testing.T) {
	ins := inputs()
	for _, c := range every {
		for i, in := range ins {
			z, err := Compress(c, in)
			if err != nil {
				t.Fatalf("%s compress input %d (%d bytes): %v", c, i, len(in), err)
			}
			out, err := Decompress(c, z, len(in))
			if err != nil || !bytes.Equal(out, in) {
				t.Fatalf("%s round trip of input %d (%d bytes): %v, equal %v", c, i, len(in), err, bytes.Equal(out, in))
			}
		}
		if c == None {
			continue
		}
		rep := bytes.Repeat([]byte("abcd"), 10000)
		if z, _ := Compress(c, rep); len(z) > len(rep)/10 {
			t.Errorf("%s of a repeated 4-byte pattern: %d bytes of %d", c, len(z), len(rep))
		}
	}
}

// TestConcurrentUse: the shared zstd coders and pooled compressors are
// safe under concurrent calls (run with -race).
func TestConcurrentUse(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := []byte(fmt.Sprintf("goroutine %d %s", g, bytes.Repeat([]byte{byte(g)}, 5000)))
			for range 20 {
				for _, c := range every {
					z, err := Compress(c, in)
					if err != nil {
						t.Error(err)
						return
					}
					if out, err := Decompress(c, z, len(in)); err != nil || !bytes.Equal(out, in) {
						t.Errorf("%s: %v", c, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestRefusesCorruptInput: a wrong size, truncated, flipped or random
// input, a size out of range and an unknown codec are errors
// (ErrCorrupt, ErrUnknown), never a panic or a short result.
func TestRefusesCorruptInput(t *testing.T) {
	good := bytes.Repeat([]byte("pulsar magnetar "), 500)
	rnd := rand.New(rand.NewSource(2))
	for _, c := range every[1:] {
		z, err := Compress(c, good)
		if err != nil {
			t.Fatal(err)
		}
		garbage := make([]byte, len(z))
		rnd.Read(garbage)
		flipped := bytes.Clone(z)
		for i := 0; i < len(flipped); i += 7 {
			flipped[i] ^= 0x5a
		}
		cases := map[string][]byte{"empty": {}, "truncated": z[:len(z)/2], "garbage": garbage, "flipped": flipped}
		for name, in := range cases {
			if _, err := Decompress(c, in, len(good)); !errors.Is(err, ErrCorrupt) || !errors.Is(err, corrupt.Err) {
				t.Errorf("%s %s: %v, want ErrCorrupt and the shared corrupt.Err marker", c, name, err)
			}
		}
		for _, n := range []int{0, len(good) - 1, len(good) + 1, MaxSize + 1, -1} {
			if _, err := Decompress(c, z, n); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s with size %d: %v, want ErrCorrupt", c, n, err)
			}
		}
		// Random bytes never panic, whatever size is claimed.
		for i := range 2000 {
			in := make([]byte, i%97)
			rnd.Read(in)
			_, _ = Decompress(c, in, i%300)
		}
	}
	for _, c := range []Type{-1, 5, 9} {
		if _, err := Decompress(c, []byte{1}, 1); !errors.Is(err, ErrUnknown) {
			t.Errorf("Decompress codec %d: %v, want ErrUnknown", c, err)
		}
		if _, err := Compress(c, []byte{1}); !errors.Is(err, ErrUnknown) {
			t.Errorf("Compress codec %d: %v, want ErrUnknown", c, err)
		}
	}
}

// TestKnownEncodings pins the framing Pulsar's clients use: LZ4 is a
// bare block (a literal-only block decodes; no frame magic), ZLIB has
// the zlib header, ZSTD the frame magic, SNAPPY a varint length first.
func TestKnownEncodings(t *testing.T) {
	for _, n := range []int{0, 14, 15, 16, 269, 270, 271, 1000} {
		in := bytes.Repeat([]byte{7}, n)
		if out, err := Decompress(LZ4, literalLZ4(in), n); err != nil || !bytes.Equal(out, in) {
			t.Fatalf("literal LZ4 block of %d: %v", n, err)
		}
	}
	in := bytes.Repeat([]byte("x"), 300)
	lz, _ := Compress(LZ4, in)
	if bytes.HasPrefix(lz, []byte{0x04, 0x22, 0x4d, 0x18}) {
		t.Error("LZ4 output starts with the LZ4 frame magic; Pulsar uses bare blocks")
	}
	zl, _ := Compress(ZLIB, in)
	if len(zl) < 2 || zl[0]&0x0f != 8 || (uint16(zl[0])<<8|uint16(zl[1]))%31 != 0 {
		t.Errorf("ZLIB output lacks the zlib header: % x", zl[:min(2, len(zl))])
	}
	zs, _ := Compress(ZSTD, in)
	if !bytes.HasPrefix(zs, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
		t.Errorf("ZSTD output lacks the frame magic: % x", zs[:min(4, len(zs))])
	}
	sn, _ := Compress(Snappy, in)
	if !bytes.HasPrefix(sn, []byte{0xac, 0x02}) { // varint 300
		t.Errorf("SNAPPY output does not start with the length 300: % x", sn[:min(2, len(sn))])
	}
	if got := fmt.Sprint(LZ4, ZLIB, ZSTD, Snappy, None, Type(9)); got != "LZ4 ZLIB ZSTD SNAPPY NONE CompressionType(9)" {
		t.Errorf("names: %s", got)
	}
}
