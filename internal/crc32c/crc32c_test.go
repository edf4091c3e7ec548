package crc32c

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestKnownValue: the check value of CRC-32C over "123456789".
func TestKnownValue(t *testing.T) {
	if got := Checksum([]byte("123456789")); got != 0xe3069283 {
		t.Fatalf("CRC-32C(123456789) = %#x, want 0xe3069283", got)
	}
	if Update(Checksum([]byte("1234")), []byte("56789")) != 0xe3069283 {
		t.Fatal("Update does not continue a checksum")
	}
}

func TestCombine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 3, 4, 7, 64, 1000, 4096, 65537, 1 << 20} {
		a := make([]byte, r.IntN(300))
		b := make([]byte, n)
		for i := range a {
			a[i] = byte(r.Uint32())
		}
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		want := crc32.Checksum(append(append([]byte(nil), a...), b...), crc32.MakeTable(crc32.Castagnoli))
		if got := Combine(Checksum(a), Checksum(b), n); got != want {
			t.Errorf("len(a)=%d len(b)=%d: Combine %#x, want %#x", len(a), n, got, want)
		}
	}
}
