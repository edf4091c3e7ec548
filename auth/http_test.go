package auth

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/testcert"
)

// TestAuthorizeRoute pins what each Access admits: superusers
// everything, tenant admins their tenant, other roles their grants, and
// nobody a rule of unknown access.
func TestAuthorizeRoute(t *testing.T) {
	az, _ := seed(t)
	ctx := context.Background()
	for _, g := range []struct{ ns, role, action string }{
		{"acme/ns", "reader", ActionConsume}, {"acme/ns", "writer", ActionProduce}, {"acme/ns", "fn", ActionFunctions},
		{"acme/ns", "src", ActionSources}, {"acme/ns", "snk", ActionSinks}, {"acme/ns", "pkg", ActionPackages},
	} {
		if err := az.GrantNamespace(ctx, g.ns, g.role, []string{g.action}); err != nil {
			t.Fatal(err)
		}
	}
	s := &Security{Authz: az}
	topic := map[string]string{"domain": "persistent", "tenant": "acme", "ns": "ns", "topic": "x"}
	ns := map[string]string{"tenant": "acme", "ns": "ns"}
	fn := map[string]string{"tenant": "acme", "namespace": "ns", "name": "f"}
	cases := []struct {
		a       Access
		p       map[string]string
		allowed []string
	}{
		{AccessSuperUser, ns, []string{"root"}},
		{AccessAny, ns, []string{"root", "acme-admin", "reader", "writer", "fn", "src", "snk", "pkg", "stranger", "closed-admin"}},
		{AccessPublic, ns, []string{"root", "acme-admin", "reader", "writer", "fn", "src", "snk", "pkg", "stranger", "closed-admin"}},
		{AccessMetrics, ns, []string{"root", "acme-admin", "reader", "writer", "fn", "src", "snk", "pkg", "stranger", "closed-admin"}},
		{AccessTenantAdmin, ns, []string{"root", "acme-admin"}},
		{AccessNamespaceConsume, ns, []string{"root", "acme-admin", "reader"}},
		{AccessTopicLookup, topic, []string{"root", "acme-admin", "reader", "writer"}},
		{AccessTopicConsume, topic, []string{"root", "acme-admin", "reader"}},
		{AccessFunctions, fn, []string{"root", "acme-admin", "fn"}},
		{AccessSources, fn, []string{"root", "acme-admin", "src"}},
		{AccessSinks, fn, []string{"root", "acme-admin", "snk"}},
		{AccessPackages, fn, []string{"root", "acme-admin", "pkg"}},
		{Access(99), ns, nil},
		{AccessUnset, ns, nil},
	}
	for _, c := range cases {
		for _, role := range []string{"root", "acme-admin", "reader", "writer", "fn", "src", "snk", "pkg", "stranger", "closed-admin"} {
			err := s.AuthorizeRoute(ctx, role, c.a, c.p)
			want := slices.Contains(c.allowed, role)
			if want && err != nil || !want && !errors.Is(err, ErrAuthorization) {
				t.Errorf("%s as %s: %v, want allowed=%v", c.a, role, err, want)
			}
		}
	}
	// Authorization off: everything passes.
	if err := (&Security{}).AuthorizeRoute(ctx, "", AccessSuperUser, ns); err != nil {
		t.Fatal(err)
	}
}

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
