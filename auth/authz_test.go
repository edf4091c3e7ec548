package auth

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
)

func openStore(t *testing.T) metadata.Store {
	t.Helper()
	s, err := embedded.Open(filepath.Join(t.TempDir(), "m.db"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func put(t *testing.T, s metadata.Store, path string, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	if _, err := s.Put(context.Background(), path, b, metadata.AnyVersion); err != nil {
		t.Fatal(err)
	}
}

// seed makes tenants acme (admin: acme-admin, cluster c1) and closed
// (allowed clusters: other only), and namespaces acme/ns, closed/ns with
// an unrelated policy field that grants must preserve.
func seed(t *testing.T) (*Authorizer, metadata.Store) {
	s := openStore(t)
	put(t, s, "/admin/policies/acme", map[string]any{"adminRoles": []string{"acme-admin"}, "allowedClusters": []string{"c1"}})
	put(t, s, "/admin/policies/acme/ns", map[string]any{"replication_clusters": []string{"c1"}, "message_ttl_in_seconds": 60})
	put(t, s, "/admin/policies/closed", map[string]any{"adminRoles": []string{"closed-admin"}, "allowedClusters": []string{"other"}})
	put(t, s, "/admin/policies/closed/ns", map[string]any{"auth_policies": map[string]any{"namespace_auth": map[string]any{"bob": []string{"produce", "consume"}}}})
	return NewAuthorizer(AuthorizerConfig{Store: s, SuperUsers: []string{"root", " "}, Cluster: "c1"}), s
}

func topicRef(t *testing.T, s string) TopicRef {
	t.Helper()
	r, err := ParseTopic(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestAuthorizerRoles(t *testing.T) {
	az, _ := seed(t)
	ctx := context.Background()
	tp := topicRef(t, "persistent://acme/ns/t1")
	check := func(role string, wantProduce, wantLookup bool, wantConsume bool) {
		t.Helper()
		if ok, err := az.CanProduce(ctx, role, tp); err != nil || ok != wantProduce {
			t.Errorf("%q produce = %v %v", role, ok, err)
		}
		if ok, err := az.CanLookup(ctx, role, tp); err != nil || ok != wantLookup {
			t.Errorf("%q lookup = %v %v", role, ok, err)
		}
		if err := az.CanConsume(ctx, role, tp, "sub"); (err == nil) != wantConsume {
			t.Errorf("%q consume = %v", role, err)
		}
	}
	check("root", true, true, true)
	check("acme-admin", true, true, true)
	check("bob", false, false, false)
	check("", false, false, false)
	check(" ", false, false, false)
	if err := az.GrantNamespace(ctx, "acme/ns", "bob", []string{"produce"}); err != nil {
		t.Fatal(err)
	}
	check("bob", true, true, false)
	if err := az.GrantTopic(ctx, tp, "carol", []string{"consume"}); err != nil {
		t.Fatal(err)
	}
	check("carol", false, true, true)
	// A grant on the partitioned parent covers the partitions, not the
	// other way round; a grant on t1 does not cover t10.
	if ok, _ := az.CanLookup(ctx, "carol", topicRef(t, "persistent://acme/ns/t1-partition-3")); !ok {
		t.Error("parent grant does not cover partition")
	}
	if ok, _ := az.CanLookup(ctx, "carol", topicRef(t, "persistent://acme/ns/t10")); ok {
		t.Error("grant on t1 covers t10")
	}
	if ok, _ := az.CanLookup(ctx, "carol", topicRef(t, "non-persistent://acme/ns/t1")); ok {
		t.Error("persistent grant covers non-persistent")
	}
	// Revoke.
	if err := az.RevokeNamespace(ctx, "acme/ns", "bob"); err != nil {
		t.Fatal(err)
	}
	check("bob", false, false, false)
	if err := az.RevokeTopic(ctx, tp, "nobody"); !errors.Is(err, ErrNoGrant) {
		t.Fatalf("revoke of a missing grant: %v", err)
	}
	// A tenant closed to this cluster: its admin and grantees get nothing.
	cl := topicRef(t, "persistent://closed/ns/x")
	if ok, _ := az.CanProduce(ctx, "bob", cl); ok {
		t.Error("grant honoured on a tenant not allowed in this cluster")
	}
	if ok, _ := az.IsTenantAdmin(ctx, "closed-admin", "closed"); ok {
		t.Error("tenant admin honoured on a tenant not allowed in this cluster")
	}
	if ok, _ := az.CanProduce(ctx, "root", cl); !ok {
		t.Error("superuser refused")
	}
	// Unknown tenant / namespace: denied, no error.
	if ok, err := az.CanProduce(ctx, "bob", topicRef(t, "persistent://ghost/ns/x")); ok || err != nil {
		t.Errorf("ghost tenant: %v %v", ok, err)
	}
}

func TestGrantsPreserveOtherPolicies(t *testing.T) {
	az, s := seed(t)
	ctx := context.Background()
	if err := az.GrantNamespace(ctx, "acme/ns", "bob", []string{"consume", "produce", "consume"}); err != nil {
		t.Fatal(err)
	}
	if err := az.GrantNamespace(ctx, "acme/ns", "bob", []string{"fly"}); err == nil {
		t.Fatal("unknown action accepted")
	}
	if err := az.GrantNamespace(ctx, "acme/missing", "bob", []string{"consume"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing namespace: %v", err)
	}
	if err := az.SetSubscriptionAuthMode(ctx, "acme/ns", "Prefix"); err != nil {
		t.Fatal(err)
	}
	if err := az.SetSubscriptionAuthMode(ctx, "acme/ns", "prefix"); err == nil {
		t.Fatal("bad mode accepted")
	}
	raw, _, _ := s.Get(ctx, "/admin/policies/acme/ns")
	var doc map[string]any
	_ = json.Unmarshal(raw, &doc)
	if doc["message_ttl_in_seconds"] != float64(60) || doc["subscription_auth_mode"] != "Prefix" {
		t.Fatalf("policy document %s", raw)
	}
	ap, mode, err := az.Permissions(ctx, "acme/ns")
	if err != nil || mode != "Prefix" || strings.Join(ap.NamespaceAuth["bob"], ",") != "consume,produce" {
		t.Fatalf("%+v %s %v", ap, mode, err)
	}
}

func TestSubscriptionRules(t *testing.T) {
	az, _ := seed(t)
	ctx := context.Background()
	tp := topicRef(t, "persistent://acme/ns/t")
	_ = az.GrantNamespace(ctx, "acme/ns", "bob", []string{"consume"})
	_ = az.GrantNamespace(ctx, "acme/ns", "eve", []string{"consume"})
	if err := az.GrantSubscription(ctx, "acme/ns", "shared", []string{"bob"}); err != nil {
		t.Fatal(err)
	}
	if err := az.CanConsume(ctx, "bob", tp, "shared"); err != nil {
		t.Error(err)
	}
	if err := az.CanConsume(ctx, "eve", tp, "shared"); !errors.Is(err, ErrAuthorization) {
		t.Errorf("eve on bob's subscription: %v", err)
	}
	if err := az.CanConsume(ctx, "eve", tp, "free"); err != nil {
		t.Errorf("unrestricted subscription: %v", err)
	}
	_ = az.SetSubscriptionAuthMode(ctx, "acme/ns", SubAuthPrefix)
	err := az.CanConsume(ctx, "eve", tp, "free")
	if !errors.Is(err, ErrAuthorization) || !strings.Contains(err.Error(), "prefixed by the authentication role") {
		t.Errorf("prefix mode: %v", err)
	}
	if err := az.CanConsume(ctx, "eve", tp, "eve-sub"); err != nil {
		t.Errorf("prefixed name: %v", err)
	}
	if err := az.CanConsume(ctx, "acme-admin", tp, "whatever"); err != nil {
		t.Errorf("tenant admin under prefix mode: %v", err)
	}
	if err := az.RevokeSubscription(ctx, "acme/ns", "shared", "bob"); err != nil {
		t.Fatal(err)
	}
	if err := az.RevokeSubscription(ctx, "acme/ns", "shared", "bob"); !errors.Is(err, ErrNoGrant) {
		t.Fatal(err)
	}
}

func TestWildcards(t *testing.T) {
	s := openStore(t)
	put(t, s, "/admin/policies/a", map[string]any{"adminRoles": []string{}})
	put(t, s, "/admin/policies/a/ns", map[string]any{"auth_policies": map[string]any{"namespace_auth": map[string]any{
		"app-*": []string{"produce"}, "*-ops": []string{"consume"}, "mid*dle": []string{"produce"}}}})
	tp := topicRef(t, "a/ns/t")
	ctx := context.Background()
	off := NewAuthorizer(AuthorizerConfig{Store: s})
	on := NewAuthorizer(AuthorizerConfig{Store: s, Wildcards: true})
	for role, want := range map[string]bool{"app-1": true, "x-ops": true, "app": false, "middle": false, "mid*dle": true} {
		if ok, _ := on.CanLookup(ctx, role, tp); ok != want {
			t.Errorf("wildcards on, %s: %v", role, ok)
		}
		if ok, _ := off.CanLookup(ctx, role, tp); ok != (role == "mid*dle") {
			t.Errorf("wildcards off, %s: %v", role, ok)
		}
	}
}

func TestParseTopic(t *testing.T) {
	for in, want := range map[string]string{
		"t":                      "persistent://public/default/t",
		"a/b/c":                  "persistent://a/b/c",
		"non-persistent://a/b/c": "non-persistent://a/b/c",
		"persistent://a/b/c/d":   "persistent://a/b/c/d",
	} {
		if got, err := ParseTopic(in); err != nil || got.String() != want {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	for _, in := range []string{"", "a/b", "x://a/b/c", "persistent://a//c", "/b/c"} {
		if _, err := ParseTopic(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	if p := topicRef(t, "a/b/t-partition-2147483648").Parent().Local; p != "t-partition-2147483648" {
		t.Errorf("out-of-range partition index stripped: %s", p)
	}
}

func TestBasicProvider(t *testing.T) {
	h, _ := bcrypt.GenerateFromPassword([]byte("s3cret:with:colons"), bcrypt.MinCost)
	p, err := ParseHtpasswd([]byte("# users\n\nalice:" + string(h) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if id, err := p.Authenticate(Credentials{Data: []byte("alice:s3cret:with:colons")}); err != nil || id.Role != "alice" {
		t.Fatalf("%+v %v", id, err)
	}
	for _, d := range []string{"alice:wrong", "bob:s3cret:with:colons", "alice", ":x", ""} {
		if _, err := p.Authenticate(Credentials{Data: []byte(d)}); !errors.Is(err, ErrAuthentication) {
			t.Errorf("%q: %v", d, err)
		}
	}
	for _, f := range []string{"admin:{SHA}fEqNCco3Yq9h5ZUglD3CZJT4lBs=", "nocolon", "", "a:b:c", ":" + string(h)} {
		if _, err := ParseHtpasswd([]byte(f)); err == nil {
			t.Errorf("%q accepted", f)
		}
	}
}

func TestSetSuperUsers(t *testing.T) {
	a := NewAuthorizer(AuthorizerConfig{SuperUsers: []string{"admin"}})
	a.SetSuperUsers([]string{" bob ", ""})
	if !a.IsSuperUser("bob") || a.IsSuperUser("admin") || a.IsSuperUser("") {
		t.Fatalf("after SetSuperUsers(bob): bob %v admin %v", a.IsSuperUser("bob"), a.IsSuperUser("admin"))
	}
	a.SetSuperUsers(nil)
	if a.IsSuperUser("bob") {
		t.Fatal("bob still a superuser with no roles")
	}
}
