package auth

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/testcert"
)

type httpFixture struct {
	sec   *Security
	srv   *httptest.Server
	key   []byte
	roles chan string
}

func newHTTPFixture(t *testing.T, anonymous string) *httpFixture {
	t.Helper()
	_, store := seed(t)
	k := hsKey(t)
	cfg := DefaultConfig()
	cfg.AuthenticationEnabled, cfg.AuthorizationEnabled = true, true
	cfg.AuthenticationProviders = []string{"org.apache.pulsar.broker.authentication.AuthenticationProviderToken"}
	cfg.TokenSecretKey = "data:;base64," + b64(k)
	cfg.SuperUserRoles = []string{"root"}
	cfg.AnonymousUserRole = anonymous
	sec, err := New(cfg, store, "c1", nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &httpFixture{sec: sec, key: k, roles: make(chan string, 100)}
	f.srv = httptest.NewServer(sec.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.roles <- RoleFromContext(r.Context())
		w.WriteHeader(http.StatusTeapot)
	})))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *httpFixture) do(t *testing.T, method, path, role, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if role != "" {
		req.Header.Set("Authorization", "Bearer "+mustToken(t, f.key, TokenSpec{Subject: role}))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func reasonOf(t *testing.T, body string) string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal([]byte(body), &m); err != nil || m["reason"] == "" {
		t.Fatalf("body %q is not {\"reason\": ...}", body)
	}
	return m["reason"]
}

func TestHTTP401vs403(t *testing.T) {
	f := newHTTPFixture(t, "")
	// No credentials, no anonymous role: 401.
	code, body := f.do(t, "GET", "/admin/v2/tenants/acme", "", "")
	if code != 401 || reasonOf(t, body) != "Authentication required" {
		t.Fatalf("%d %s", code, body)
	}
	// Bad token: 401, never a fallback.
	req, _ := http.NewRequest("GET", f.srv.URL+"/admin/v2/clusters", nil)
	req.Header.Set("Authorization", "Bearer not-a-jwt")
	resp, _ := http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("bad token: %d", resp.StatusCode)
	}
	// Authenticated but not allowed: 403 with a reason.
	code, body = f.do(t, "GET", "/admin/v2/tenants/acme", "bob", "")
	if code != 403 || !strings.Contains(reasonOf(t, body), "not authorized") {
		t.Fatalf("%d %s", code, body)
	}
	// Allowed: reaches the API with the role.
	if code, _ := f.do(t, "GET", "/admin/v2/tenants/acme", "acme-admin", ""); code != http.StatusTeapot || <-f.roles != "acme-admin" {
		t.Fatalf("tenant admin: %d", code)
	}
	// Open endpoints.
	if code, _ := f.do(t, "GET", "/admin/v2/clusters", "bob", ""); code != http.StatusTeapot {
		t.Fatalf("clusters: %d", code)
	}
	<-f.roles
	if code, _ := f.do(t, "GET", "/metrics", "", ""); code != http.StatusTeapot {
		t.Fatalf("metrics: %d", code)
	}
	<-f.roles
	// Unknown path: superuser only.
	if code, _ := f.do(t, "GET", "/admin/v2/some/new/endpoint/x/y/z/w", "acme-admin", ""); code != 403 {
		t.Fatalf("unknown path: %d", code)
	}
}

func TestHTTPAnonymous(t *testing.T) {
	f := newHTTPFixture(t, "anon")
	if code, _ := f.do(t, "GET", "/admin/v2/clusters", "", ""); code != http.StatusTeapot || <-f.roles != "anon" {
		t.Fatalf("anonymous: %d", code)
	}
	req, _ := http.NewRequest("GET", f.srv.URL+"/admin/v2/clusters", nil)
	req.Header.Set("Authorization", "Bearer not-a-jwt")
	resp, _ := http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("invalid credentials fell back to anonymous: %d", resp.StatusCode)
	}
}

