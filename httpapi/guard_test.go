package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
)

// fixture is a table served behind a guard with token authentication
// and authorization: superuser root, tenant acme administered by
// acme-admin, and a role reader with consume on acme/ns.
type fixture struct {
	key   []byte
	sec   *auth.Security
	srv   *httptest.Server
	calls chan string // role of each handler call
}

func newFixture(t *testing.T, anonymous string, lim Limits) *fixture {
	t.Helper()
	store, err := embedded.Open(filepath.Join(t.TempDir(), "m.db"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ctx := context.Background()
	for path, v := range map[string]any{
		"/admin/policies/acme":    map[string]any{"adminRoles": []string{"acme-admin"}},
		"/admin/policies/acme/ns": map[string]any{"auth_policies": map[string]any{"namespace_auth": map[string]any{"reader": []string{"consume"}}}},
	} {
		b, _ := json.Marshal(v)
		if _, err := store.Put(ctx, path, b, metadata.AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
	key, _ := auth.NewSecretKey("HS256")
	cfg := auth.DefaultConfig()
	cfg.AuthenticationEnabled, cfg.AuthorizationEnabled = true, true
	cfg.AuthenticationProviders = []string{"token"}
	cfg.TokenSecretKey = "data:;base64," + base64.StdEncoding.EncodeToString(key)
	cfg.SuperUserRoles = []string{"root"}
	cfg.AnonymousUserRole = anonymous
	sec, err := auth.New(cfg, store, "c1", nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{key: key, sec: sec, calls: make(chan string, 100)}
	h := func(w http.ResponseWriter, r *http.Request, _ Params) {
		if r.Body != nil {
			if _, err := io.ReadAll(r.Body); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
		}
		f.calls <- auth.RoleFromContext(r.Context())
		w.WriteHeader(http.StatusTeapot)
	}
	tb := NewTable()
	tb.Add(
		Route{Method: "GET", Pattern: "/admin/v2/clusters", Access: auth.AccessAny, Handler: h},
		Route{Method: "PUT", Pattern: "/admin/v2/tenants/{tenant}", Access: auth.AccessSuperUser, Handler: h},
		Route{Method: "GET", Pattern: "/admin/v2/tenants/{tenant}", Access: auth.AccessTenantAdmin, Handler: h},
		Route{Method: "GET", Pattern: "/admin/v2/namespaces/{tenant}/{ns}/topics", Access: auth.AccessNamespaceConsume, Handler: h},
		Route{Method: "GET", Pattern: "/admin/v2/namespaces/{cluster}/antiAffinity/{group}", Access: auth.AccessSuperUser, Handler: h},
		Route{Method: "POST", Pattern: "/admin/v2/namespaces/{tenant}/{ns}/permissions/{role}", Access: auth.AccessTenantAdmin, Handler: h},
		Route{Method: "POST", Pattern: "/admin/v3/functions/{tenant}/{namespace}/{name}", Access: auth.AccessFunctions,
			Consumes: []string{Multipart, JSON}, MaxBody: 4 << 20, Handler: h},
		Route{Method: "GET", Pattern: "/metrics", Access: auth.AccessMetrics, Handler: h},
		Route{Method: "GET", Pattern: "/status.html", Access: auth.AccessPublic, Handler: h},
	)
	hd, err := tb.Handler(Guard{Security: sec, Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(hd)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) token(t testing.TB, role string) string {
	tok, err := auth.CreateToken(f.key, auth.TokenSpec{Subject: role})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

type req struct {
	method, path, role, body, ctype string
	header                          map[string]string
}

// do sends r and returns the status and the reason of an error body.
func (f *fixture) do(t *testing.T, r req) (int, string) {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequest(r.method, f.srv.URL, body)
	if err != nil {
		t.Fatal(err)
	}
	hr.URL.Opaque = r.path // sent as is, bad escapes included
	if r.ctype != "" {
		hr.Header.Set("Content-Type", r.ctype)
	}
	if r.role != "" {
		hr.Header.Set("Authorization", "Bearer "+f.token(t, r.role))
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusTeapot {
		<-f.calls
		return resp.StatusCode, ""
	}
	var e struct{ Reason string }
	if err := json.Unmarshal(b, &e); err != nil || e.Reason == "" {
		t.Fatalf("%s %s: %d with body %q, not {\"reason\": ...}", r.method, r.path, resp.StatusCode, b)
	}
	return resp.StatusCode, e.Reason
}

// TestGuardAuthorizesByTheServingRoute: each request is authorized by
// the rule of the route that serves it; in particular the anti-affinity
// listing (superuser) is not reachable through a consume grant on a
// namespace named like its path.
func TestGuardAuthorizesByTheServingRoute(t *testing.T) {
	f := newFixture(t, "", Limits{})
	for _, c := range []struct {
		r    req
		want int
	}{
		{req{method: "GET", path: "/admin/v2/tenants/acme"}, 401},
		{req{method: "GET", path: "/admin/v2/tenants/acme", role: "reader"}, 403},
		{req{method: "GET", path: "/admin/v2/tenants/acme", role: "acme-admin"}, 418},
		// A tenant that does not exist: 404 before the role's rights, as Pulsar.
		{req{method: "GET", path: "/admin/v2/tenants/other", role: "acme-admin"}, 404},
		{req{method: "GET", path: "/admin/v2/namespaces/other/ns/topics", role: "reader"}, 404},
		{req{method: "PUT", path: "/admin/v2/tenants/acme", role: "acme-admin"}, 403},
		{req{method: "PUT", path: "/admin/v2/tenants/acme", role: "root"}, 418},
		{req{method: "GET", path: "/admin/v2/clusters", role: "nobody"}, 418},
		{req{method: "GET", path: "/admin/v2/namespaces/acme/ns/topics", role: "reader"}, 418},
		{req{method: "GET", path: "/admin/v2/namespaces/acme/antiAffinity/topics", role: "reader"}, 403},
		{req{method: "GET", path: "/admin/v2/namespaces/acme/antiAffinity/topics", role: "acme-admin"}, 403},
		{req{method: "GET", path: "/admin/v2/namespaces/acme/antiAffinity/topics", role: "root"}, 418},
		{req{method: "GET", path: "/metrics"}, 418},
		{req{method: "GET", path: "/status.html"}, 418},
		// Unknown paths: credentials first, then 404 or 405.
		{req{method: "GET", path: "/admin/v2/no/such"}, 401},
		{req{method: "GET", path: "/admin/v2/no/such", role: "reader"}, 404},
		{req{method: "DELETE", path: "/admin/v2/tenants/acme", role: "root"}, 405},
		// Bad credentials never fall back.
		{req{method: "GET", path: "/admin/v2/clusters", header: map[string]string{"Authorization": "Bearer not-a-jwt"}}, 401},
		// A non-proxy role naming an original principal.
		{req{method: "GET", path: "/admin/v2/clusters", role: "reader", header: map[string]string{auth.HeaderOriginalPrincipal: "root"}}, 401},
	} {
		if code, reason := f.do(t, c.r); code != c.want {
			t.Errorf("%s %s as %q: %d (%s), want %d", c.r.method, c.r.path, c.r.role, code, reason, c.want)
		}
	}
}

func TestGuardAnonymous(t *testing.T) {
	f := newFixture(t, "anon", Limits{})
	if code, _ := f.do(t, req{method: "GET", path: "/admin/v2/clusters"}); code != 418 {
		t.Fatalf("anonymous: %d", code)
	}
	if code, _ := f.do(t, req{method: "GET", path: "/admin/v2/clusters", header: map[string]string{"Authorization": "Bearer x"}}); code != 401 {
		t.Fatalf("invalid credentials fell back to anonymous: %d", code)
	}
	if code, _ := f.do(t, req{method: "GET", path: "/admin/v2/tenants/acme"}); code != 403 {
		t.Fatalf("anonymous tenant read: %d", code)
	}
}

// TestGuardCrossSite: a state-changing request from a browser on another
// origin is refused, as is a body the route does not take (a form or
// text/plain POST is what a cross-site page can send without a
// preflight); same-origin requests, non-browser clients and body-less
// writes pass.
func TestGuardCrossSite(t *testing.T) {
	f := newFixture(t, "", Limits{TrustedOrigins: []string{"https://console.example"}})
	grant := "/admin/v2/namespaces/acme/ns/permissions/bob"
	self := f.srv.URL
	for _, c := range []struct {
		name string
		r    req
		want int
	}{
		{"json, no origin", req{method: "POST", path: grant, role: "root", body: `["consume"]`, ctype: "application/json"}, 418},
		{"json with charset", req{method: "POST", path: grant, role: "root", body: `["consume"]`, ctype: "application/json; charset=utf-8"}, 418},
		{"text/plain", req{method: "POST", path: grant, role: "root", body: `["consume"]`, ctype: "text/plain"}, 415},
		{"form", req{method: "POST", path: grant, role: "root", body: `a=b`, ctype: "application/x-www-form-urlencoded"}, 415},
		{"multipart where JSON is taken", req{method: "POST", path: grant, role: "root", body: `--x--`, ctype: "multipart/form-data; boundary=x"}, 415},
		{"no content type", req{method: "POST", path: grant, role: "root", body: `["consume"]`}, 415},
		{"foreign origin", req{method: "POST", path: grant, role: "root", body: `["consume"]`, ctype: "application/json",
			header: map[string]string{"Origin": "https://evil.example"}}, 403},
		{"foreign origin, no body", req{method: "POST", path: grant, role: "root", header: map[string]string{"Origin": "https://evil.example"}}, 403},
		{"cross-site fetch metadata", req{method: "PUT", path: "/admin/v2/tenants/x", role: "root",
			header: map[string]string{"Sec-Fetch-Site": "cross-site"}}, 403},
		{"same origin", req{method: "POST", path: grant, role: "root", body: `["consume"]`, ctype: "application/json",
			header: map[string]string{"Origin": self, "Sec-Fetch-Site": "same-origin"}}, 418},
		{"trusted origin", req{method: "POST", path: grant, role: "root", body: `["consume"]`, ctype: "application/json",
			header: map[string]string{"Origin": "https://console.example"}}, 418},
		{"same-origin body-less write", req{method: "PUT", path: "/admin/v2/tenants/x", role: "root",
			header: map[string]string{"Origin": self, "Sec-Fetch-Site": "same-origin"}}, 418},
		{"foreign origin GET", req{method: "GET", path: "/admin/v2/clusters", role: "root",
			header: map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}}, 418},
		{"multipart upload", req{method: "POST", path: "/admin/v3/functions/acme/ns/f", role: "acme-admin", body: "--x--\r\n",
			ctype: "multipart/form-data; boundary=x"}, 418},
	} {
		if code, reason := f.do(t, c.r); code != c.want {
			t.Errorf("%s: %d (%s), want %d", c.name, code, reason, c.want)
		}
	}
}

// TestGuardBodyLimits: a body over the route's limit is refused whole
// from its Content-Length, and a chunked one once it passes the limit,
// before the handler runs; httpMaxRequestSize lowers every limit.
func TestGuardBodyLimits(t *testing.T) {
	f := newFixture(t, "", Limits{})
	big := `["` + strings.Repeat("x", MaxRequestBody) + `"]`
	grant := "/admin/v2/namespaces/acme/ns/permissions/bob"
	if code, _ := f.do(t, req{method: "POST", path: grant, role: "root", body: big, ctype: JSON}); code != 413 {
		t.Fatalf("declared body over 1 MiB: %d", code)
	}
	hr, _ := http.NewRequest("POST", f.srv.URL+grant, io.MultiReader(strings.NewReader(big)))
	hr.ContentLength = -1
	hr.Header.Set("Content-Type", JSON)
	hr.Header.Set("Authorization", "Bearer "+f.token(t, "root"))
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("chunked body over 1 MiB: %d", resp.StatusCode)
	}
	// The package route takes 4 MiB here.
	if code, _ := f.do(t, req{method: "POST", path: "/admin/v3/functions/acme/ns/f", role: "root", body: big, ctype: JSON}); code != 418 {
		t.Fatalf("package route: %d", code)
	}
	g := newFixture(t, "", Limits{MaxRequestSize: 1000})
	if code, _ := g.do(t, req{method: "POST", path: "/admin/v3/functions/acme/ns/f", role: "root", body: big[:2000], ctype: JSON}); code != 413 {
		t.Fatalf("httpMaxRequestSize: %d", code)
	}
}

// TestGuardRateAndConcurrency: with httpRequestsLimitEnabled excess
// requests get 429.
func TestGuardRateAndConcurrency(t *testing.T) {
	f := newFixture(t, "", Limits{RequestsLimitEnabled: true, RequestsMaxPerSecond: 1})
	codes := map[int]int{}
	for range 5 {
		code, _ := f.do(t, req{method: "GET", path: "/status.html"})
		codes[code]++
	}
	if codes[418] < 1 || codes[429] < 3 {
		t.Fatalf("codes %v, want one or two served and the rest 429", codes)
	}
}
