package auth

import (
	"errors"
	"testing"
)

func TestCheckOriginalPrincipal(t *testing.T) {
	s := &Security{Config: Config{ProxyRoles: []string{"proxy", "proxy2"}}}
	for _, c := range []struct {
		role, original string
		http, ok       bool
	}{
		{"proxy", "alice", false, true},
		{"proxy", "", false, false},       // a proxy must name its client
		{"proxy", "proxy2", false, false}, // ... which is not a proxy
		{"alice", "", false, true},        // a plain client
		{"alice", "admin", false, false},  // spoofing
		{"alice", "alice", false, false},  // binary: never from a non-proxy role
		{"alice", "alice", true, true},    // HTTP: itself is allowed
		{"alice", "admin", true, false},   // HTTP spoofing
		{"", "admin", false, false},       // anonymous
		{"proxy", "alice", true, true},    // HTTP proxy
		{"proxy", "", true, false},        // HTTP proxy without header
		{"proxy2", "proxy", false, false}, // proxy naming a proxy
		{"Proxy", "alice", false, false},  // roles are case-sensitive
		{"proxy ", "alice", false, false}, // and exact
		{"proxy", " alice", false, true},  // the principal is taken as given
		{"proxy", "\x00", false, true},    // any non-empty string
		{"alice", "\x00", false, false},
	} {
		err := s.CheckOriginalPrincipal(c.role, c.original, c.http)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInvalidRoles)) {
			t.Errorf("(%q, %q, http=%v): %v, want ok=%v", c.role, c.original, c.http, err, c.ok)
		}
	}
	var none *Security
	if none.IsProxyRole("proxy") {
		t.Fatal("nil security has proxy roles")
	}
	if got := AuthorizedRoles("proxy", "alice"); len(got) != 2 || got[0] != "alice" || got[1] != "proxy" {
		t.Fatalf("AuthorizedRoles = %v", got)
	}
	if got := AuthorizedRoles("alice", ""); len(got) != 1 || got[0] != "alice" {
		t.Fatalf("AuthorizedRoles = %v", got)
	}
}
