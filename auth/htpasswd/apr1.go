package htpasswd

import (
	"crypto/md5"
	"strings"
)

const apr1Magic = "$apr1$"

// alphabet is the crypt alphabet: value v is alphabet[v].
const alphabet = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// validSalt reports whether s is n..m characters of the crypt alphabet.
func validSalt(s string, n, m int) bool {
	if len(s) < n || len(s) > m {
		return false
	}
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(alphabet, s[i]) < 0 {
			return false
		}
	}
	return true
}

// APR1 returns the APR1-MD5 hash of password with salt
// ("$apr1$<salt>$<22 chars>"). The salt must be 1..8 characters of the
// crypt alphabet (ok false otherwise).
func APR1(password []byte, salt string) (hash string, ok bool) {
	if !validSalt(salt, 1, 8) {
		return "", false
	}
	alt := md5.New()
	alt.Write(password)
	alt.Write([]byte(salt))
	alt.Write(password)
	altSum := alt.Sum(nil)

	h := md5.New()
	h.Write(password)
	h.Write([]byte(apr1Magic))
	h.Write([]byte(salt))
	for n := len(password); n > 0; n -= md5.Size {
		h.Write(altSum[:min(n, md5.Size)])
	}
	for n := len(password); n != 0; n >>= 1 {
		if n&1 == 1 {
			h.Write([]byte{0})
		} else {
			h.Write(password[:1])
		}
	}
	sum := h.Sum(nil)

	for i := 0; i < 1000; i++ {
		r := md5.New()
		if i&1 == 1 {
			r.Write(password)
		} else {
			r.Write(sum)
		}
		if i%3 != 0 {
			r.Write([]byte(salt))
		}
		if i%7 != 0 {
			r.Write(password)
		}
		if i&1 == 1 {
			r.Write(sum)
		} else {
			r.Write(password)
		}
		sum = r.Sum(sum[:0])
	}

	out := make([]byte, 0, len(apr1Magic)+len(salt)+1+22)
	out = append(out, apr1Magic...)
	out = append(out, salt...)
	out = append(out, '$')
	for _, g := range [5][3]int{{0, 6, 12}, {1, 7, 13}, {2, 8, 14}, {3, 9, 15}, {4, 10, 5}} {
		v := uint32(sum[g[0]])<<16 | uint32(sum[g[1]])<<8 | uint32(sum[g[2]])
		out = appendLow6(out, v, 4)
	}
	out = appendLow6(out, uint32(sum[11]), 2)
	return string(out), true
}

// appendLow6 writes n characters of v, 6 bits each, low bits first.
func appendLow6(dst []byte, v uint32, n int) []byte {
	for ; n > 0; n-- {
		dst = append(dst, alphabet[v&0x3f])
		v >>= 6
	}
	return dst
}

// apr1Salt splits a well-formed "$apr1$<salt>$<22 chars>" hash (ok
// false when it is not one).
func apr1Salt(hash string) (salt string, ok bool) {
	rest, ok := strings.CutPrefix(hash, apr1Magic)
	if !ok {
		return "", false
	}
	salt, sum, ok := strings.Cut(rest, "$")
	if !ok || !validSalt(salt, 1, 8) || len(sum) != 22 || !validSalt(sum, 22, 22) {
		return "", false
	}
	return salt, true
}
