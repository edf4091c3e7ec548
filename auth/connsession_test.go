package auth

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"
)

// connSecurity is token authentication with proxy role "proxy" and
// authenticateOriginalAuthData on.
func connSecurity(t *testing.T) (*Security, []byte) {
	t.Helper()
	key := hsKey(t)
	cfg := DefaultConfig()
	for k, v := range map[string]string{
		"authenticationEnabled": "true", "authenticationProviders": "token",
		"tokenSecretKey": "data:;base64," + base64.StdEncoding.EncodeToString(key),
		"proxyRoles":     "proxy", "authenticateOriginalAuthData": "true",
	} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	s, err := New(cfg, nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, key
}

// TestConnSessionRefresh: an expiring credential is challenged once,
// closed if the challenge stays unanswered, and a refresh keeps the
// method and role.
func TestConnSessionRefresh(t *testing.T) {
	s, key := connSecurity(t)
	now := time.Now()
	tok := func(sub string, exp time.Time) []byte {
		return []byte(mustToken(t, key, TokenSpec{Subject: sub, Expires: exp}))
	}
	for _, refresh := range []bool{true, false} {
		cs, err := s.Connect(ConnectRequest{Method: MethodToken, Data: tok("alice", now.Add(time.Hour)), SupportsRefresh: refresh})
		if err != nil {
			t.Fatal(err)
		}
		if r := cs.Roles(); len(r) != 1 || r[0] != "alice" {
			t.Fatalf("roles %v", r)
		}
		if step, _ := cs.Check(now); step != RefreshNone {
			t.Fatalf("valid credentials: step %v", step)
		}
		later := now.Add(2 * time.Hour)
		if !refresh {
			if step, _ := cs.Check(later); step != RefreshClose {
				t.Fatalf("expired, cannot refresh: step %v", step)
			}
			continue
		}
		if step, id := cs.Check(later); step != RefreshChallenge || id.Method != MethodToken {
			t.Fatalf("expired: step %v, %+v", step, id)
		}
		if step, _ := cs.Check(later); step != RefreshClose {
			t.Fatalf("challenge unanswered: step %v", step)
		}
		if _, err := cs.Refresh("basic", tok("alice", later.Add(time.Hour)), later); err == nil {
			t.Fatal("refresh with another method accepted")
		}
		if _, err := cs.Refresh(MethodToken, tok("bob", later.Add(time.Hour)), later); err == nil {
			t.Fatal("refresh with another role accepted")
		}
		if _, err := cs.Refresh(MethodToken, tok("alice", later.Add(time.Hour)), later); err != nil {
			t.Fatal(err)
		}
		if step, _ := cs.Check(later); step != RefreshNone {
			t.Fatalf("refreshed: step %v", step)
		}
	}
}

// TestConnSessionOriginalPrincipal: only a proxy role names an original
// principal, whose forwarded credentials must be its own; a refusal
// wraps ErrInvalidRoles, a failed authentication does not.
func TestConnSessionOriginalPrincipal(t *testing.T) {
	s, key := connSecurity(t)
	tok := func(sub string) []byte { return []byte(mustToken(t, key, TokenSpec{Subject: sub})) }
	cs, err := s.Connect(ConnectRequest{Method: MethodToken, Data: tok("proxy"), OriginalPrincipal: "alice",
		OriginalMethod: MethodToken, OriginalData: tok("alice")})
	if err != nil {
		t.Fatal(err)
	}
	if r := cs.Roles(); len(r) != 2 || r[0] != "alice" || r[1] != "proxy" {
		t.Fatalf("roles %v", r)
	}
	for name, r := range map[string]ConnectRequest{
		"non-proxy names one": {Method: MethodToken, Data: tok("bob"), OriginalPrincipal: "alice"},
		"proxy names none":    {Method: MethodToken, Data: tok("proxy")},
		"forwarded for bob": {Method: MethodToken, Data: tok("proxy"), OriginalPrincipal: "alice",
			OriginalMethod: MethodToken, OriginalData: tok("bob")},
	} {
		if _, err := s.Connect(r); !errors.Is(err, ErrInvalidRoles) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := s.Connect(ConnectRequest{Method: MethodToken, Data: []byte("garbage")}); err == nil || errors.Is(err, ErrInvalidRoles) {
		t.Errorf("bad token: %v", err)
	}
	var off *Security
	if cs, err := off.Connect(ConnectRequest{}); cs != nil || err != nil {
		t.Errorf("authentication off: %v, %v", cs, err)
	}
}
