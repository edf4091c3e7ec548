package fuzzpatch

import (
	"bytes"
	"testing"
)

func TestApply(t *testing.T) {
	base := []byte("0123456789")
	for _, tc := range []struct {
		name string
		prog []byte
		want string
	}{
		{"empty", nil, "0123456789"},
		{"mode only", []byte{0}, "0123456789"},
		{"half", []byte{Truncate | 64}, "01234"},
		{"to zero", []byte{Truncate}, ""},
		{"xor, offset modulo the length", Program(0, Patch(1, 0x01), Patch(12, 0x01)), "0033456789"},
		{"patch on empty", Program(Truncate, Patch(3, 1)), ""},
		{"append", append(Program(Append, Patch(0, 0x02)), 'x', 'y'), "2123456789xy"},
		{"short patch ignored", []byte{0, 2, 0, 0, 1, 5}, "1123456789"},
		{"count past the end", []byte{0, 200}, "0123456789"},
	} {
		if got := Apply(base, tc.prog); string(got) != tc.want {
			t.Errorf("%s: Apply = %q, want %q", tc.name, got, tc.want)
		}
	}
	if !bytes.Equal(base, []byte("0123456789")) {
		t.Fatal("base modified")
	}
}

func FuzzApply(f *testing.F) {
	f.Add([]byte{Truncate | Append | 3, 4, 1, 2, 3})
	f.Fuzz(func(t *testing.T, prog []byte) {
		base := []byte("some base bytes")
		out := Apply(base, prog)
		if len(out) > len(base)+len(prog) {
			t.Fatalf("output of %d bytes from a %d-byte base and %d-byte program", len(out), len(base), len(prog))
		}
	})
}
