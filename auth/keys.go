package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ReadKey resolves a key setting the way Pulsar's tokenSecretKey,
// tokenPublicKey and the tokens CLI do, trying in order:
//
//	data:;base64,<b64>   the decoded bytes
//	file:///abs/path     the file's bytes
//	an existing path     the file's bytes
//	valid base64         the decoded bytes
//
// anything else is an error.
func ReadKey(spec string) ([]byte, error) {
	spec = strings.TrimSpace(spec)
	switch {
	case spec == "":
		return nil, errors.New("auth: empty key setting")
	case strings.HasPrefix(spec, "data:"):
		i := strings.Index(spec, ",")
		if i < 0 || !strings.HasSuffix(spec[:i], ";base64") {
			return nil, errors.New("auth: data: key must be data:;base64,<base64>")
		}
		b, err := base64.StdEncoding.DecodeString(spec[i+1:])
		if err != nil {
			return nil, fmt.Errorf("auth: data: key: %w", err)
		}
		return b, nil
	case strings.HasPrefix(spec, "file://"):
		b, err := os.ReadFile(strings.TrimPrefix(spec, "file://"))
		if err != nil {
			return nil, fmt.Errorf("auth: key file: %w", err)
		}
		return b, nil
	}
	if b, err := os.ReadFile(spec); err == nil {
		return b, nil
	}
	if b, err := base64.StdEncoding.DecodeString(spec); err == nil && len(b) > 0 {
		return b, nil
	}
	return nil, fmt.Errorf("auth: key %q is neither an existing file nor base64", abbreviate(spec))
}

// abbreviate keeps error messages from echoing a whole (secret) value.
func abbreviate(s string) string {
	if len(s) > 12 {
		return s[:12] + "..."
	}
	return s
}

// ParsePublicKey reads an X.509 SubjectPublicKeyInfo, DER (Pulsar's
// format) or PEM ("PUBLIC KEY"), RSA, ECDSA or Ed25519.
func ParsePublicKey(b []byte) (crypto.PublicKey, error) {
	if blk, _ := pem.Decode(b); blk != nil {
		b = blk.Bytes
	}
	k, err := x509.ParsePKIXPublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("auth: public key: %w", err)
	}
	switch k.(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
		return k, nil
	}
	return nil, fmt.Errorf("auth: public key: unsupported type %T", k)
}

// ParsePrivateKey reads a PKCS#8 private key, DER (Pulsar's format) or
// PEM ("PRIVATE KEY"); PEM "RSA PRIVATE KEY" (PKCS#1) and "EC PRIVATE
// KEY" (SEC 1) are accepted too.
func ParsePrivateKey(b []byte) (crypto.Signer, error) {
	typ := ""
	if blk, _ := pem.Decode(b); blk != nil {
		b, typ = blk.Bytes, blk.Type
	}
	var k any
	var err error
	switch typ {
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(b)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(b)
	default:
		k, err = x509.ParsePKCS8PrivateKey(b)
	}
	if err != nil {
		return nil, fmt.Errorf("auth: private key: %w", err)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("auth: private key: unsupported type %T", k)
	}
	return s, nil
}
