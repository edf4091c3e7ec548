package e2e

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-mq/magnetar/internal/testcert"
)

func TestTokensCLI(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "secret.key")
	runMain(t, false, "tokens", "create-secret-key", "--output", key)
	if b, _ := os.ReadFile(key); len(b) != 32 {
		t.Fatalf("secret key has %d bytes, want 32 raw bytes", len(b))
	}
	if b64 := runMain(t, false, "tokens", "create-secret-key", "-a", "HS512", "-b"); len(b64) != 88 {
		t.Fatalf("base64 HS512 key %q", b64)
	}
	tok := strings.TrimSpace(runMain(t, false, "tokens", "create", "--secret-key", "file://"+key, "--subject", "alice", "--expiry-time", "1h"))
	if out := runMain(t, false, "tokens", "show", tok); !strings.HasPrefix(out, "{\"alg\":\"HS256\"}\n---\n{\"exp\":") || !strings.Contains(out, `"sub":"alice"`) {
		t.Fatalf("show: %q", out)
	}
	if out := runMain(t, false, "tokens", "validate", "--sk", key, tok); !strings.Contains(out, "sub=alice") {
		t.Fatalf("validate: %q", out)
	}
	other := filepath.Join(dir, "other.key")
	runMain(t, false, "tokens", "create-secret-key", "-o", other)
	if out := runMain(t, true, "tokens", "validate", "--secret-key", other, tok); !strings.Contains(out, "invalid token") {
		t.Fatalf("wrong key: %q", out)
	}
	// Key pairs: RS256 and ES256, DER files as Pulsar writes them.
	for _, alg := range []string{"RS256", "ES256"} {
		priv, pub := filepath.Join(dir, alg+".priv"), filepath.Join(dir, alg+".pub")
		runMain(t, false, "tokens", "create-key-pair", "-a", alg, "--output-private-key", priv, "--output-public-key", pub)
		tk := strings.TrimSpace(runMain(t, false, "tokens", "create", "--private-key", priv, "-s", "svc"))
		if out := runMain(t, false, "tokens", "show", tk); !strings.Contains(out, `{"alg":"`+alg+`"}`) {
			t.Fatalf("%s header: %q", alg, out)
		}
		runMain(t, false, "tokens", "validate", "--public-key", pub, tk)
		runMain(t, true, "tokens", "validate", "--secret-key", key, tk)
	}
	runMain(t, true, "tokens", "create", "--secret-key", key)                        // no subject
	runMain(t, true, "tokens", "create", "--secret-key", key, "-s", "a", "-e", "3x") // bad expiry
	runMain(t, true, "tokens", "show", "not-a-jwt")
}

