package admin

import (
	"context"
	"encoding/base64"
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
	"github.com/magnetar-mq/magnetar/broker"
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
	sc := auth.DefaultConfig()
	sc.AuthenticationEnabled, sc.AuthorizationEnabled = true, true
	sc.AuthenticationProviders = []string{"token"}
	sc.TokenSecretKey = "data:;base64," + base64.StdEncoding.EncodeToString(k)
	sc.SuperUserRoles = []string{"root"}
	s := &secAdmin{testBroker: startBroker(t, func(c *broker.Config) { c.Security = &sc }), key: k}
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

func (s *secAdmin) call(t testing.TB, role, method, path, body string, want int) string {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+s.HTTPAddr()+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if role != "" {
		req.Header.Set("Authorization", "Bearer "+s.token(t, role))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s as %q: %d %s, want %d", method, path, role, resp.StatusCode, b, want)
	}
	return string(b)
}

func (s *secAdmin) produce(t *testing.T, role, topic, payload string) pulsar.MessageID {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: s.url, OperationTimeout: 5 * time.Second,
		Authentication: pulsar.NewAuthenticationToken(s.token(t, role)), Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
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

type recordRoutes struct{ routes [][2]string }

func (r *recordRoutes) Handle(method, pattern string, _ broker.HandlerFunc) {
	r.routes = append(r.routes, [2]string{method, pattern})
}

// TestEveryRouteHasARule: every admin endpoint has an explicit entry in
// auth.Rules (Pulsar CVE-2024-28098/29834: an operation→permission entry
// per endpoint). An endpoint without one would need a superuser; add it
// to the table with the access it should have.
func TestEveryRouteHasARule(t *testing.T) {
	tb := startBroker(t, nil)
	var rr recordRoutes
	Register(&rr, tb.Broker)
	fill := strings.NewReplacer("{domain}", "persistent", "{tenant}", "t", "{ns}", "ns", "{topic}", "x", "{sub}", "s",
		"{cluster}", "c", "{ledger}", "1", "{entry}", "0", "{n}", "1", "{sec}", "1", "{ts}", "1", "{version}", "0", "{role}", "r")
	if len(rr.routes) < 50 {
		t.Fatalf("only %d routes recorded", len(rr.routes))
	}
	for _, r := range rr.routes {
		if m := auth.Classify(auth.Rules, r[0], fill.Replace(r[1])); m.Rule == "" {
			t.Errorf("%s %s has no rule in auth.Rules", r[0], r[1])
		}
	}
}

// TestSecurityPulsarAdminHTTPS: pulsar-client-go's pulsaradmin over HTTPS
// with each provider it has: token and TLS client certificate (it has no
// basic provider; basic over HTTPS is in broker.TestSecHTTPSProviders);
// a role without rights gets a 403 with a reason, bad or no credentials
// a 401.
func TestSecurityPulsarAdminHTTPS(t *testing.T) {
	dir := t.TempDir()
	ca, _ := testcert.NewCA("pulsaradmin CA")
	caFile, _ := ca.WriteCA(dir, "ca.pem")
	srv, _ := ca.Server("localhost", []string{"localhost"}, nil)
	srv.Write(dir, "srv")
	rootCert, _ := ca.Client("root")
	rootCert.Write(dir, "root")
	bobCert, _ := ca.Client("bob")
	bobCert.Write(dir, "bob")
	k, _ := auth.NewSecretKey("HS256")
	hash, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	htpasswd := filepath.Join(dir, "htpasswd")
	os.WriteFile(htpasswd, []byte("root:"+string(hash)+"\n"), 0o600)
	sc := auth.DefaultConfig()
	sc.AuthenticationEnabled, sc.AuthorizationEnabled = true, true
	sc.AuthenticationProviders = []string{"token", "basic", "tls"}
	sc.TokenSecretKey = "data:;base64," + base64.StdEncoding.EncodeToString(k)
	sc.BasicAuthConf = htpasswd
	sc.SuperUserRoles = []string{"root"}
	sc.TLSCertificateFilePath, sc.TLSKeyFilePath, sc.TLSTrustCertsFilePath = srv.CertFile, srv.KeyFile, caFile
	tb := startBroker(t, func(c *broker.Config) { c.Security = &sc; c.TLSHTTPAddr = "127.0.0.1:0" })
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