func TestHTTPPermissionEndpoints(t *testing.T) {
	f := newHTTPFixture(t, "")
	tp := "/admin/v2/persistent/acme/ns/t1"
	// bob cannot grant himself anything.
	if code, _ := f.do(t, "POST", "/admin/v2/namespaces/acme/ns/permissions/bob", "bob", `["produce"]`); code != 403 {
		t.Fatalf("self-grant: %d", code)
	}
	if code, _ := f.do(t, "GET", tp+"/stats", "bob", ""); code != 403 {
		t.Fatalf("stats before grant: %d", code)
	}
	if code, b := f.do(t, "POST", "/admin/v2/namespaces/acme/ns/permissions/bob", "acme-admin", `["produce","consume"]`); code != 204 {
		t.Fatalf("grant: %d %s", code, b)
	}
	if code, b := f.do(t, "POST", "/admin/v2/namespaces/acme/ns/permissions/bob", "acme-admin", `["fly"]`); code != 412 {
		t.Fatalf("bad action: %d %s", code, b)
	}
	if code, b := f.do(t, "POST", "/admin/v2/namespaces/acme/nope/permissions/bob", "root", `["consume"]`); code != 404 {
		t.Fatalf("missing namespace: %d %s", code, b)
	}
	code, body := f.do(t, "GET", "/admin/v2/namespaces/acme/ns/permissions", "acme-admin", "")
	if code != 200 || strings.TrimSpace(body) != `{"bob":["consume","produce"]}` {
		t.Fatalf("list: %d %s", code, body)
	}
	if code, _ := f.do(t, "GET", tp+"/stats", "bob", ""); code != http.StatusTeapot {
		t.Fatalf("stats after grant: %d", code)
	}
	<-f.roles
	// Produce/consume grants never open management endpoints (CVE-2024-28098).
	for _, ep := range [][2]string{{"PUT", tp + "/unload"}, {"POST", tp + "/terminate"}, {"POST", tp + "/retention"},
		{"PUT", tp + "/subscription/s"}, {"POST", "/admin/v2/namespaces/acme/ns/messageTTL"}, {"PUT", tp}, {"DELETE", tp},
		{"PUT", "/admin/v2/namespaces/acme/ns2"}, {"GET", "/admin/v2/namespaces/acme/ns"}} {
		if code, _ := f.do(t, ep[0], ep[1], "bob", "{}"); code != 403 {
			t.Errorf("%s %s by a produce/consume role: %d", ep[0], ep[1], code)
		}
	}
	// Topic grant for carol, listed merged with the namespace grants.
	if code, b := f.do(t, "POST", tp+"/permissions/carol", "acme-admin", `["consume"]`); code != 204 {
		t.Fatalf("topic grant: %d %s", code, b)
	}
	code, body = f.do(t, "GET", tp+"/permissions", "acme-admin", "")
	if code != 200 || strings.TrimSpace(body) != `{"bob":["consume","produce"],"carol":["consume"]}` {
		t.Fatalf("topic list: %d %s", code, body)
	}
	if code, _ := f.do(t, "POST", tp+"/subscription/s/skip_all", "carol", ""); code != http.StatusTeapot {
		t.Fatalf("carol skip: %d", code)
	}
	<-f.roles
	if code, _ := f.do(t, "DELETE", tp+"/permissions/carol", "acme-admin", ""); code != 204 {
		t.Fatal("topic revoke")
	}
	if code, _ := f.do(t, "DELETE", tp+"/permissions/carol", "acme-admin", ""); code != 412 {
		t.Fatal("second topic revoke")
	}
	// Subscription permissions and auth mode.
	if code, b := f.do(t, "POST", "/admin/v2/namespaces/acme/ns/permissions/subscription/s1", "acme-admin", `["bob"]`); code != 204 {
		t.Fatalf("sub grant: %d %s", code, b)
	}
	code, body = f.do(t, "GET", "/admin/v2/namespaces/acme/ns/permissions/subscription", "acme-admin", "")
	if code != 200 || strings.TrimSpace(body) != `{"s1":["bob"]}` {
		t.Fatalf("sub list: %d %s", code, body)
	}
	if code, _ := f.do(t, "DELETE", "/admin/v2/namespaces/acme/ns/permissions/s1/bob", "acme-admin", ""); code != 204 {
		t.Fatal("sub revoke")
	}
	if code, b := f.do(t, "POST", "/admin/v2/namespaces/acme/ns/subscriptionAuthMode", "acme-admin", `"Prefix"`); code != 204 {
		t.Fatalf("mode: %d %s", code, b)
	}
	if _, body := f.do(t, "GET", "/admin/v2/namespaces/acme/ns/subscriptionAuthMode", "acme-admin", ""); strings.TrimSpace(body) != `"Prefix"` {
		t.Fatalf("mode get %s", body)
	}
	if code, _ := f.do(t, "DELETE", "/admin/v2/namespaces/acme/ns/permissions/bob", "acme-admin", ""); code != 204 {
		t.Fatal("revoke")
	}
	if code, _ := f.do(t, "GET", tp+"/stats", "bob", ""); code != 403 {
		t.Fatalf("stats after revoke: %d", code)
	}
}

