package e2e

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/internal/testcert"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// authHTTP sends a request with a bearer token (none when tok is "") and
// extra headers.
func authHTTP(t testing.TB, method, url, tok, body string, hdr map[string]string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// rawConnect sends one CONNECT to addr (host:port) and returns the
// answer.
func rawConnect(t testing.TB, addr string, m *pb.CommandConnect) *pb.BaseCommand {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	if m.ClientVersion == nil {
		m.ClientVersion = proto.String("raw-test")
	}
	if m.ProtocolVersion == nil {
		m.ProtocolVersion = proto.Int32(20)
	}
	b, err := pulsarproto.AppendCommand(nil, &pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: m})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(b); err != nil {
		t.Fatal(err)
	}
	raw, err := pulsarproto.ReadFrame(nc, 0, nil)
	if err != nil {
		t.Fatalf("CONNECT to %s: no answer: %v", addr, err)
	}
	var dec pulsarproto.Decoder
	_, f, err := dec.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	return proto.Clone(f.Cmd).(*pb.BaseCommand)
}

func tokenConnect(tok string) *pb.CommandConnect {
	return &pb.CommandConnect{AuthMethodName: proto.String("token"), AuthData: []byte(tok)}
}

// Token authentication through the proxy: the proxy authenticates the
// client and names it as the original principal; the broker accepts that
// only from the proxy role and authorizes the original principal, so a
// client without the grant is refused although the proxy role is a
// superuser. Nobody can pass for someone else: not a client through the
// proxy, not a client talking to a broker directly, not over HTTP.
func TestProxyTokenAuth(t *testing.T) {
	dir := t.TempDir()
	key, tok := tokenKey(t, dir)
	admin, proxyTok, alice, bob := tok("admin"), tok("proxy"), tok("alice"), tok("bob")
	proxyTokFile := filepath.Join(dir, "proxy.token")
	if err := os.WriteFile(proxyTokFile, []byte(proxyTok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	certCA, err := testcert.NewCA("proxy test CA")
	if err != nil {
		t.Fatal(err)
	}
	caFile, _ := certCA.WriteCA(dir, "ca.pem")
	srv, _ := certCA.Server("server", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	srv.Write(dir, "server")
	c := newTestCluster(t)
	bc := &brokerCluster{t: t, c: c}
	for range 2 {
		bc.bookies = append(bc.bookies, c.startBookie(""))
	}
	for i := range 2 {
		// The second broker re-authenticates the credentials the
		// proxies forward (authenticateOriginalAuthData).
		extra := []string{"--authenticateOriginalAuthData=" + strconv.FormatBool(i == 1)}
		bc.brokers = append(bc.brokers, bc.startBroker(append(extra, "--load-shedding-interval", "-1s", "--ensemble", "2", "--write-quorum", "2", "--ack-quorum", "2",
			"--authenticationEnabled", "--authenticationProviders", "token", "--tokenSecretKey", "file://"+key,
			"--authorizationEnabled", "--superUserRoles", "admin,proxy", "--proxyRoles", "proxy",
			"--brokerServicePortTls", "127.0.0.1:0", "--tlsCertificateFilePath", srv.CertFile, "--tlsKeyFilePath", srv.KeyFile)...))
	}
	bc.store = c.clusterClient().store
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := authHTTP(t, "GET", bc.brokers[0].http+"/admin/v2/brokers/magnetar", admin, "", nil)
		if code == 200 && strings.Count(string(body), ":") >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("brokers: %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, body := authHTTP(t, "PUT", bc.brokers[0].http+"/admin/v2/namespaces/public/sec", admin, `{"bundles":{"numBundles":4}}`, nil); code != 204 {
		t.Fatalf("create namespace: %d %s", code, body)
	}
	if code, body := authHTTP(t, "POST", bc.brokers[0].http+"/admin/v2/namespaces/public/sec/permissions/alice", admin, `["produce","consume"]`, nil); code/100 != 2 {
		t.Fatalf("grant: %d %s", code, body)
	}
	px := bc.startProxy("proxy", "--metadata-url", c.url,
		"--authenticationEnabled", "--authenticationProviders", "token", "--tokenSecretKey", "file://"+key, "--superUserRoles", "admin",
		"--brokerClientAuthenticationPlugin", "token", "--brokerClientAuthenticationParameters", "file://"+proxyTokFile,
		"--forward-authorization-credentials")
	client := func(tk string) pulsar.Client {
		o := pulsar.ClientOptions{URL: px.service, OperationTimeout: 10 * time.Second, ConnectionTimeout: 5 * time.Second, Logger: plog.DefaultNopLogger()}
		if tk != "" {
			o.Authentication = pulsar.NewAuthenticationToken(tk)
		}
		cl, err := pulsar.NewClient(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	// alice, granted, works through the proxy on topics of both brokers.
	ca := client(alice)
	for _, tp := range []string{"persistent://public/sec/a0", "persistent://public/sec/a1", "persistent://public/sec/a2", "persistent://public/sec/a3"} {
		roundTrip(t, ca, tp, 5)
	}
	// bob, authenticated but without a grant, is refused by the broker on
	// the original principal (the proxy role itself may do everything).
	cb := client(bob)
	if _, err := cb.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/sec/a0"}); err == nil || !strings.Contains(err.Error(), "AuthorizationError") {
		t.Fatalf("bob's producer through the proxy: %v, want AuthorizationError", err)
	}
	if _, err := cb.Subscribe(pulsar.ConsumerOptions{Topic: "persistent://public/sec/a0", SubscriptionName: "s"}); err == nil || !strings.Contains(err.Error(), "AuthorizationError") {
		t.Fatalf("bob's consumer through the proxy: %v, want AuthorizationError", err)
	}
	// No credentials: refused at the proxy.
	if _, err := client("").CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/sec/a0"}); err == nil {
		t.Fatal("anonymous client produced through the proxy")
	}

	proxyAddr := strings.TrimPrefix(px.service, "pulsar://")
	brokerAddr := strings.TrimPrefix(bc.brokers[0].service, "pulsar://")
	wantErr := func(what string, r *pb.BaseCommand, code pb.ServerError) {
		t.Helper()
		if r.GetType() != pb.BaseCommand_ERROR || r.GetError().GetError() != code {
			t.Fatalf("%s: got %v, want ERROR %v", what, r, code)
		}
	}
	// Spoofing through the proxy: a client naming an original principal.
	m := tokenConnect(bob)
	m.OriginalPrincipal = proto.String("admin")
	wantErr("client CONNECT with original_principal to the proxy", rawConnect(t, proxyAddr, m), pb.ServerError_AuthorizationError)
	m = tokenConnect(bob)
	m.OriginalPrincipal = proto.String("admin")
	m.ProxyToBrokerUrl = proto.String(brokerAddr)
	wantErr("relay CONNECT with original_principal to the proxy", rawConnect(t, proxyAddr, m), pb.ServerError_AuthorizationError)
	// Spoofing at the broker: only proxy roles may name a principal, and
	// they must.
	m = tokenConnect(bob)
	m.OriginalPrincipal = proto.String("admin")
	r := rawConnect(t, brokerAddr, m)
	wantErr("bob naming admin at the broker", r, pb.ServerError_AuthorizationError)
	if r.GetError().GetMessage() != "Invalid roles." {
		t.Fatalf("message %q", r.GetError().GetMessage())
	}
	wantErr("proxy role without original principal", rawConnect(t, brokerAddr, tokenConnect(proxyTok)), pb.ServerError_AuthorizationError)
	m = tokenConnect(proxyTok)
	m.OriginalPrincipal = proto.String("proxy")
	wantErr("proxy role naming a proxy role", rawConnect(t, brokerAddr, m), pb.ServerError_AuthorizationError)
	m = tokenConnect(proxyTok)
	m.OriginalPrincipal = proto.String("alice")
	if r := rawConnect(t, brokerAddr, m); r.GetType() != pb.BaseCommand_CONNECTED {
		t.Fatalf("proxy role naming alice: %v", r)
	}
	// authenticateOriginalAuthData: the forwarded credentials must be
	// valid and yield the original principal.
	broker2 := strings.TrimPrefix(bc.brokers[1].service, "pulsar://")
	withData := func(principal, data string) *pb.CommandConnect {
		m := tokenConnect(proxyTok)
		m.OriginalPrincipal, m.OriginalAuthMethod, m.OriginalAuthData = proto.String(principal), proto.String("token"), proto.String(data)
		return m
	}
	if r := rawConnect(t, broker2, withData("alice", alice)); r.GetType() != pb.BaseCommand_CONNECTED {
		t.Fatalf("proxy forwarding alice's token for alice: %v", r)
	}
	wantErr("proxy forwarding bob's token for alice", rawConnect(t, broker2, withData("alice", bob)), pb.ServerError_AuthorizationError)
	wantErr("proxy forwarding garbage for alice", rawConnect(t, broker2, withData("alice", "not-a-token")), pb.ServerError_AuthorizationError)
	m = tokenConnect(proxyTok)
	m.OriginalPrincipal = proto.String("alice")
	wantErr("proxy naming alice without her credentials", rawConnect(t, broker2, m), pb.ServerError_AuthorizationError)

	// A relay to something that is not a broker.
	m = tokenConnect(alice)
	m.ProxyToBrokerUrl = proto.String(c.zk.Addr())
	wantErr("relay to ZooKeeper", rawConnect(t, proxyAddr, m), pb.ServerError_ServiceNotReady)

	// HTTP: the proxy forwards alice as the original principal; bob is
	// refused (403), and a forged header is refused outright (401) by the
	// proxy as by a broker.
	lookup := "/lookup/v2/topic/persistent/public/sec/a0"
	if code, body := authHTTP(t, "GET", px.http+lookup, alice, "", nil); code != 200 {
		t.Fatalf("alice HTTP lookup through the proxy: %d %s", code, body)
	}
	if code, body := authHTTP(t, "GET", px.http+lookup, bob, "", nil); code != 403 {
		t.Fatalf("bob HTTP lookup through the proxy: %d %s", code, body)
	}
	forged := map[string]string{auth.HeaderOriginalPrincipal: "admin"}
	if code, body := authHTTP(t, "GET", px.http+lookup, bob, "", forged); code != 401 {
		t.Fatalf("bob with a forged X-Original-Principal through the proxy: %d %s", code, body)
	}
	if code, body := authHTTP(t, "GET", bc.brokers[0].http+lookup, bob, "", forged); code != 401 {
		t.Fatalf("bob with a forged X-Original-Principal at the broker: %d %s", code, body)
	}
	if code, body := authHTTP(t, "GET", bc.brokers[0].http+lookup, proxyTok, "", nil); code != 401 {
		t.Fatalf("proxy role without X-Original-Principal at the broker: %d %s", code, body)
	}
	if code, body := authHTTP(t, "GET", px.http+lookup, "", "", nil); code != 401 {
		t.Fatalf("anonymous HTTP through the proxy: %d %s", code, body)
	}
	// TLS end to end: clients over pulsar+ssl to a second proxy, which
	// talks TLS to the brokers' TLS ports.
	_, tf := startMagnetar(t, "proxy-tls", "magnetar proxy ready", "proxy", "--metadata-url", c.url, "--listen", "", "--http", "127.0.0.1:0",
		"--listen-tls", "127.0.0.1:0", "--tlsCertificateFilePath", srv.CertFile, "--tlsKeyFilePath", srv.KeyFile,
		"--authenticationEnabled", "--authenticationProviders", "token", "--tokenSecretKey", "file://"+key,
		"--brokerClientAuthenticationPlugin", "token", "--brokerClientAuthenticationParameters", "file://"+proxyTokFile,
		"--tls-enabled-with-broker", "--brokerClientTrustCertsFilePath", caFile, "--forward-authorization-credentials")
	if tf["service-tls"] == "" {
		t.Fatalf("TLS proxy ready line: %v", tf)
	}
	tcl, err := pulsar.NewClient(pulsar.ClientOptions{URL: tf["service-tls"], TLSTrustCertsFilePath: caFile, OperationTimeout: 10 * time.Second,
		ConnectionTimeout: 5 * time.Second, Authentication: pulsar.NewAuthenticationToken(alice), Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tcl.Close)
	for _, tp := range []string{"persistent://public/sec/t0", "persistent://public/sec/t1", "persistent://public/sec/t2"} {
		roundTrip(t, tcl, tp, 5)
	}
	tb, err := pulsar.NewClient(pulsar.ClientOptions{URL: tf["service-tls"], TLSTrustCertsFilePath: caFile, OperationTimeout: 10 * time.Second,
		ConnectionTimeout: 5 * time.Second, Authentication: pulsar.NewAuthenticationToken(bob), Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tb.Close)
	if _, err := tb.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/sec/t0"}); err == nil || !strings.Contains(err.Error(), "AuthorizationError") {
		t.Fatalf("bob's producer through the TLS proxy: %v, want AuthorizationError", err)
	}

	// Stats are for superusers.
	if code, _ := authHTTP(t, "GET", px.http+"/proxy-stats/connections", alice, "", nil); code != 403 {
		t.Fatalf("alice reading /proxy-stats: %d", code)
	}
	if code, body := authHTTP(t, "GET", px.http+"/proxy-stats/connections", admin, "", nil); code != 200 || !strings.Contains(string(body), `"role":"alice"`) {
		t.Fatalf("admin reading /proxy-stats: %d %s", code, body)
	}
}
