package admin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/apache/pulsar-client-go/pulsaradmin"
	"golang.org/x/crypto/bcrypt"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/internal/testcert"
)

// secAdmin is a broker with the admin API, token authentication and
// authorization (superuser "root"), and tenant "acme" administered by
// "acme-admin" with namespace acme/ns.
type secAdmin struct {
	*testBroker
	key []byte
}

func startSecAdmin(t *testing.T) *secAdmin {
	t.Helper()
	k, _ := auth.NewSecretKey("HS256")
	sc := tokenSecurity(k)
	s := &secAdmin{testBroker: startBroker(t, func(c *brokerconf.Config) { c.Security = sc }), key: k}
	s.call(t, "root", "PUT", "/admin/v2/tenants/acme", `{"adminRoles":["acme-admin"],"allowedClusters":["standalone"]}`, 204)
	s.call(t, "acme-admin", "PUT", "/admin/v2/namespaces/acme/ns", "", 204)
	return s
}

func (s *secAdmin) token(t testing.TB, role string) string {
	tok, err := auth.CreateToken(s.key, auth.TokenSpec{Subject: role})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// do sends a request as role ("": no credentials).
func (s *secAdmin) do(t testing.TB, role, method, path, body string) (int, string) {
	t.Helper()
	authz := ""
	if role != "" {
		authz = "Bearer " + s.token(t, role)
	}
	return httpDoAs(t, s.testBroker, authz, method, path, body)
}

func (s *secAdmin) call(t testing.TB, role, method, path, body string, want int) string {
	t.Helper()
	code, b := s.do(t, role, method, path, body)
	if code != want {
		t.Fatalf("%s %s as %q: %d %s, want %d", method, path, role, code, b, want)
	}
	return b
}

// getJSON GETs path as role, wants 200 and decodes the answer into v.
func (s *secAdmin) getJSON(t testing.TB, role, path string, v any) {
	t.Helper()
	if body := s.call(t, role, "GET", path, "", 200); json.Unmarshal([]byte(body), v) != nil {
		t.Fatalf("GET %s as %q: %s is not a %T", path, role, body, v)
	}
}

func (s *secAdmin) produce(t *testing.T, role, topic, payload string) pulsar.MessageID {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: s.url, OperationTimeout: 5 * time.Second,
		Authentication: pulsar.NewAuthenticationToken(s.token(t, role)), Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := brokertest.Producer(t, c, pulsar.ProducerOptions{Topic: topic})
	id, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(payload)})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestSecurityAdminAPI: the admin API behind the guard: tenant
// operations for superusers, namespace and topic management for tenant
// admins, reads for grantees, 401 without credentials.
func TestSecurityAdminAPI(t *testing.T) {
	s := startSecAdmin(t)
	topic := "/admin/v2/persistent/acme/ns/t1"
	s.produce(t, "acme-admin", "persistent://acme/ns/t1", "x")
	s.call(t, "", "GET", "/admin/v2/tenants", "", 401)
	s.call(t, "acme-admin", "GET", "/admin/v2/tenants", "", 403)
	s.call(t, "root", "GET", "/admin/v2/tenants", "", 200)
	s.call(t, "acme-admin", "PUT", "/admin/v2/tenants/other", `{"adminRoles":[],"allowedClusters":["standalone"]}`, 403)
	s.call(t, "acme-admin", "GET", "/admin/v2/namespaces/acme/ns", "", 200)
	s.call(t, "acme-admin", "POST", "/admin/v2/namespaces/acme/ns/messageTTL", "60", 204)
	// bob: nothing, then consume on the namespace.
	s.call(t, "bob", "GET", topic+"/stats", "", 403)
	s.call(t, "acme-admin", "POST", "/admin/v2/namespaces/acme/ns/permissions/bob", `["consume"]`, 204)
	s.call(t, "bob", "GET", topic+"/stats", "", 200)
	s.call(t, "bob", "GET", topic+"/subscriptions", "", 200)
	s.call(t, "bob", "GET", "/admin/v2/namespaces/acme/ns/topics", "", 200)
	for _, ep := range [][3]string{{"PUT", topic + "/unload", ""}, {"POST", topic + "/terminate", ""},
		{"PUT", topic + "/subscription/bob-sub", ""}, {"DELETE", topic, ""}, {"POST", "/admin/v2/namespaces/acme/ns/messageTTL", "5"},
		{"GET", "/admin/v2/namespaces/acme/ns", ""}, {"PUT", "/admin/v2/namespaces/acme/ns2", ""}} {
		s.call(t, "bob", ep[0], ep[1], ep[2], 403)
	}
	// The grant survives a policy update through the admin API (the
	// policy document keeps auth_policies and subscription_auth_mode).
	s.call(t, "acme-admin", "POST", "/admin/v2/namespaces/acme/ns/subscriptionAuthMode", `"Prefix"`, 204)
	s.call(t, "acme-admin", "POST", "/admin/v2/namespaces/acme/ns/messageTTL", "120", 204)
	if body := s.call(t, "acme-admin", "GET", "/admin/v2/namespaces/acme/ns", "", 200); !strings.Contains(body, `"bob":["consume"]`) || !strings.Contains(body, `"subscription_auth_mode":"Prefix"`) {
		t.Fatalf("namespace policies lost the grants: %s", body)
	}
	if body := s.call(t, "acme-admin", "GET", "/admin/v2/namespaces/acme/ns/subscriptionAuthMode", "", 200); strings.TrimSpace(body) != `"Prefix"` {
		t.Fatalf("mode %s", body)
	}
}

