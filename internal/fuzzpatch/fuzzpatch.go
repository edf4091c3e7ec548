package fuzzpatch

import "encoding/binary"

// Mode bits of prog[0].
const (
	Truncate = 0x80
	Append   = 0x40
)

// Apply returns base changed as prog says (see the package comment).
func Apply(base, prog []byte) []byte {
	out := append([]byte(nil), base...)
	if len(prog) == 0 {
		return out
	}
	mode := prog[0]
	prog = prog[1:]
	if mode&Truncate != 0 {
		out = out[:len(out)*int(mode&0x7f)/128]
	}
	n := 0
	if len(prog) > 0 {
		n = int(prog[0])
		prog = prog[1:]
	}
	for ; n > 0 && len(prog) >= 3; n-- {
		if len(out) > 0 {
			off := int(binary.LittleEndian.Uint16(prog)) % len(out)
			out[off] ^= prog[2]
		}
		prog = prog[3:]
	}
	if mode&Append != 0 {
		out = append(out, prog...)
	}
	return out
}

// Patch encodes one patch: XOR x at offset off.
func Patch(off uint16, x byte) []byte {
	return []byte{byte(off), byte(off >> 8), x}
}

// Program builds a program from a mode and patches (each from Patch).
func Program(mode byte, patches ...[]byte) []byte {
	p := []byte{mode, byte(len(patches))}
	for _, q := range patches {
		p = append(p, q...)
	}
	return p
}
