package broker

import (
	"bytes"
	"context"
	"crypto/tls"
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
	"golang.org/x/crypto/bcrypt"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/internal/testcert"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// pbBaseConnect builds a CONNECT with credentials.
type pbBaseConnect struct {
	method, data string
	refresh      bool
}

func (c pbBaseConnect) cmd() *pb.BaseCommand {
	return &pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: &pb.CommandConnect{
		ClientVersion: ptr("raw-test"), ProtocolVersion: ptr(int32(20)),
		AuthMethodName: ptr(c.method), AuthData: []byte(c.data),
		FeatureFlags: &pb.FeatureFlags{SupportsAuthRefresh: ptr(c.refresh)},
	}}
}

func (c *pbBaseConnect) bytes(t testing.TB) ([]byte, error) {
	return pulsarproto.AppendCommand(nil, c.cmd())
}

// secFixture is a broker with TLS on both protocols, token, tls and
// basic authentication, authorization, and the pulsar-client-go suite's
// ACL layout: superuser "admin", tenant "private" with namespace
// private/auth where "token-principal" may produce and consume.
type secFixture struct {
	*testBroker
	dir      string
	key      []byte
	caFile   string
	ca       *testcert.CA
	admin    *testcert.Pair // client cert, CN=admin
	bob      *testcert.Pair // client cert, CN=bob
	tlsURL   string         // pulsar+ssl://localhost:port
	httpsURL string
	httpURL  string
	claims   map[string]any // added to every token
}

func startSecure(t testing.TB, mut func(*auth.Config)) *secFixture {
	t.Helper()
	return startSecureWith(t, mut, nil)
}

