package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func hsKey(t *testing.T) []byte {
	t.Helper()
	k, err := NewSecretKey("HS256")
	if err != nil {
		t.Fatal(err)
	}
	if len(k) != 32 {
		t.Fatalf("HS256 key has %d bytes", len(k))
	}
	return k
}

func mustToken(t *testing.T, key any, spec TokenSpec) string {
	t.Helper()
	tok, err := CreateToken(key, spec)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func mustProvider(t *testing.T, cfg TokenConfig) *TokenProvider {
	t.Helper()
	p, err := NewTokenProvider(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTokenHS256(t *testing.T) {
	k := hsKey(t)
	p := mustProvider(t, TokenConfig{SecretKey: k})
	tok := mustToken(t, k, TokenSpec{Subject: "alice"})
	// Pulsar's header carries alg only.
	hdr, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	if string(hdr) != `{"alg":"HS256"}` {
		t.Fatalf("header %s", hdr)
	}
	for _, data := range []string{tok, tok + "\n", "  " + tok + "\r\n"} {
		id, err := p.Authenticate(Credentials{Data: []byte(data)})
		if err != nil || id.Role != "alice" || id.Method != MethodToken || !id.Expires.IsZero() {
			t.Fatalf("%q: %+v %v", data, id, err)
		}
	}
}

func TestTokenRejections(t *testing.T) {
	k := hsKey(t)
	p := mustProvider(t, TokenConfig{SecretKey: k})
	other := hsKey(t)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	header := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	good := mustToken(t, k, TokenSpec{Subject: "alice"})
	parts := strings.Split(good, ".")
	cases := map[string]string{
		"empty":         "",
		"not a jwt":     "not-a-jwt",
		"wrong key":     mustToken(t, other, TokenSpec{Subject: "alice"}),
		"expired":       mustToken(t, k, TokenSpec{Subject: "alice", Expires: time.Now().Add(-time.Second)}),
		"alg none":      header(`{"alg":"none"}`) + "." + parts[1] + ".",
		"alg none sig":  header(`{"alg":"none"}`) + "." + parts[1] + "." + parts[2],
		"RS256 to HMAC": mustToken(t, rsaKey, TokenSpec{Subject: "alice"}),
		"tampered":      parts[0] + "." + header(`{"sub":"admin"}`) + "." + parts[2],
		"nbf future":    mustToken(t, k, TokenSpec{Subject: "alice", Claims: map[string]any{"nbf": time.Now().Add(time.Hour).Unix()}}),
		"bad exp type":  mustToken(t, k, TokenSpec{Subject: "alice", Claims: map[string]any{"exp": "tomorrow"}}),
		"two dots only": "..",
	}
	for name, tok := range cases {
		if _, err := p.Authenticate(Credentials{Data: []byte(tok)}); !errors.Is(err, ErrAuthentication) {
			t.Errorf("%s: got %v, want ErrAuthentication", name, err)
		}
	}
}

func TestTokenExpiry(t *testing.T) {
	k := hsKey(t)
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	id, err := mustProvider(t, TokenConfig{SecretKey: k}).Validate(mustToken(t, k, TokenSpec{Subject: "a", Expires: exp}))
	if err != nil || !id.Expires.Equal(exp) {
		t.Fatalf("%+v %v", id, err)
	}
	if id.Expired(exp.Add(-time.Second)) || !id.Expired(exp) {
		t.Fatal("Expired boundary wrong")
	}
	// Clock skew admits a just-expired token.
	old := mustToken(t, k, TokenSpec{Subject: "a", Expires: time.Now().Add(-2 * time.Second)})
	if _, err := mustProvider(t, TokenConfig{SecretKey: k, ClockSkew: time.Minute}).Validate(old); err != nil {
		t.Fatal(err)
	}
	// exp at the int64 edge is accepted as far future.
	far := mustToken(t, k, TokenSpec{Subject: "a", Claims: map[string]any{"exp": int64(1) << 40}})
	if _, err := mustProvider(t, TokenConfig{SecretKey: k}).Validate(far); err != nil {
		t.Fatal(err)
	}
}

func TestTokenAudienceAndClaims(t *testing.T) {
	k := hsKey(t)
	if _, err := NewTokenProvider(TokenConfig{SecretKey: k, AudienceClaim: "aud"}); err == nil {
		t.Fatal("audience claim without audience accepted")
	}
	p := mustProvider(t, TokenConfig{SecretKey: k, AudienceClaim: "aud", Audience: "magnetar"})
	for aud, ok := range map[any]bool{"magnetar": true, "other": false} {
		_, err := p.Validate(mustToken(t, k, TokenSpec{Subject: "a", Claims: map[string]any{"aud": aud}}))
		if (err == nil) != ok {
			t.Errorf("aud %v: %v", aud, err)
		}
	}
	if _, err := p.Validate(mustToken(t, k, TokenSpec{Subject: "a", Claims: map[string]any{"aud": []string{"x", "magnetar"}}})); err != nil {
		t.Error(err)
	}
	if _, err := p.Validate(mustToken(t, k, TokenSpec{Subject: "a"})); err == nil {
		t.Error("missing audience accepted")
	}
	rp := mustProvider(t, TokenConfig{SecretKey: k, RoleClaim: "roles"})
	id, err := rp.Validate(mustToken(t, k, TokenSpec{Subject: "ignored", Claims: map[string]any{"roles": []string{"r1", "r2"}}}))
	if err != nil || id.Role != "r1" {
		t.Fatalf("%+v %v", id, err)
	}
	if _, err := rp.Validate(mustToken(t, k, TokenSpec{Subject: "x", Claims: map[string]any{"roles": 7}})); err == nil {
		t.Fatal("numeric role accepted")
	}
	if _, err := rp.Validate(mustToken(t, k, TokenSpec{Subject: "x"})); !errors.Is(err, ErrAuthentication) {
		t.Fatal("token without the role claim accepted")
	}
}

func TestTokenAsymmetric(t *testing.T) {
	for _, alg := range []string{"RS256", "ES256", "ES384", "EdDSA"} {
		priv, pub, err := NewKeyPair(alg)
		if err != nil {
			t.Fatal(err)
		}
		sk, err := ParsePrivateKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		pk, err := ParsePublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		p := mustProvider(t, TokenConfig{PublicKey: pk})
		tok := mustToken(t, sk, TokenSpec{Subject: "svc", Alg: alg})
		if id, err := p.Validate(tok); err != nil || id.Role != "svc" {
			t.Fatalf("%s: %v", alg, err)
		}
		// A token from another key pair of the same kind fails.
		priv2, _, _ := NewKeyPair(alg)
		sk2, _ := ParsePrivateKey(priv2)
		if _, err := p.Validate(mustToken(t, sk2, TokenSpec{Subject: "svc", Alg: alg})); err == nil {
			t.Fatalf("%s: foreign key accepted", alg)
		}
		// Algorithm confusion: HMAC signed with the public key's bytes.
		if _, err := p.Validate(mustToken(t, pub, TokenSpec{Subject: "svc", Alg: "HS256"})); err == nil {
			t.Fatalf("%s: HS256 with the public key as secret accepted", alg)
		}
	}
	// ES256 key pinned: an ES384 token is refused.
	k256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	k384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p := mustProvider(t, TokenConfig{PublicKey: &k256.PublicKey})
	if _, err := p.Validate(mustToken(t, k384, TokenSpec{Subject: "a"})); err == nil {
		t.Fatal("ES384 accepted by an ES256 key")
	}
	if _, err := CreateToken(k256, TokenSpec{Subject: "a", Alg: "ES384"}); err == nil {
		t.Fatal("ES384 with a P-256 key")
	}
}

func TestShortSecretRefused(t *testing.T) {
	if _, err := NewTokenProvider(TokenConfig{SecretKey: make([]byte, 31)}); err == nil {
		t.Fatal("31-byte HMAC key accepted")
	}
	if _, err := NewTokenProvider(TokenConfig{}); err == nil {
		t.Fatal("no key accepted")
	}
}

func TestReadKey(t *testing.T) {
	k := hsKey(t)
	dir := t.TempDir()
	f := filepath.Join(dir, "secret.key")
	if err := os.WriteFile(f, k, 0o600); err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString(k)
	for _, spec := range []string{"data:;base64," + b64, "file://" + f, f, b64} {
		got, err := ReadKey(spec)
		if err != nil || string(got) != string(k) {
			t.Errorf("%s: %v", spec, err)
		}
	}
	for _, spec := range []string{"", "file:///nonexistent/x", "data:text/plain,abc", "not base64 !!", "data:;base64,***"} {
		if _, err := ReadKey(spec); err == nil {
			t.Errorf("%q accepted", spec)
		}
	}
	// PEM and DER public keys both parse.
	_, pub, _ := NewKeyPair("RS256")
	pk, _ := x509.ParsePKIXPublicKey(pub)
	if _, err := ParsePublicKey(pub); err != nil {
		t.Fatal(err)
	}
	_ = pk
}

func TestParseDuration(t *testing.T) {
	ok := map[string]time.Duration{
		"30s": 30 * time.Second, "1m": time.Minute, "5min": 5 * time.Minute, "1h": time.Hour,
		"3d": 72 * time.Hour, "2w": 14 * 24 * time.Hour, "10y": 3650 * 24 * time.Hour, "1h30m": 90 * time.Minute,
	}
	for s, want := range ok {
		if got, err := ParseDuration(s); err != nil || got != want {
			t.Errorf("%s: %v %v", s, got, err)
		}
	}
	for _, s := range []string{"", "h", "0d", "-1h", "3x", "999999999999y", "99999999999999999999d"} {
		if _, err := ParseDuration(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

// TestPulsarTokenFormat checks a token made here has the shape of
// `pulsar tokens create`: header {"alg":"HS256"} (checked in
// TestTokenHS256), claims sub and exp (epoch seconds) only.
func TestPulsarTokenFormat(t *testing.T) {
	k := hsKey(t)
	tok := mustToken(t, k, TokenSpec{Subject: "admin", Expires: time.Unix(2000000000, 0)})
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatal(tok)
	}
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil || claims["sub"] != "admin" || claims["exp"] != float64(2000000000) || len(claims) != 2 {
		t.Fatalf("%s %v", payload, err)
	}
}

// BenchmarkValidate is the cost of verifying one token per algorithm.
func BenchmarkValidate(b *testing.B) {
	k, _ := NewSecretKey("HS256")
	hs, _ := NewTokenProvider(TokenConfig{SecretKey: k})
	hsTok, _ := CreateToken(k, TokenSpec{Subject: "a"})
	b.Run("HS256", func(b *testing.B) {
		for range b.N {
			if _, err := hs.Validate(hsTok); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, alg := range []string{"RS256", "ES256"} {
		priv, pub, _ := NewKeyPair(alg)
		sk, _ := ParsePrivateKey(priv)
		pk, _ := ParsePublicKey(pub)
		p, _ := NewTokenProvider(TokenConfig{PublicKey: pk})
		tok, _ := CreateToken(sk, TokenSpec{Subject: "a"})
		b.Run(alg, func(b *testing.B) {
			for range b.N {
				if _, err := p.Validate(tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
