package htpasswd

// DES as FIPS 46-3 defines it, bit by bit through its tables, with the
// salt perturbation of Unix crypt(3) on the expansion E. Speed does not
// matter here (one check is 25 encryptions); clarity does. Table entries
// are bit positions counted from 1 at the most significant bit, as the
// standard prints them.

// initialPerm is IP; the final permutation is its inverse.
var initialPerm = [64]byte{
	58, 50, 42, 34, 26, 18, 10, 2,
	60, 52, 44, 36, 28, 20, 12, 4,
	62, 54, 46, 38, 30, 22, 14, 6,
	64, 56, 48, 40, 32, 24, 16, 8,
	57, 49, 41, 33, 25, 17, 9, 1,
	59, 51, 43, 35, 27, 19, 11, 3,
	61, 53, 45, 37, 29, 21, 13, 5,
	63, 55, 47, 39, 31, 23, 15, 7,
}

// finalPerm is IP⁻¹, derived from initialPerm.
var finalPerm = func() (fp [64]byte) {
	for i, p := range initialPerm {
		fp[p-1] = byte(i + 1)
	}
	return fp
}()

// expansion is E: 32 bits of R to 48.
var expansion = [48]byte{
	32, 1, 2, 3, 4, 5,
	4, 5, 6, 7, 8, 9,
	8, 9, 10, 11, 12, 13,
	12, 13, 14, 15, 16, 17,
	16, 17, 18, 19, 20, 21,
	20, 21, 22, 23, 24, 25,
	24, 25, 26, 27, 28, 29,
	28, 29, 30, 31, 32, 1,
}

// roundPerm is P, applied to the S-box outputs.
var roundPerm = [32]byte{
	16, 7, 20, 21, 29, 12, 28, 17,
	1, 15, 23, 26, 5, 18, 31, 10,
	2, 8, 24, 14, 32, 27, 3, 9,
	19, 13, 30, 6, 22, 11, 4, 25,
}

// choice1 is PC-1: the 56 key bits (parity bits dropped) as C then D.
var choice1 = [56]byte{
	57, 49, 41, 33, 25, 17, 9,
	1, 58, 50, 42, 34, 26, 18,
	10, 2, 59, 51, 43, 35, 27,
	19, 11, 3, 60, 52, 44, 36,
	63, 55, 47, 39, 31, 23, 15,
	7, 62, 54, 46, 38, 30, 22,
	14, 6, 61, 53, 45, 37, 29,
	21, 13, 5, 28, 20, 12, 4,
}

// choice2 is PC-2: a round's 48-bit subkey from C and D.
var choice2 = [48]byte{
	14, 17, 11, 24, 1, 5,
	3, 28, 15, 6, 21, 10,
	23, 19, 12, 4, 26, 8,
	16, 7, 27, 20, 13, 2,
	41, 52, 31, 37, 47, 55,
	30, 40, 51, 45, 33, 48,
	44, 49, 39, 56, 34, 53,
	46, 42, 50, 36, 29, 32,
}

// rotations are the left rotations of C and D before each round.
var rotations = [16]byte{1, 1, 2, 2, 2, 2, 2, 2, 1, 2, 2, 2, 2, 2, 2, 1}

// sboxes are S1..S8, each 4 rows of 16: row = outer bits, column = inner.
var sboxes = [8][64]byte{
	{14, 4, 13, 1, 2, 15, 11, 8, 3, 10, 6, 12, 5, 9, 0, 7,
		0, 15, 7, 4, 14, 2, 13, 1, 10, 6, 12, 11, 9, 5, 3, 8,
		4, 1, 14, 8, 13, 6, 2, 11, 15, 12, 9, 7, 3, 10, 5, 0,
		15, 12, 8, 2, 4, 9, 1, 7, 5, 11, 3, 14, 10, 0, 6, 13},
	{15, 1, 8, 14, 6, 11, 3, 4, 9, 7, 2, 13, 12, 0, 5, 10,
		3, 13, 4, 7, 15, 2, 8, 14, 12, 0, 1, 10, 6, 9, 11, 5,
		0, 14, 7, 11, 10, 4, 13, 1, 5, 8, 12, 6, 9, 3, 2, 15,
		13, 8, 10, 1, 3, 15, 4, 2, 11, 6, 7, 12, 0, 5, 14, 9},
	{10, 0, 9, 14, 6, 3, 15, 5, 1, 13, 12, 7, 11, 4, 2, 8,
		13, 7, 0, 9, 3, 4, 6, 10, 2, 8, 5, 14, 12, 11, 15, 1,
		13, 6, 4, 9, 8, 15, 3, 0, 11, 1, 2, 12, 5, 10, 14, 7,
		1, 10, 13, 0, 6, 9, 8, 7, 4, 15, 14, 3, 11, 5, 2, 12},
	{7, 13, 14, 3, 0, 6, 9, 10, 1, 2, 8, 5, 11, 12, 4, 15,
		13, 8, 11, 5, 6, 15, 0, 3, 4, 7, 2, 12, 1, 10, 14, 9,
		10, 6, 9, 0, 12, 11, 7, 13, 15, 1, 3, 14, 5, 2, 8, 4,
		3, 15, 0, 6, 10, 1, 13, 8, 9, 4, 5, 11, 12, 7, 2, 14},
	{2, 12, 4, 1, 7, 10, 11, 6, 8, 5, 3, 15, 13, 0, 14, 9,
		14, 11, 2, 12, 4, 7, 13, 1, 5, 0, 15, 10, 3, 9, 8, 6,
		4, 2, 1, 11, 10, 13, 7, 8, 15, 9, 12, 5, 6, 3, 0, 14,
		11, 8, 12, 7, 1, 14, 2, 13, 6, 15, 0, 9, 10, 4, 5, 3},
	{12, 1, 10, 15, 9, 2, 6, 8, 0, 13, 3, 4, 14, 7, 5, 11,
		10, 15, 4, 2, 7, 12, 9, 5, 6, 1, 13, 14, 0, 11, 3, 8,
		9, 14, 15, 5, 2, 8, 12, 3, 7, 0, 4, 10, 1, 13, 11, 6,
		4, 3, 2, 12, 9, 5, 15, 10, 11, 14, 1, 7, 6, 0, 8, 13},
	{4, 11, 2, 14, 15, 0, 8, 13, 3, 12, 9, 7, 5, 10, 6, 1,
		13, 0, 11, 7, 4, 9, 1, 10, 14, 3, 5, 12, 2, 15, 8, 6,
		1, 4, 11, 13, 12, 3, 7, 14, 10, 15, 6, 8, 0, 5, 9, 2,
		6, 11, 13, 8, 1, 4, 10, 7, 9, 5, 0, 15, 14, 2, 3, 12},
	{13, 2, 8, 4, 6, 15, 11, 1, 10, 9, 3, 14, 5, 0, 12, 7,
		1, 15, 13, 8, 10, 3, 7, 4, 12, 5, 6, 11, 0, 14, 9, 2,
		7, 11, 4, 1, 9, 12, 14, 2, 0, 6, 10, 13, 15, 3, 5, 8,
		2, 1, 14, 7, 4, 10, 8, 13, 15, 12, 9, 0, 3, 5, 6, 11},
}