// startSecureWith is startSecure with features registered by use (nil:
// none).
func startSecureWith(t testing.TB, mut func(*auth.Config), use func(*Broker) error) *secFixture {
	t.Helper()
	dir := t.TempDir()
	ca, err := testcert.NewCA("magnetar test CA")
	if err != nil {
		t.Fatal(err)
	}
	f := &secFixture{dir: dir, ca: ca, claims: map[string]any{"aud": "magnetar"}}
	f.caFile, _ = ca.WriteCA(dir, "ca.pem")
	// DNS SAN localhost only: dialling 127.0.0.1 must fail hostname checks.
	srv, err := ca.Server("localhost", []string{"localhost"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Write(dir, "broker"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p    **testcert.Pair
		role string
	}{{&f.admin, "admin"}, {&f.bob, "bob"}} {
		p, err := ca.Client(c.role)
		if err != nil {
			t.Fatal(err)
		}
		if *c.p, err = p.Write(dir, c.role); err != nil {
			t.Fatal(err)
		}
	}
	f.key, _ = auth.NewSecretKey("HS256")
	keyFile := filepath.Join(dir, "secret.key")
	if err := os.WriteFile(keyFile, f.key, 0o600); err != nil {
		t.Fatal(err)
	}
	hash, _ := bcrypt.GenerateFromPassword([]byte("123456"), bcrypt.MinCost)
	htpasswd := filepath.Join(dir, "htpasswd")
	if err := os.WriteFile(htpasswd, []byte("admin:"+string(hash)+"\nbob:"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sc := auth.DefaultConfig()
	for k, v := range map[string]string{
		"authenticationEnabled":             "true",
		"authorizationEnabled":              "true",
		"authenticationProviders":           "tls,token,org.apache.pulsar.broker.authentication.AuthenticationProviderBasic",
		"tokenSecretKey":                    "file://" + keyFile,
		"basicAuthConf":                     htpasswd,
		"superUserRoles":                    "admin,superUser",
		"tlsCertificateFilePath":            srv.CertFile,
		"tlsKeyFilePath":                    srv.KeyFile,
		"tlsTrustCertsFilePath":             f.caFile,
		"authenticationRefreshCheckSeconds": "1",
	} {
		if err := sc.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if mut != nil {
		mut(&sc)
	}
	secure := func(c *brokerconf.Config) {
		c.AdvertisedHost = "localhost"
		c.TLSServiceAddr = "127.0.0.1:0"
		c.TLSHTTPAddr = "127.0.0.1:0"
		c.Security = &sc
	}
	// The core's tests cover authentication and TLS; the commands'
	// authorization is package brokerauthz's (tested there), so the
	// authorizer here allows every command.
	uses := []func(*Broker) error{func(b *Broker) error { return b.Use(allowCommands{}) }}
	if use != nil {
		uses = append(uses, use)
	}
	f.testBroker = startBrokerOpts(t, brokerOpts{cfg: secure, use: uses})
	port := func(a string) string { _, p, _ := net.SplitHostPort(a); return p }
	f.tlsURL = "pulsar+ssl://localhost:" + port(f.TLSServiceAddr())
	f.httpsURL = "https://localhost:" + port(f.TLSHTTPAddr())
	f.httpURL = "http://localhost:" + port(f.HTTPAddr())
	f.url = "pulsar://localhost:" + port(f.ServiceAddr())
	// The suite's ACLs: tenant and namespace through the policy store,
	// the grant through the authorizer (the permission endpoints are the
	// admin API's, package admin).
	ctx := context.Background()
	if err := f.Policies().CreateTenant(ctx, "private", policy.TenantInfo{AdminRoles: []string{}, AllowedClusters: []string{"standalone"}}); err != nil {
		t.Fatal(err)
	}
	if err := f.Policies().CreateNamespace(ctx, "private/auth", &policy.Policies{}); err != nil {
		t.Fatal(err)
	}
	f.grant(t, "private/auth", "token-principal", "produce", "consume")
	return f
}

// grant gives role actions on namespace ns, as the permission endpoint
// would.
func (f *secFixture) grant(t testing.TB, ns, role string, actions ...string) {
	t.Helper()
	if err := f.Security().Authz.GrantNamespace(context.Background(), ns, role, actions); err != nil {
		t.Fatal(err)
	}
}

func (f *secFixture) token(t testing.TB, role string, exp time.Duration) string {
	t.Helper()
	spec := auth.TokenSpec{Subject: role, Claims: f.claims}
	if exp != 0 {
		spec.Expires = time.Now().Add(exp)
	}
	tok, err := auth.CreateToken(f.key, spec)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// httpClient trusts the test CA.
func (f *secFixture) httpClient(t testing.TB, cert *testcert.Pair) *http.Client {
	t.Helper()
	var cf, kf string
	if cert != nil {
		cf, kf = cert.CertFile, cert.KeyFile
	}
	cfg, err := auth.ClientTLS(f.caFile, cf, kf, false)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Second}
}

func (f *secFixture) call(t testing.TB, hc *http.Client, method, url, authz, body string, want int) string {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, url, resp.StatusCode, b, want)
	}
	return string(b)
}

func (f *secFixture) client(t testing.TB, opts pulsar.ClientOptions) (pulsar.Client, error) {
	t.Helper()
	if opts.URL == "" {
		opts.URL = f.tlsURL
	}
	if opts.TLSTrustCertsFilePath == "" && strings.Contains(opts.URL, "ssl") || strings.HasPrefix(opts.URL, "https") && opts.TLSTrustCertsFilePath == "" {
		opts.TLSTrustCertsFilePath = f.caFile
	}
	if opts.OperationTimeout == 0 {
		opts.OperationTimeout = 3 * time.Second
	}
	opts.ConnectionTimeout = 3 * time.Second
	opts.Logger = plog.DefaultNopLogger()
	c, err := pulsar.NewClient(opts)
	if err == nil {
		t.Cleanup(c.Close)
	}
	return c, err
}

// roundTrip produces one message to topic and consumes it.
func roundTrip(t testing.TB, c pulsar.Client, topic string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		return fmt.Errorf("producer: %w", err)
	}
	defer p.Close()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "token-principal-sub", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	defer cons.Close()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("hello")}); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	m, err := cons.Receive(ctx)
	if err != nil {
		return fmt.Errorf("receive: %w", err)
	}
	if string(m.Payload()) != "hello" {
		return fmt.Errorf("payload %q", m.Payload())
	}
	return cons.Ack(m)
}

