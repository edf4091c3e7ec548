package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConsoleSecurityE2E: with authentication and authorization on, the
// console is behind them like the admin API: no token is 401, the
// overview needs a superuser, a topic page needs produce or consume on
// the topic, and the admin calls the page's actions make are refused to
// a role without consume.
func TestConsoleSecurityE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "secret.key")
	runMain(t, false, "tokens", "create-secret-key", "-o", key)
	tokenOf := func(role string) string {
		return strings.TrimSpace(runMain(t, false, "tokens", "create", "--secret-key", "file://"+key, "-s", role))
	}
	adminTok, bobTok, carolTok := tokenOf("admin"), tokenOf("bob"), tokenOf("carol")
	conf := filepath.Join(dir, "standalone.conf")
	if err := os.WriteFile(conf, []byte(strings.Join([]string{
		"authenticationEnabled=true",
		"authorizationEnabled=true",
		"authenticationProviders=org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
		"tokenSecretKey=file://" + key,
		"superUserRoles=admin",
	}, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startStandalone(t, filepath.Join(dir, "data"), "--config", conf)
	call := func(method, path, tok string) int {
		t.Helper()
		req, err := http.NewRequest(method, p.http+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	const tp = "/admin/v2/persistent/public/default/guarded"
	if code := call("PUT", tp, adminTok); code != 204 {
		t.Fatalf("create topic: %d", code)
	}
	if code := call("PUT", tp+"/subscription/s1", adminTok); code != 204 {
		t.Fatalf("create subscription: %d", code)
	}
	runMain(t, false, "admin", "--admin-url", p.http, "--auth-plugin", "token", "--auth-params", "token:"+adminTok,
		"namespaces", "grant-permission", "public/default", "--role", "bob", "--actions", "produce")

	page := "/console/topics/persistent/public/default/guarded"
	for _, c := range []struct {
		method, path, tok string
		want              int
	}{
		{"GET", "/console", "", 401},
		{"GET", page, "", 401},
		{"GET", "/console/static/console.css", "", 401},
		{"GET", "/console", bobTok, 403},
		{"GET", "/console/bookies", bobTok, 403},
		{"GET", "/console/tenants/public", bobTok, 403},
		{"GET", "/console/namespaces/public/default", bobTok, 403}, // listing needs consume
		{"GET", page, bobTok, 200},                                 // produce may look the topic up
		{"GET", page + "/history", bobTok, 200},
		{"GET", page, carolTok, 403},
		{"GET", "/console/static/console.js", carolTok, 200},
		// The page's actions are admin calls: bob (produce only) may not
		// skip, reset or delete.
		{"POST", tp + "/subscription/s1/skip_all", bobTok, 403},
		{"DELETE", tp + "/subscription/s1", bobTok, 403},
		{"GET", "/console", adminTok, 200},
		{"GET", "/console/namespaces/public/default", adminTok, 200},
		{"GET", page, adminTok, 200},
		{"GET", "/console/topics/persistent/public/default/missing", adminTok, 404},
		{"POST", tp + "/subscription/s1/skip_all", adminTok, 204},
	} {
		if code := call(c.method, c.path, c.tok); code != c.want {
			t.Errorf("%s %s as %q: HTTP %d, want %d", c.method, c.path, roleOf(c.tok, adminTok, bobTok, carolTok), code, c.want)
		}
	}
	p.stop()
}

func roleOf(tok, admin, bob, carol string) string {
	switch tok {
	case admin:
		return "admin"
	case bob:
		return "bob"
	case carol:
		return "carol"
	}
	return "anonymous"
}