// permute gathers bits of in (inBits wide) into len(table) bits: output
// bit k (from the top) is input bit table[k] (1 = the top bit).
func permute(in uint64, inBits int, table []byte) uint64 {
	var out uint64
	for _, p := range table {
		out = out<<1 | (in>>(inBits-int(p)))&1
	}
	return out
}

// subkeys derives the 16 round keys (48 bits each) of a 64-bit key.
func subkeys(key uint64) (ks [16]uint64) {
	cd := permute(key, 64, choice1[:])
	c, d := uint32(cd>>28), uint32(cd&0xfffffff)
	rot := func(v uint32, n byte) uint32 { return (v<<n | v>>(28-n)) & 0xfffffff }
	for i, n := range rotations {
		c, d = rot(c, n), rot(d, n)
		ks[i] = permute(uint64(c)<<28|uint64(d), 56, choice2[:])
	}
	return ks
}

// feistel is f(R, K) with the expansion table e.
func feistel(r uint32, k uint64, e *[48]byte) uint32 {
	x := permute(uint64(r), 32, e[:]) ^ k
	var s uint64
	for i := 0; i < 8; i++ {
		six := byte(x>>(42-6*i)) & 0x3f
		row := six>>4&2 | six&1
		col := six >> 1 & 0xf
		s = s<<4 | uint64(sboxes[i][row*16+col])
	}
	return uint32(permute(s, 32, roundPerm[:]))
}

// encryptBlock is DES encryption of block with round keys ks and
// expansion e (the standard's E, or a salted one).
func encryptBlock(block uint64, ks *[16]uint64, e *[48]byte) uint64 {
	b := permute(block, 64, initialPerm[:])
	l, r := uint32(b>>32), uint32(b)
	for i := range ks {
		l, r = r, l^feistel(r, ks[i], e)
	}
	return permute(uint64(r)<<32|uint64(l), 64, finalPerm[:])
}

// Crypt returns the traditional DES crypt(3) hash of password with a
// two-character salt of the crypt alphabet (13 characters: the salt,
// then 11). Bytes of password past the eighth are ignored, as crypt(3)
// ignores them. ok is false for a bad salt.
func Crypt(password []byte, salt string) (hash string, ok bool) {
	if !validSalt(salt, 2, 2) {
		return "", false
	}
	var key uint64
	for i := 0; i < 8; i++ {
		var c byte
		if i < len(password) {
			c = password[i] << 1
		}
		key = key<<8 | uint64(c)
	}
	e := expansion
	bits := indexOf(salt[0]) | indexOf(salt[1])<<6
	for b := 0; b < 12; b++ {
		if bits>>b&1 == 1 {
			e[b], e[b+24] = e[b+24], e[b]
		}
	}
	ks := subkeys(key)
	var block uint64
	for i := 0; i < 25; i++ {
		block = encryptBlock(block, &ks, &e)
	}
	out := make([]byte, 0, 13)
	out = append(out, salt...)
	// 64 bits plus two zero bits: 11 characters, high bits first.
	for i := 0; i < 11; i++ {
		shift := 64 - 6*(i+1)
		var v uint64
		if shift >= 0 {
			v = block >> shift
		} else {
			v = block << -shift
		}
		out = append(out, alphabet[v&0x3f])
	}
	return string(out), true
}

// indexOf is the value of a crypt-alphabet character.
func indexOf(c byte) int {
	for i := 0; i < len(alphabet); i++ {
		if alphabet[i] == c {
			return i
		}
	}
	return 0
}
