package htpasswd

import (
	"bufio"
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// Scheme is a hash form.
type Scheme int

const (
	// Bcrypt is $2a$/$2b$/$2y$ (Magnetar only).
	Bcrypt Scheme = iota + 1
	// APR1MD5 is Apache's MD5-crypt, $apr1$.
	APR1MD5
	// DESCrypt is traditional crypt(3).
	DESCrypt
)

func (s Scheme) String() string {
	switch s {
	case Bcrypt:
		return "bcrypt"
	case APR1MD5:
		return "apr1-md5"
	case DESCrypt:
		return "crypt"
	}
	return "unknown"
}

// ErrFormat is returned for a file or hash that is not in a known form.
var ErrFormat = errors.New("htpasswd: bad format")

// Identify tells the scheme of a hash, or ErrFormat.
func Identify(hash string) (Scheme, error) {
	switch {
	case strings.HasPrefix(hash, "$2"):
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			return 0, fmt.Errorf("%w: bad bcrypt hash: %v", ErrFormat, err)
		}
		return Bcrypt, nil
	case strings.HasPrefix(hash, "$apr1"):
		if _, ok := apr1Salt(hash); !ok {
			return 0, fmt.Errorf("%w: want $apr1$<1..8 salt chars>$<22 chars>", ErrFormat)
		}
		return APR1MD5, nil
	case len(hash) == 13 && validSalt(hash, 13, 13):
		return DESCrypt, nil
	}
	return 0, fmt.Errorf("%w: not bcrypt ($2y$), APR1-MD5 ($apr1$) or DES crypt (13 characters)", ErrFormat)
}

// Entry is one user of a file.
type Entry struct {
	User   string
	Hash   string
	Scheme Scheme
}

// Parse reads a file (see the package doc). Users keep file order; a
// user listed twice: the last line wins.
func Parse(data []byte) ([]Entry, error) {
	var out []Entry
	at := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 4096), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		if !ok || user == "" || hash == "" || strings.Contains(hash, ":") {
			return nil, fmt.Errorf("%w: line %d: want user:hash", ErrFormat, n)
		}
		s, err := Identify(hash)
		if err != nil {
			return nil, fmt.Errorf("line %d (user %q): %w", n, user, err)
		}
		e := Entry{User: user, Hash: hash, Scheme: s}
		if i, dup := at[user]; dup {
			out[i] = e
			continue
		}
		at[user] = len(out)
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return out, nil
}

// Verify reports whether password matches e's hash.
func (e Entry) Verify(password []byte) bool {
	var got string
	switch e.Scheme {
	case Bcrypt:
		return bcrypt.CompareHashAndPassword([]byte(e.Hash), password) == nil
	case APR1MD5:
		salt, ok := apr1Salt(e.Hash)
		if !ok {
			return false
		}
		got, _ = APR1(password, salt)
	case DESCrypt:
		got, _ = Crypt(password, e.Hash[:2])
	default:
		return false
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(e.Hash)) == 1
}

// Weak reports whether the scheme is one a stolen file gives up easily
// (everything but bcrypt).
func (s Scheme) Weak() bool { return s != Bcrypt }