func TestPermissionsNeedAuthorization(t *testing.T) {
	sec := &Security{}
	srv := httptest.NewServer(sec.Handler(http.NotFoundHandler()))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/admin/v2/namespaces/a/b/permissions/r", "application/json", strings.NewReader(`["produce"]`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 501 || reasonOf(t, string(b)) != "Authorization is not enabled" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

// TestClassifyRoutes pins the access of the admin API's routes.
func TestClassifyRoutes(t *testing.T) {
	tp := "/admin/v2/persistent/t/ns/x"
	want := map[string]Access{
		"GET /admin/v2/clusters":                        AccessAny,
		"PUT /admin/v2/clusters/c":                      AccessSuperUser,
		"GET /admin/v2/brokers/health":                  AccessSuperUser,
		"GET /admin/v2/tenants":                         AccessSuperUser,
		"PUT /admin/v2/tenants/t":                       AccessSuperUser,
		"GET /admin/v2/tenants/t":                       AccessTenantAdmin,
		"GET /admin/v2/namespaces/t":                    AccessTenantAdmin,
		"PUT /admin/v2/namespaces/t/ns":                 AccessTenantAdmin,
		"GET /admin/v2/namespaces/t/ns/topics":          AccessNamespaceConsume,
		"POST /admin/v2/namespaces/t/ns/retention":      AccessTenantAdmin,
		"GET /admin/v2/namespaces/c/antiAffinity/g":     AccessSuperUser,
		"POST /admin/v2/namespaces/t/ns/antiAffinity":   AccessTenantAdmin,
		"POST /admin/v2/namespaces/t/ns/clearBacklog":   AccessTenantAdmin,
		"GET /admin/v2/persistent/t/ns":                 AccessNamespaceConsume,
		"GET /admin/v2/non-persistent/t/ns/partitioned": AccessNamespaceConsume,
		"PUT " + tp:                                         AccessTenantAdmin,
		"GET " + tp + "/partitions":                         AccessTopicLookup,
		"PUT " + tp + "/partitions":                         AccessTenantAdmin,
		"HEAD " + tp + "/stats":                             AccessTopicLookup,
		"GET " + tp + "/subscriptions":                      AccessTopicConsume,
		"PUT " + tp + "/subscription/s":                     AccessTenantAdmin,
		"DELETE " + tp + "/subscription/s":                  AccessTopicConsume,
		"POST " + tp + "/subscription/s/resetcursor/5":      AccessTopicConsume,
		"PUT " + tp + "/unload":                             AccessTenantAdmin,
		"PUT " + tp + "/properties":                         AccessTenantAdmin,
		"POST " + tp + "/compaction":                        AccessTenantAdmin,
		"GET " + tp + "/ledger/1/entry/2":                   AccessTopicConsume,
		"GET /admin/v2/schemas/t/ns/x/schema":               AccessTopicLookup,
		"POST /admin/v2/schemas/t/ns/x/schema":              AccessTenantAdmin,
		"GET /lookup/v2/topic/persistent/t/ns/x":            AccessTopicLookup,
		"GET /admin/v3/functions/t/ns/f":                    AccessSuperUser,
		"GET /admin/v2/persistent/t/ns/x%2Fy/stats":         AccessTopicLookup,
		"GET /admin/v2/persistent/t/ns/%zz/stats":           AccessSuperUser,
		"POST " + tp + "/all_subscription/expireMessages/5": AccessTopicConsume,
	}
	for k, a := range want {
		method, path, _ := strings.Cut(k, " ")
		if got := Classify(Rules, method, path); got.Access != a {
			t.Errorf("%s: %s (%s), want %s", k, got.Access, got.Rule, a)
		}
	}
	if m := Classify(Rules, "POST", tp+"/subscription/my-sub/skip/3"); m.Params["sub"] != "my-sub" || m.Params["topic"] != "x" {
		t.Errorf("params %v", m.Params)
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func TestServerTLSReload(t *testing.T) {
	dir := t.TempDir()
	ca, err := testcert.NewCA("reload CA")
	if err != nil {
		t.Fatal(err)
	}
	caFile, _ := ca.WriteCA(dir, "ca.pem")
	issue := func(cn string) {
		p, err := ca.Server(cn, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
		if err != nil {
			t.Fatal(err)
		}
		// Write elsewhere and rename, so a handshake never sees half a pair.
		if _, err := p.Write(dir, "next"); err != nil {
			t.Fatal(err)
		}
		os.Rename(p.CertFile, filepath.Join(dir, "srv.crt"))
		os.Rename(p.KeyFile, filepath.Join(dir, "srv.key"))
	}
	issue("first")
	cfg := DefaultConfig()
	cfg.TLSCertificateFilePath, cfg.TLSKeyFilePath = filepath.Join(dir, "srv.crt"), filepath.Join(dir, "srv.key")
	cfg.TLSCertRefreshCheckDurationSec = 0
	st, err := NewServerTLS(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", st.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _ = c.(*tls.Conn).Handshake(); c.Close() }()
		}
	}()
	client, err := ClientTLS(caFile, "", "", false)
	if err != nil {
		t.Fatal(err)
	}
	client.ServerName = "localhost"
	peerCN := func() string {
		c, err := tls.Dial("tcp", ln.Addr().String(), client)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := peerCN(); cn != "first" {
		t.Fatalf("CN %s", cn)
	}
	issue("second")
	if cn := peerCN(); cn != "second" {
		t.Fatalf("after reload CN %s", cn)
	}
	// A broken file keeps the last good pair and reports the error.
	if err := os.WriteFile(filepath.Join(dir, "srv.key"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cn := peerCN(); cn != "second" || st.LastError() == nil {
		t.Fatalf("broken key: CN %s, err %v", cn, st.LastError())
	}
	// TLS 1.1 is refused.
	old := client.Clone()
	old.MaxVersion = tls.VersionTLS11
	old.MinVersion = tls.VersionTLS10
	if c, err := tls.Dial("tcp", ln.Addr().String(), old); err == nil {
		c.Close()
		t.Fatal("TLS 1.1 accepted")
	}
}

// TestEveryRuleDeniesStrangers: an authenticated role with no grant is
// refused (403) by every rule but the open ones, and a tenant admin is
// refused every superuser rule.
func TestEveryRuleDeniesStrangers(t *testing.T) {
	f := newHTTPFixture(t, "")
	fill := strings.NewReplacer("{domain}", "persistent", "{tenant}", "acme", "{ns}", "ns", "{topic}", "x",
		"{sub}", "s", "{rest...}", "stats", "{cluster...}", "c1", "{cluster}", "c1", "{ledger}", "1",
		"{entry}", "0", "{n}", "1", "{sec}", "1", "{ts}", "1", "{version}", "0")
	for _, r := range Rules {
		path := fill.Replace(r.Pattern)
		methods := []string{r.Method}
		if r.Method == "*" {
			methods = []string{"GET", "PUT", "POST", "DELETE"}
		}
		for _, m := range methods {
			want := 403
			if Classify(Rules, m, path).Access == AccessAny {
				want = http.StatusTeapot
			}
			if code, _ := f.do(t, m, path, "stranger", ""); code != want {
				t.Errorf("%s %s as a stranger: %d, want %d", m, path, code, want)
			}
			if want == http.StatusTeapot {
				<-f.roles
			}
			if Classify(Rules, m, path).Access == AccessSuperUser {
				if code, _ := f.do(t, m, path, "acme-admin", ""); code != 403 {
					t.Errorf("%s %s as a tenant admin: %d, want 403", m, path, code)
				}
			}
		}
	}
}

// TestInsecureClientCertNotAnIdentity: with tlsAllowInsecureConnection a
// client certificate from an unknown CA is accepted for the transport
// but never becomes a role.
func TestInsecureClientCertNotAnIdentity(t *testing.T) {
	dir := t.TempDir()
	ca, _ := testcert.NewCA("server CA")
	caFile, _ := ca.WriteCA(dir, "ca.pem")
	srv, _ := ca.Server("localhost", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	srv.Write(dir, "srv")
	good, _ := ca.Client("admin")
	good.Write(dir, "good")
	other, _ := testcert.NewCA("other CA")
	bad, _ := other.Client("admin")
	bad.Write(dir, "bad")
	for _, insecure := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.TLSCertificateFilePath, cfg.TLSKeyFilePath, cfg.TLSTrustCertsFilePath = srv.CertFile, srv.KeyFile, caFile
		cfg.TLSAllowInsecureConnection = insecure
		st, err := NewServerTLS(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		a := NewAuthenticator("", TLSProvider{})
		if insecure {
			a.verify = st.VerifyClient
		}
		ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, err := a.AuthenticateHTTP(r)
			if err != nil {
				w.WriteHeader(401)
				return
			}
			io.WriteString(w, id.Role)
		}))
		ts.TLS = st.Config()
		ts.StartTLS()
		for name, p := range map[string]*testcert.Pair{"trusted": good, "foreign": bad} {
			tc, _ := ClientTLS(caFile, p.CertFile, p.KeyFile, false)
			tc.ServerName = "localhost"
			// Always send the certificate, even one the server's CA list
			// does not cover (Go clients would otherwise send none).
			cert := tc.Certificates[0]
			tc.Certificates = nil
			tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
			resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: tc}}).Get(ts.URL)
			switch {
			case name == "trusted":
				if err != nil {
					t.Fatalf("insecure=%v trusted: %v", insecure, err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != "admin" {
					t.Fatalf("insecure=%v trusted: role %q", insecure, b)
				}
			case !insecure:
				if err == nil {
					resp.Body.Close()
					t.Fatalf("foreign certificate accepted without tlsAllowInsecureConnection: %d", resp.StatusCode)
				}
			default:
				if err != nil {
					t.Fatalf("insecure: foreign certificate refused at the transport: %v", err)
				}
				resp.Body.Close()
				if resp.StatusCode != 401 {
					t.Fatalf("insecure: foreign certificate became an identity (%d)", resp.StatusCode)
				}
			}
		}
		ts.Close()
	}
}
