package htpasswd

import (
	"bufio"
	"crypto/des"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

type vector struct {
	scheme string
	pw     []byte
	hash   string
}

func readVectors(t *testing.T) []vector {
	t.Helper()
	f, err := os.Open("testdata/vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []vector
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		parts := strings.Split(line, "\t")
		if len(parts) != 3 {
			t.Fatalf("bad vector line %q", line)
		}
		pw, err := hex.DecodeString(parts[1])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, vector{parts[0], pw, parts[2]})
	}
	if len(out) < 100 {
		t.Fatalf("only %d vectors", len(out))
	}
	return out
}

// TestKnownAnswers checks both hashes against vectors made by openssl
// and libxcrypt (testdata/README).
func TestKnownAnswers(t *testing.T) {
	for _, v := range readVectors(t) {
		var got string
		var ok bool
		switch v.scheme {
		case "apr1":
			salt, _ := apr1Salt(v.hash)
			got, ok = APR1(v.pw, salt)
		case "crypt":
			got, ok = Crypt(v.pw, v.hash[:2])
		}
		if !ok || got != v.hash {
			t.Errorf("%s(%x) = %q, %v; want %q", v.scheme, v.pw, got, ok, v.hash)
		}
		s, err := Identify(v.hash)
		if err != nil {
			t.Fatalf("Identify(%q): %v", v.hash, err)
		}
		e := Entry{User: "u", Hash: v.hash, Scheme: s}
		if !e.Verify(v.pw) {
			t.Errorf("Verify(%q, %x) = false", v.hash, v.pw)
		}
		// A wrong password: the first byte changed (crypt reads only 8).
		wrong := []byte("x")
		if len(v.pw) > 0 {
			wrong = append([]byte{v.pw[0] ^ 1}, v.pw[1:]...)
		}
		if e.Verify(wrong) {
			t.Errorf("Verify(%q, %x) = true for a wrong password", v.hash, wrong)
		}
	}
}

// TestDESMatchesStdlib runs the table-driven DES with the standard E
// against crypto/des on random keys and blocks: a wrong table entry
// shows here before it hides in a crypt vector.
func TestDESMatchesStdlib(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		key, block := r.Uint64(), r.Uint64()
		var kb, in, want [8]byte
		binary.BigEndian.PutUint64(kb[:], key)
		binary.BigEndian.PutUint64(in[:], block)
		c, err := des.NewCipher(kb[:])
		if err != nil {
			t.Fatal(err)
		}
		c.Encrypt(want[:], in[:])
		ks := subkeys(key)
		e := expansion
		if got := encryptBlock(block, &ks, &e); got != binary.BigEndian.Uint64(want[:]) {
			t.Fatalf("DES(key %016x, block %016x) = %016x, want %x", key, block, got, want)
		}
	}
}

// TestCryptTruncates: crypt(3) reads 8 bytes of the password.
func TestCryptTruncates(t *testing.T) {
	a, _ := Crypt([]byte("abcdefgh"), "ab")
	b, _ := Crypt([]byte("abcdefgh-and-more"), "ab")
	c, _ := Crypt([]byte("abcdefgX"), "ab")
	if a != b || a == c {
		t.Fatalf("crypt: %q %q %q", a, b, c)
	}
}

func TestIdentify(t *testing.T) {
	bc, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	good := map[string]Scheme{
		"$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.": APR1MD5,
		"$apr1$a$DGJdug4yPH2BWOHN0WfW70":        APR1MD5,
		"abl0JrMf6tlhw":                         DESCrypt,
		string(bc):                              Bcrypt,
	}
	for h, want := range good {
		if got, err := Identify(h); err != nil || got != want {
			t.Errorf("Identify(%q) = %v, %v; want %v", h, got, err, want)
		}
		if got := want.Weak(); got != (want != Bcrypt) {
			t.Errorf("%v.Weak() = %v", want, got)
		}
	}
	for _, h := range []string{
		"$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf",   // 21 chars
		"$apr1$$KGYPuMoLUou3i6vUkPUUf.",          // empty salt
		"$apr1$123456789$KGYPuMoLUou3i6vUkPUUf.", // 9-char salt
		"$apr1$FG4A*6aX$KGYPuMoLUou3i6vUkPUUf.",  // salt outside the alphabet
		"$apr1FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.",
		"abl0JrMf6tlh",   // 12
		"abl0JrMf6tlhw.", // 14
		"ab*0JrMf6tlhw",
		"{SHA}fEqNCco3Yq9h5ZUglD3CZJT4lBs=",
		"$1$saltsalt$2vnaRpHa6Jxjz5n83ok8Z0", // md5crypt: Pulsar cannot check it either
		"$2y$10$short",
		"plaintext",
	} {
		if _, err := Identify(h); !errors.Is(err, ErrFormat) {
			t.Errorf("Identify(%q) = %v, want ErrFormat", h, err)
		}
	}
}

func TestParse(t *testing.T) {
	bc, _ := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	file := "# users\n\nadmin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.\nold:abl0JrMf6tlhw\r\nnew:" + string(bc) +
		"\nold:" + "5GEA/w5WHc3/g\n"
	es, err := Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 3 || es[0].User != "admin" || es[1].User != "old" || es[2].User != "new" {
		t.Fatalf("entries %+v", es)
	}
	if es[1].Hash != "5GEA/w5WHc3/g" {
		t.Errorf("a repeated user: %q, want the last line", es[1].Hash)
	}
	for pw, e := range map[string]Entry{"123456": es[0], "a": es[1], "s3cret": es[2]} {
		if !e.Verify([]byte(pw)) {
			t.Errorf("%s (%v): password %q refused", e.User, e.Scheme, pw)
		}
		if e.Verify([]byte(pw + "x")) {
			t.Errorf("%s (%v): wrong password accepted", e.User, e.Scheme)
		}
	}
	for _, f := range []string{"nocolon", "a:b:c", ":abl0JrMf6tlhw", "u:", "u:{SHA}fEqNCco3Yq9h5ZUglD3CZJT4lBs=", "ok:abl0JrMf6tlhw\nbad:$apr1$x"} {
		if _, err := Parse([]byte(f)); !errors.Is(err, ErrFormat) {
			t.Errorf("Parse(%q) = %v, want ErrFormat", f, err)
		}
	}
	if _, err := Parse([]byte("ok:abl0JrMf6tlhw\nbad:$apr1$x")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("error does not name the line: %v", err)
	}
}

// FuzzVerify: arbitrary hashes and passwords never panic, and an
// accepted hash verifies only the password it was made from.
func FuzzVerify(f *testing.F) {
	f.Add("$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.", []byte("123456"))
	f.Add("abl0JrMf6tlhw", []byte("hello"))
	f.Add("$apr1$a$", []byte{})
	f.Fuzz(func(t *testing.T, hash string, pw []byte) {
		s, err := Identify(hash)
		if err != nil {
			return
		}
		_ = Entry{Hash: hash, Scheme: s}.Verify(pw)
		if h, ok := APR1(pw, "salt"); ok && !(Entry{Hash: h, Scheme: APR1MD5}).Verify(pw) {
			t.Fatalf("APR1 of %x does not verify", pw)
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	for _, h := range []string{"$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.", "abl0JrMf6tlhw"} {
		s, _ := Identify(h)
		e := Entry{Hash: h, Scheme: s}
		b.Run(s.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e.Verify([]byte("123456"))
			}
		})
	}
}
