package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// SecretKeySize is the number of random bytes create-secret-key makes
// for each HMAC algorithm (the hash size, as Pulsar's generator).
func SecretKeySize(alg string) (int, error) {
	switch strings.ToUpper(alg) {
	case "HS256":
		return 32, nil
	case "HS384":
		return 48, nil
	case "HS512":
		return 64, nil
	}
	return 0, fmt.Errorf("auth: %q is not an HMAC algorithm (HS256, HS384, HS512)", alg)
}

// NewSecretKey returns a random HMAC key for alg.
func NewSecretKey(alg string) ([]byte, error) {
	n, err := SecretKeySize(alg)
	if err != nil {
		return nil, err
	}
	k := make([]byte, n)
	_, _ = rand.Read(k)
	return k, nil
}

// NewKeyPair makes a key pair for alg (RS256/384/512, PS*: RSA 2048;
// ES256/384/512: P-256/P-384/P-521; EdDSA) and returns the private key as
// PKCS#8 DER and the public key as X.509 SubjectPublicKeyInfo DER, the
// formats of `pulsar tokens create-key-pair`.
func NewKeyPair(alg string) (priv, pub []byte, err error) {
	var k crypto.Signer
	switch a := strings.ToUpper(alg); {
	case strings.HasPrefix(a, "RS") || strings.HasPrefix(a, "PS"):
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	case a == "ES256":
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case a == "ES384":
		k, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case a == "ES512":
		k, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case a == "EDDSA":
		_, k, err = ed25519.GenerateKey(rand.Reader)
	default:
		return nil, nil, fmt.Errorf("auth: unsupported key-pair algorithm %q", alg)
	}
	if err != nil {
		return nil, nil, err
	}
	if priv, err = x509.MarshalPKCS8PrivateKey(k); err != nil {
		return nil, nil, err
	}
	if pub, err = x509.MarshalPKIXPublicKey(k.Public()); err != nil {
		return nil, nil, err
	}
	return priv, pub, nil
}

// TokenSpec describes a token to sign.
type TokenSpec struct {
	Subject string
	// Expires, if not zero, becomes the exp claim (epoch seconds).
	Expires time.Time
	// Alg is the signing algorithm; with a private key it must match the
	// key's family. Default HS256 for secret keys, RS256 / ES256 / EdDSA
	// by private key type.
	Alg string
	// Headers are extra JOSE header fields (e.g. "kid").
	Headers map[string]any
	// Claims are extra claims; sub and exp above win.
	Claims map[string]any
}

// CreateToken signs spec with a raw HMAC secret ([]byte) or a private
// key (crypto.Signer). The header carries only alg (and Headers), as
// Pulsar's tokens do.
func CreateToken(key any, spec TokenSpec) (string, error) {
	alg := strings.ToUpper(spec.Alg)
	if alg == "EDDSA" {
		alg = "EdDSA"
	}
	switch k := key.(type) {
	case []byte:
		if alg == "" {
			alg = "HS256"
		}
		if _, err := SecretKeySize(alg); err != nil {
			return "", err
		}
	case *rsa.PrivateKey:
		if alg == "" {
			alg = "RS256"
		}
		if !strings.HasPrefix(alg, "RS") && !strings.HasPrefix(alg, "PS") {
			return "", fmt.Errorf("auth: algorithm %s does not fit an RSA key", alg)
		}
	case *ecdsa.PrivateKey:
		want := map[int]string{256: "ES256", 384: "ES384", 521: "ES512"}[k.Curve.Params().BitSize]
		if alg == "" {
			alg = want
		}
		if alg != want {
			return "", fmt.Errorf("auth: algorithm %s does not fit a %s key (use %s)", alg, k.Curve.Params().Name, want)
		}
	case ed25519.PrivateKey:
		if alg == "" {
			alg = "EdDSA"
		}
		if alg != "EdDSA" {
			return "", fmt.Errorf("auth: algorithm %s does not fit an Ed25519 key", alg)
		}
	default:
		return "", fmt.Errorf("auth: unsupported signing key %T", key)
	}
	m := jwt.GetSigningMethod(alg)
	if m == nil {
		return "", fmt.Errorf("auth: unknown algorithm %q", alg)
	}
	if spec.Subject == "" {
		return "", fmt.Errorf("auth: token subject is empty")
	}
	claims := jwt.MapClaims{}
	for k, v := range spec.Claims {
		claims[k] = v
	}
	claims["sub"] = spec.Subject
	if !spec.Expires.IsZero() {
		claims["exp"] = spec.Expires.Unix()
	}
	t := jwt.NewWithClaims(m, claims)
	t.Header = map[string]any{"alg": alg}
	for k, v := range spec.Headers {
		if k != "alg" {
			t.Header[k] = v
		}
	}
	return t.SignedString(key)
}

// ParseDuration reads a token lifetime as `pulsar tokens create
// --expiry-time` does: a number and a unit, s (seconds), m or min
// (minutes), h (hours), d (days), w (weeks), y (years, 365 days); a
// Go duration such as "1h30m" works too.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i > 12 {
		return 0, fmt.Errorf("auth: bad duration %q (e.g. 30m, 1h, 3d, 1y)", s)
	}
	var n int64
	for _, c := range s[:i] {
		n = n*10 + int64(c-'0')
	}
	unit := map[string]time.Duration{
		"s": time.Second, "m": time.Minute, "min": time.Minute, "h": time.Hour,
		"d": 24 * time.Hour, "w": 7 * 24 * time.Hour, "y": 365 * 24 * time.Hour,
	}[strings.ToLower(s[i:])]
	if unit == 0 || n <= 0 {
		return 0, fmt.Errorf("auth: bad duration %q (e.g. 30m, 1h, 3d, 1y)", s)
	}
	if n > int64((1<<63-1)/unit) {
		return 0, fmt.Errorf("auth: duration %q too long", s)
	}
	return time.Duration(n) * unit, nil
}