// CVE-2021-41571: reading a message by ledger and entry id through a
// topic the role may consume must not return another topic's data.
func TestSecurityMessageByIDOtherTopic(t *testing.T) {
	s := startSecAdmin(t)
	secret := s.produce(t, "acme-admin", "persistent://acme/ns/secret", "secret-data")
	open := s.produce(t, "acme-admin", "persistent://acme/ns/open", "open-data")
	if secret.LedgerID() == open.LedgerID() {
		t.Fatal("two topics share a ledger")
	}
	s.call(t, "acme-admin", "POST", "/admin/v2/persistent/acme/ns/open/permissions/bob", `["consume"]`, 204)
	at := func(topic string, id pulsar.MessageID) string {
		return fmt.Sprintf("/admin/v2/persistent/acme/ns/%s/ledger/%d/entry/%d", topic, id.LedgerID(), id.EntryID())
	}
	if body := s.call(t, "bob", "GET", at("open", open), "", 200); !strings.Contains(body, "open-data") {
		t.Fatalf("own message %q", body)
	}
	if body := s.call(t, "bob", "GET", at("open", secret), "", 404); strings.Contains(body, "secret-data") {
		t.Fatalf("other topic's message served: %q", body)
	}
	s.call(t, "bob", "GET", at("secret", secret), "", 403)
}

// TestSecurityHTTPServiceURL: pulsar-client-go with an http:// service
// URL looks topics up over the guarded REST API with its token, then
// connects over the binary protocol with the same credentials.
func TestSecurityHTTPServiceURL(t *testing.T) {
	s := startSecAdmin(t)
	s.call(t, "acme-admin", "POST", "/admin/v2/namespaces/acme/ns/permissions/app", `["produce"]`, 204)
	for role, ok := range map[string]bool{"app": true, "mallory": false} {
		c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "http://" + s.HTTPAddr(), OperationTimeout: 3 * time.Second,
			Authentication: pulsar.NewAuthenticationToken(s.token(t, role) + "\n"), Logger: plog.DefaultNopLogger()})
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://acme/ns/http-lookup"})
		if (err == nil) != ok {
			t.Fatalf("%s: producer err %v", role, err)
		}
		if err == nil {
			if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
				t.Fatal(err)
			}
			p.Close()
		}
		c.Close()
	}
}

// httpsBroker is a broker on HTTPS (and pulsar+ssl) with token, basic
// (root:123456) and TLS-certificate authentication, authorization and
// superuser root; root and bob hold client certificates of the CA.
type httpsBroker struct {
	*testBroker
	caFile    string
	root, bob *testcert.Pair
	key       []byte
}

func startHTTPSBroker(t *testing.T) *httpsBroker {
	t.Helper()
	dir := t.TempDir()
	ca, _ := testcert.NewCA("https CA")
	caFile, _ := ca.WriteCA(dir, "ca.pem")
	srv, _ := ca.Server("localhost", []string{"localhost"}, nil)
	srv.Write(dir, "srv")
	h := &httpsBroker{caFile: caFile}
	h.root, _ = ca.Client("root")
	h.root.Write(dir, "root")
	h.bob, _ = ca.Client("bob")
	h.bob.Write(dir, "bob")
	h.key, _ = auth.NewSecretKey("HS256")
	hash, _ := bcrypt.GenerateFromPassword([]byte("123456"), bcrypt.MinCost)
	htpasswd := filepath.Join(dir, "htpasswd")
	os.WriteFile(htpasswd, []byte("root:"+string(hash)+"\n"), 0o600)
	sc := tokenSecurity(h.key)
	sc.AuthenticationProviders = []string{"token", "basic", "tls"}
	sc.BasicAuthConf = htpasswd
	sc.TLSCertificateFilePath, sc.TLSKeyFilePath, sc.TLSTrustCertsFilePath = srv.CertFile, srv.KeyFile, caFile
	h.testBroker = startBroker(t, func(c *brokerconf.Config) {
		c.Security = sc
		c.TLSHTTPAddr, c.TLSServiceAddr, c.AdvertisedHost = "127.0.0.1:0", "127.0.0.1:0", "localhost"
	})
	return h
}

