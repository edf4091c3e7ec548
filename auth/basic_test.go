package auth

import (
	"bytes"
	"encoding/base64"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// TestBasicPulsarFile loads the htpasswd file pulsar-client-go's test
// broker ships (APR1-MD5) plus a crypt and a bcrypt user through New,
// as the broker does: all three log in, and start-up warns once about
// the two weak hashes, naming them.
func TestBasicPulsarFile(t *testing.T) {
	bc, _ := bcrypt.GenerateFromPassword([]byte("strong"), bcrypt.MinCost)
	file := "admin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.\nold:abl0JrMf6tlhw\nnew:" + string(bc) + "\n"
	cfg := DefaultConfig()
	for k, v := range map[string]string{
		"authenticationEnabled":   "true",
		"authenticationProviders": "org.apache.pulsar.broker.authentication.AuthenticationProviderBasic",
		"basicAuthConf":           "data:;base64," + base64.StdEncoding.EncodeToString([]byte(file)),
	} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	var logs bytes.Buffer
	s, err := New(cfg, nil, "", slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	for _, up := range []string{"admin:123456", "old:hello", "new:strong"} {
		if id, err := s.AuthenticateConnect(MethodBasic, []byte(up), nil, "test"); err != nil || id.Role != strings.Split(up, ":")[0] {
			t.Errorf("%s: %+v, %v", up, id, err)
		}
	}
	for _, up := range []string{"admin:1234567", "old:hellO", "new:weak", "nobody:123456"} {
		if _, err := s.AuthenticateConnect(MethodBasic, []byte(up), nil, "test"); !errors.Is(err, ErrAuthentication) {
			t.Errorf("%s accepted: %v", up, err)
		}
	}
	out := logs.String()
	if n := strings.Count(out, "weak password hashes"); n != 1 || !strings.Contains(out, "admin (apr1-md5), old (crypt)") || strings.Contains(out, "new (") {
		t.Errorf("start-up warning: %q", out)
	}
}

// TestBasicBadHashStopsStartup: a hash in no known form is an error at
// start naming the line, not a user who can never log in.
func TestBasicBadHashStopsStartup(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Set("authenticationEnabled", "true")
	cfg.Set("authenticationProviders", "basic")
	cfg.Set("basicAuthConf", "data:;base64,"+base64.StdEncoding.EncodeToString([]byte("a:abl0JrMf6tlhw\nb:{SHA}fEqNCco3Yq9h5ZUglD3CZJT4lBs=\n")))
	_, err := New(cfg, nil, "", nil)
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "basicAuthConf") {
		t.Fatalf("New = %v, want an error naming basicAuthConf and line 2", err)
	}
}