var secTopicSeq int

func authTopic() string {
	secTopicSeq++
	return fmt.Sprintf("persistent://private/auth/t-%d-%d", time.Now().UnixNano(), secTopicSeq)
}

func (f *secFixture) mustClient(t testing.TB, opts pulsar.ClientOptions) pulsar.Client {
	t.Helper()
	c, err := f.client(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSecTokenAuth(t *testing.T) {
	f := startSecure(t, nil)
	tok := f.token(t, "token-principal", 0)
	tokFile := filepath.Join(f.dir, "token.txt")
	if err := os.WriteFile(tokFile, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]pulsar.ClientOptions{
		// The suite sends the file's bytes, trailing newline included.
		"static plaintext":  {URL: f.url, Authentication: pulsar.NewAuthenticationToken(tok + "\n")},
		"supplier tls":      {TLSValidateHostname: true, Authentication: pulsar.NewAuthenticationTokenFromSupplier(func() (string, error) { return tok + "\n", nil })},
		"file tls":          {Authentication: pulsar.NewAuthenticationTokenFromFile(tokFile)},
		"basic superuser":   {Authentication: must(pulsar.NewAuthenticationBasic("admin", "123456"))},
		"tls cert CN=admin": {Authentication: pulsar.NewAuthenticationTLS(f.admin.CertFile, f.admin.KeyFile)},
		// Client certificate for transport only, identity from basic.
		"mtls transport + basic": {TLSCertificateFile: f.bob.CertFile, TLSKeyFilePath: f.bob.KeyFile, Authentication: must(pulsar.NewAuthenticationBasic("admin", "123456"))},
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			c := f.mustClient(t, opts)
			if err := roundTrip(t, c, authTopic()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func must(a pulsar.Authentication, err error) pulsar.Authentication {
	if err != nil {
		panic(err)
	}
	return a
}

// TestSecAuthenticationFailures: each bad credential is refused and the
// client never gets a producer.
func TestSecAuthenticationFailures(t *testing.T) {
	f := startSecure(t, func(c *auth.Config) {
		c.TokenAudienceClaim, c.TokenAudience = "aud", "magnetar"
	})
	other, _ := auth.NewSecretKey("HS256")
	tok := func(key []byte, spec auth.TokenSpec) string {
		s, err := auth.CreateToken(key, spec)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	aud := map[string]any{"aud": "magnetar"}
	good := tok(f.key, auth.TokenSpec{Subject: "token-principal", Claims: aud})
	// Sanity: the good token works.
	if err := roundTrip(t, f.mustClient(t, pulsar.ClientOptions{Authentication: pulsar.NewAuthenticationToken(good)}), authTopic()); err != nil {
		t.Fatal(err)
	}
	bad := map[string]pulsar.Authentication{
		"wrong key":      pulsar.NewAuthenticationToken(tok(other, auth.TokenSpec{Subject: "token-principal", Claims: aud})),
		"expired":        pulsar.NewAuthenticationToken(tok(f.key, auth.TokenSpec{Subject: "token-principal", Claims: aud, Expires: time.Now().Add(-time.Minute)})),
		"wrong audience": pulsar.NewAuthenticationToken(tok(f.key, auth.TokenSpec{Subject: "token-principal", Claims: map[string]any{"aud": "other"}})),
		"no audience":    pulsar.NewAuthenticationToken(tok(f.key, auth.TokenSpec{Subject: "token-principal"})),
		"not a jwt":      pulsar.NewAuthenticationToken("not-a-jwt"),
		"alg none":       pulsar.NewAuthenticationToken(base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"admin","aud":"magnetar"}`)) + "."),
		"basic password": must(pulsar.NewAuthenticationBasic("admin", "wrong")),
		"basic user":     must(pulsar.NewAuthenticationBasic("mallory", "123456")),
		"no credentials": nil,
	}
	for name, a := range bad {
		t.Run(name, func(t *testing.T) {
			c := f.mustClient(t, pulsar.ClientOptions{Authentication: a})
			if err := roundTrip(t, c, authTopic()); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	// A client certificate from another CA fails the handshake.
	ca2, _ := testcert.NewCA("other CA")
	p, _ := ca2.Client("admin")
	p, _ = p.Write(t.TempDir(), "foreign")
	c := f.mustClient(t, pulsar.ClientOptions{Authentication: pulsar.NewAuthenticationTLS(p.CertFile, p.KeyFile)})
	if err := roundTrip(t, c, authTopic()); err == nil {
		t.Fatal("certificate from another CA accepted")
	}
}

// TestSecConnectRejectedRaw checks the wire shape of a refused CONNECT
// and that nothing else is served on that connection.
func TestSecConnectRejectedRaw(t *testing.T) {
	f := startSecure(t, nil)
	r := dialRaw(t, f.testBroker, false)
	r.send(pbBaseConnect{method: "token", data: "not-a-jwt"}.cmd())
	fr := r.next()
	if fr.Cmd.Error == nil || fr.Cmd.Error.GetError().String() != "AuthenticationError" ||
		fr.Cmd.Error.GetRequestId() != ^uint64(0) || fr.Cmd.Error.GetMessage() != "Failed to authenticate" {
		t.Fatalf("answer %v", fr.Cmd)
	}
	r.expectClosed()
	// An unknown method is refused too (no anonymous fallback here).
	r = dialRaw(t, f.testBroker, false)
	r.send(pbBaseConnect{method: "athenz", data: "x"}.cmd())
	if fr := r.next(); fr.Cmd.Error == nil {
		t.Fatalf("unknown method: %v", fr.Cmd)
	}
	r.expectClosed()
	// Plaintext to the TLS port: no CONNECTED, connection closed.
	nc, err := net.Dial("tcp", f.TLSServiceAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	b, _ := (&pbBaseConnect{method: "token", data: f.token(t, "admin", 0)}).bytes(t)
	nc.Write(b)
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, _ := io.ReadAll(nc)
	if bytes.Contains(got, []byte("Magnetar")) {
		t.Fatal("plaintext CONNECT answered on the TLS port")
	}
}

func TestSecTLSModes(t *testing.T) {
	f := startSecure(t, func(c *auth.Config) { c.AnonymousUserRole = "anonymous" })
	// anonymous may use public/default through a namespace grant.
	f.grant(t, "public/default", "anonymous", "produce", "consume")
	topic := fmt.Sprintf("persistent://public/default/tls-%d", time.Now().UnixNano())
	_, port, _ := net.SplitHostPort(f.TLSServiceAddr())
	ok := map[string]pulsar.ClientOptions{
		"verified":               {},
		"hostname verification":  {TLSValidateHostname: true},
		"insecure, untrusted CA": {TLSTrustCertsFilePath: filepath.Join(f.dir, "bob.crt"), TLSAllowInsecureConnection: true},
		"insecure, ip":           {URL: "pulsar+ssl://127.0.0.1:" + port, TLSAllowInsecureConnection: true},
	}
	for name, o := range ok {
		t.Run(name, func(t *testing.T) {
			if err := roundTrip(t, f.mustClient(t, o), topic); err != nil {
				t.Fatal(err)
			}
		})
	}
	fail := map[string]pulsar.ClientOptions{
		"hostname mismatch": {URL: "pulsar+ssl://127.0.0.1:" + port, TLSValidateHostname: true},
		"untrusted CA":      {TLSTrustCertsFilePath: filepath.Join(f.dir, "bob.crt")},
		"plaintext to TLS":  {URL: "pulsar://localhost:" + port},
	}
	for name, o := range fail {
		t.Run(name, func(t *testing.T) {
			if err := roundTrip(t, f.mustClient(t, o), topic); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestSecRequireClientCert(t *testing.T) {
	f := startSecure(t, func(c *auth.Config) { c.TLSRequireTrustedClientCertOnConnect = true })
	tok := pulsar.NewAuthenticationToken(f.token(t, "token-principal", 0))
	if err := roundTrip(t, f.mustClient(t, pulsar.ClientOptions{Authentication: tok}), authTopic()); err == nil {
		t.Fatal("TLS client without certificate accepted")
	}
	o := pulsar.ClientOptions{Authentication: tok, TLSCertificateFile: f.bob.CertFile, TLSKeyFilePath: f.bob.KeyFile}
	if err := roundTrip(t, f.mustClient(t, o), authTopic()); err != nil {
		t.Fatal(err)
	}
	// The HTTPS port requires it too.
	if _, err := f.httpClient(t, nil).Get(f.httpsURL + "/admin/v2/clusters"); err == nil {
		t.Fatal("HTTPS without client certificate accepted")
	}
}

// TestSecPlaintextOff: with ServiceAddr "-" only the TLS port serves,
// and lookups hand out the TLS URL.
func TestSecPlaintextOff(t *testing.T) {
	dir := t.TempDir()
	ca, _ := testcert.NewCA("ca")
	caFile, _ := ca.WriteCA(dir, "ca.pem")
	srv, _ := ca.Server("localhost", []string{"localhost"}, nil)
	srv.Write(dir, "srv")
	sc := auth.DefaultConfig()
	sc.TLSCertificateFilePath, sc.TLSKeyFilePath = srv.CertFile, srv.KeyFile
	tb := startBroker(t, func(c *brokerconf.Config) {
		c.ServiceAddr, c.HTTPAddr = "-", "-"
		c.AdvertisedHost = "localhost"
		c.TLSServiceAddr, c.TLSHTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
		c.Security = &sc
	})
	if tb.ServiceAddr() != "" || tb.HTTPAddr() != "" {
		t.Fatalf("plaintext listening: %q %q", tb.ServiceAddr(), tb.HTTPAddr())
	}
	_, port, _ := net.SplitHostPort(tb.TLSServiceAddr())
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar+ssl://localhost:" + port, TLSTrustCertsFilePath: caFile,
		OperationTimeout: 5 * time.Second, Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := roundTrip(t, c, "persistent://public/default/tls-only"); err != nil {
		t.Fatal(err)
	}
}

// benchConnect opens a connection, completes CONNECT/CONNECTED with the
// given credentials and closes, b.N times: connections per second.
func benchConnect(b *testing.B, tb *testBroker, addr string, tlsCfg *tls.Config, method string, data []byte) {
	cmd, err := pulsarproto.AppendCommand(nil, pbBaseConnect{method: method, data: string(data)}.cmd())
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 4096)
	b.ResetTimer()
	for range b.N {
		var nc net.Conn
		if tlsCfg != nil {
			nc, err = tls.Dial("tcp", addr, tlsCfg)
		} else {
			nc, err = net.Dial("tcp", addr)
		}
		if err != nil {
			b.Fatal(err)
		}
		if _, err := nc.Write(cmd); err != nil {
			b.Fatal(err)
		}
		n, err := nc.Read(buf)
		if err != nil || !bytes.Contains(buf[:n], []byte("Magnetar")) {
			b.Fatalf("no CONNECTED: %v %q", err, buf[:n])
		}
		nc.Close()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "conns/s")
}

// BenchmarkConnect: connection set-up rate without authentication
// (baseline), with an HS256 token, and with a token over TLS (full
// handshake each time), all against brokers of the same process.
// auth.BenchmarkValidate has the per-algorithm verification cost.
func BenchmarkConnect(b *testing.B) {
	plain := startBroker(b, nil)
	b.Run("none", func(b *testing.B) { benchConnect(b, plain, plain.ServiceAddr(), nil, "", nil) })
	f := startSecure(b, nil)
	tok := []byte(f.token(b, "token-principal", 0))
	b.Run("token-hs256", func(b *testing.B) { benchConnect(b, f.testBroker, f.ServiceAddr(), nil, "token", tok) })
	tc, _ := auth.ClientTLS(f.caFile, "", "", false)
	tc.ServerName = "localhost"
	b.Run("tls+token-hs256", func(b *testing.B) { benchConnect(b, f.testBroker, f.TLSServiceAddr(), tc, "token", tok) })
}