// TestSecurityPulsarAdminHTTPS: pulsar-client-go's pulsaradmin over HTTPS
// with each provider it has: token and TLS client certificate (it has no
// basic provider; basic over HTTPS is in TestSecurityHTTPSProviders);
// a role without rights gets a 403 with a reason, bad or no credentials
// a 401.
func TestSecurityPulsarAdminHTTPS(t *testing.T) {
	h := startHTTPSBroker(t)
	tb, caFile, rootCert, bobCert, k := h.testBroker, h.caFile, h.root, h.bob, h.key
	_, port, _ := net.SplitHostPort(tb.TLSHTTPAddr())
	url := "https://localhost:" + port
	rootTok, _ := auth.CreateToken(k, auth.TokenSpec{Subject: "root"})
	bobTok, _ := auth.CreateToken(k, auth.TokenSpec{Subject: "bob"})
	other, _ := auth.NewSecretKey("HS256")
	forged, _ := auth.CreateToken(other, auth.TokenSpec{Subject: "root"})
	list := func(cfg pulsaradmin.Config) error {
		cfg.WebServiceURL, cfg.TLSTrustCertsFilePath, cfg.TLSEnableHostnameVerification = url, caFile, true
		c, err := pulsaradmin.NewClient(&cfg)
		if err != nil {
			return err
		}
		_, err = c.Tenants().List()
		return err
	}
	for name, cfg := range map[string]pulsaradmin.Config{
		"token": {Token: rootTok},
		"tls":   {AuthPlugin: "tls", AuthParams: `{"tlsCertFile":"` + rootCert.CertFile + `","tlsKeyFile":"` + rootCert.KeyFile + `"}`},
	} {
		if err := list(cfg); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, c := range map[string]struct {
		cfg  pulsaradmin.Config
		code string
	}{
		"bob token":    {pulsaradmin.Config{Token: bobTok}, "code: 403"},
		"bob cert":     {pulsaradmin.Config{AuthPlugin: "tls", AuthParams: `{"tlsCertFile":"` + bobCert.CertFile + `","tlsKeyFile":"` + bobCert.KeyFile + `"}`}, "code: 403"},
		"forged token": {pulsaradmin.Config{Token: forged}, "code: 401"},
		"nothing":      {pulsaradmin.Config{}, "code: 401"},
	} {
		if err := list(c.cfg); err == nil || !strings.Contains(err.Error(), c.code) {
			t.Errorf("%s: %v, want %s", name, err, c.code)
		}
	}
}

// TestSecurityHTTPSProviders: the HTTP lookup over HTTPS with each
// provider (token, basic, TLS client certificate): 200 for a role that
// may look the topic up, 403 for one that may not, 401 for bad
// credentials; the answer carries the TLS URLs; a client that does not
// trust the CA fails the handshake.
func TestSecurityHTTPSProviders(t *testing.T) {
	h := startHTTPSBroker(t)
	tb, caFile, rootCert, bobCert, k := h.testBroker, h.caFile, h.root, h.bob, h.key
	_, port, _ := net.SplitHostPort(tb.TLSHTTPAddr())
	url := "https://localhost:" + port + "/lookup/v2/topic/persistent/public/default/x"
	client := func(cert *testcert.Pair) *http.Client {
		var cf, kf string
		if cert != nil {
			cf, kf = cert.CertFile, cert.KeyFile
		}
		cfg, err := auth.ClientTLS(caFile, cf, kf, false)
		if err != nil {
			t.Fatal(err)
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Second}
	}
	get := func(hc *http.Client, authz string) (int, string) {
		req, _ := http.NewRequest("GET", url, nil)
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	rootTok, _ := auth.CreateToken(k, auth.TokenSpec{Subject: "root"})
	basic := func(user, pw string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw))
	}
	for name, c := range map[string]struct {
		hc    *http.Client
		authz string
		want  int
	}{
		"token":        {client(nil), "Bearer " + rootTok, 200},
		"basic":        {client(nil), basic("root", "123456"), 200},
		"bad password": {client(nil), basic("root", "nope"), 401},
		"root cert":    {client(rootCert), "", 200},
		"bob cert":     {client(bobCert), "", 403},
	} {
		code, body := get(c.hc, c.authz)
		if code != c.want {
			t.Errorf("%s: %d %s, want %d", name, code, body, c.want)
		}
		if code == 200 && (!strings.Contains(body, `"brokerUrlTls":"pulsar+ssl://localhost:`) || !strings.Contains(body, `"httpUrlTls":"https://localhost:`)) {
			t.Errorf("%s: lookup answer %s", name, body)
		}
	}
	if _, err := (&http.Client{Timeout: 5 * time.Second}).Get(url); err == nil {
		t.Fatal("a client that does not trust the CA was served")
	}
}