// TestStandaloneSecurity runs `magnetar standalone` with a Pulsar-style
// config file (TLS on both protocols, token authentication,
// authorization) and drives it with `magnetar admin` and `magnetar perf`
// using --auth-plugin/--auth-params/--tls-trust-cert-path.
func TestStandaloneSecurity(t *testing.T) {
	dir := t.TempDir()
	ca, err := testcert.NewCA("cli test CA")
	if err != nil {
		t.Fatal(err)
	}
	caFile, _ := ca.WriteCA(dir, "ca.pem")
	srv, _ := ca.Server("localhost", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	srv.Write(dir, "broker")
	key := filepath.Join(dir, "secret.key")
	runMain(t, false, "tokens", "create-secret-key", "-o", key)
	tokenOf := func(role string) string {
		return strings.TrimSpace(runMain(t, false, "tokens", "create", "--secret-key", "file://"+key, "-s", role))
	}
	adminTok, bobTok := tokenOf("admin"), tokenOf("bob")
	conf := filepath.Join(dir, "broker.conf")
	os.WriteFile(conf, []byte(strings.Join([]string{
		"# Pulsar key names",
		"authenticationEnabled=true",
		"authorizationEnabled=true",
		"authenticationProviders=org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
		"tokenSecretKey=file://" + key,
		"superUserRoles=admin",
		"brokerServicePortTls=127.0.0.1:0",
		"webServicePortTls=127.0.0.1:0",
		"tlsCertificateFilePath=" + srv.CertFile,
		"tlsKeyFilePath=" + srv.KeyFile,
		"managedLedgerDefaultEnsembleSize=1",
	}, "\n")), 0o600)
	p, fields := startMagnetar(t, "standalone", "magnetar standalone ready", "standalone", "--data-dir", filepath.Join(dir, "data"),
		"--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--advertised-host", "127.0.0.1", "--config", conf,
		"--tlsTrustCertsFilePath", caFile)
	httpsURL, tlsURL := fields["https"], fields["service-tls"]
	if !strings.HasPrefix(httpsURL, "https://127.0.0.1:") || !strings.HasPrefix(tlsURL, "pulsar+ssl://127.0.0.1:") {
		t.Fatalf("ready line fields %v", fields)
	}
	admin := func(wantErr bool, tok string, args ...string) string {
		all := append([]string{"admin", "--admin-url", httpsURL, "--tls-trust-cert-path", caFile}, args...)
		if tok != "" {
			all = append(all, "--auth-plugin", "org.apache.pulsar.client.impl.auth.AuthenticationToken", "--auth-params", "token:"+tok)
		}
		return runMain(t, wantErr, all...)
	}
	// CVE-2022-33681..33683: the admin client verifies the server's
	// chain and name before any credential leaves.
	if out := runMain(t, true, "admin", "--admin-url", httpsURL, "--auth-plugin", "token", "--auth-params", "token:"+adminTok, "tenants", "list"); !strings.Contains(out, "certificate") {
		t.Fatalf("untrusted server: %q", out)
	}
	if out := admin(true, "", "tenants", "list"); !strings.Contains(out, "401") {
		t.Fatalf("no credentials: %q", out)
	}
	if out := admin(true, bobTok, "tenants", "list"); !strings.Contains(out, "403") {
		t.Fatalf("bob: %q", out)
	}
	admin(false, adminTok, "tenants", "list")
	admin(false, adminTok, "namespaces", "grant-permission", "public/default", "--role", "bob", "--actions", "produce")
	if out := admin(false, adminTok, "namespaces", "permissions", "public/default", "-o", "json"); compact(out) != `{"bob":["produce"]}` {
		t.Fatalf("permissions: %q", out)
	}
	admin(false, adminTok, "topics", "grant-permission", "persistent://public/default/t1", "--role", "carol", "--actions", "consume")
	if out := admin(false, adminTok, "topics", "permissions", "persistent://public/default/t1", "-o", "json"); compact(out) != `{"bob":["produce"],"carol":["consume"]}` {
		t.Fatalf("topic permissions: %q", out)
	}
	admin(false, adminTok, "topics", "revoke-permission", "persistent://public/default/t1", "--role", "carol")
	// bob produces with magnetar perf over TLS; consuming is denied.
	out := runMain(t, false, "perf", "produce", "--service-url", tlsURL, "--tls-trust-cert-path", caFile,
		"--auth-plugin", "token", "--auth-params", "token:"+bobTok, "--topic", "persistent://public/default/t1", "-m", "200", "-q", "--json")
	if !strings.Contains(compact(out), `"messages":200`) {
		t.Fatalf("perf: %s", out)
	}
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: tlsURL, TLSTrustCertsFilePath: caFile, OperationTimeout: 3 * time.Second,
		Authentication: pulsar.NewAuthenticationToken(bobTok), Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Subscribe(pulsar.ConsumerOptions{Topic: "persistent://public/default/t1", SubscriptionName: "s"}); err == nil || !strings.Contains(err.Error(), "AuthorizationError") {
		t.Fatalf("bob subscribed without consume: %v", err)
	}
	admin(false, adminTok, "namespaces", "revoke-permission", "public/default", "--role", "bob")
	_ = p
}

func compact(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(strings.TrimSpace(s))); err != nil {
		return s
	}
	return b.String()
}
