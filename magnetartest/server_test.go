package magnetartest_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/internal/testcert"
	"github.com/magnetar-mq/magnetar/magnetartest"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func client(t *testing.T, srv *magnetartest.Server, o pulsar.ClientOptions) pulsar.Client {
	t.Helper()
	o.URL = srv.ServiceURL()
	o.Logger = plog.DefaultNopLogger()
	if o.OperationTimeout == 0 {
		o.OperationTimeout = 10 * time.Second
	}
	c, err := pulsar.NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// produce sends payloads to topic and returns after every receipt.
func produce(t *testing.T, c pulsar.Client, topic string, payloads ...string) error {
	t.Helper()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		return err
	}
	defer p.Close()
	for _, s := range payloads {
		if _, err := p.Send(ctx(t), &pulsar.ProducerMessage{Payload: []byte(s)}); err != nil {
			return err
		}
	}
	return nil
}

// consume reads n messages of topic from the earliest position.
func consume(t *testing.T, c pulsar.Client, topic string, n int) []string {
	t.Helper()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	for len(got) < n {
		m, err := cons.Receive(ctx(t))
		if err != nil {
			t.Fatalf("receive %d of %d: %v", len(got)+1, n, err)
		}
		got = append(got, string(m.Payload()))
		cons.Ack(m)
	}
	return got
}

func httpGet(t *testing.T, u, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), "GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestTwoServersDoNotCollide starts two servers at once in one process:
// they get different ports and directories, keep their own topics and
// their own metrics, and closing one leaves the other serving.
func TestTwoServersDoNotCollide(t *testing.T) {
	var a, b *magnetartest.Server
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a = magnetartest.Start(t) }()
	go func() { defer wg.Done(); b = magnetartest.Start(t) }()
	wg.Wait()
	if a == nil || b == nil {
		t.Fatal("a server did not start")
	}
	if a.ServiceURL() == b.ServiceURL() || a.WebURL() == b.WebURL() || a.DataDir() == b.DataDir() {
		t.Fatalf("shared: %s %s %s / %s %s %s", a.ServiceURL(), a.WebURL(), a.DataDir(), b.ServiceURL(), b.WebURL(), b.DataDir())
	}
	for _, u := range []string{a.ServiceURL(), a.WebURL(), b.ServiceURL(), b.WebURL()} {
		pu, err := url.Parse(u)
		if err != nil || pu.Hostname() != "127.0.0.1" || pu.Port() == "" || pu.Port() == "0" {
			t.Fatalf("%s: want 127.0.0.1 on a bound port", u)
		}
	}
	ca, cb := client(t, a, pulsar.ClientOptions{}), client(t, b, pulsar.ClientOptions{})
	const topic = "persistent://public/default/same-name"
	if err := produce(t, ca, topic, "a1", "a2", "a3"); err != nil {
		t.Fatal(err)
	}
	if err := produce(t, cb, topic, "b1"); err != nil {
		t.Fatal(err)
	}
	if got := consume(t, cb, topic, 1); got[0] != "b1" {
		t.Fatalf("server b delivered %q", got)
	}
	if got := strings.Join(consume(t, ca, topic, 3), ","); got != "a1,a2,a3" {
		t.Fatalf("server a delivered %s", got)
	}
	// Each /metrics shows its own server's count for the topic.
	for _, c := range []struct {
		srv  *magnetartest.Server
		want string
	}{{a, "3"}, {b, "1"}} {
		code, body := httpGet(t, c.srv.WebURL()+"/metrics", "")
		if code != 200 {
			t.Fatalf("/metrics: %d", code)
		}
		line := metricLine(body, "pulsar_in_messages_total", "same-name")
		if !strings.HasSuffix(line, " "+c.want) {
			t.Errorf("%s /metrics: pulsar_in_messages_total for the topic %q, want %s", c.srv.WebURL(), line, c.want)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := produce(t, cb, topic, "b2"); err != nil {
		t.Fatalf("b after a closed: %v", err)
	}
	if code, _ := httpGet(t, b.WebURL()+"/admin/v2/brokers/health", ""); code != 200 {
		t.Fatalf("b health after a closed: %d", code)
	}
}

// metricLine is the first sample line of name whose labels mention sub.
func metricLine(body, name, sub string) string {
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, name+"{") && strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// TestTokenAuth: WithTokenAuth refuses clients without a token (binary
// protocol and REST), accepts the admin token, and authorizes: a role
// without grants may not produce until the admin grants it.
func TestTokenAuth(t *testing.T) {
	srv := magnetartest.Start(t, magnetartest.WithTokenAuth())
	const topic = "persistent://public/default/secured"
	if err := produce(t, client(t, srv, pulsar.ClientOptions{OperationTimeout: 2 * time.Second}), topic, "x"); err == nil {
		// The client retries the refused handshake until its
		// operation timeout; the admin's client below succeeds.
		t.Fatal("a client without a token produced")
	}
	if code, _ := httpGet(t, srv.WebURL()+"/admin/v2/tenants", ""); code != http.StatusUnauthorized {
		t.Fatalf("REST without a token: %d, want 401", code)
	}
	if code, body := httpGet(t, srv.WebURL()+"/admin/v2/tenants", srv.AdminToken()); code != 200 || !strings.Contains(body, "public") {
		t.Fatalf("REST with the admin token: %d %s", code, body)
	}
	alice := client(t, srv, pulsar.ClientOptions{OperationTimeout: 2 * time.Second, Authentication: pulsar.NewAuthenticationToken(srv.Token("alice"))})
	if err := produce(t, alice, topic, "x"); err == nil || !strings.Contains(err.Error(), "AuthorizationError") {
		t.Fatalf("alice without a grant: %v, want AuthorizationError", err)
	}
	admin, err := pulsaradmin.NewClient(&pulsaradmin.Config{WebServiceURL: srv.WebURL(), Token: srv.AdminToken()})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := utils.GetNamespaceName("public/default")
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Namespaces().GrantNamespacePermission(*ns, "alice", []utils.AuthAction{utils.AuthAction("produce")}); err != nil {
		t.Fatal(err)
	}
	if err := produce(t, alice, topic, "granted"); err != nil {
		t.Fatalf("alice after the grant: %v", err)
	}
	if got := consume(t, client(t, srv, pulsar.ClientOptions{Authentication: pulsar.NewAuthenticationToken(srv.AdminToken())}), topic, 1); got[0] != "granted" {
		t.Fatalf("read %q", got)
	}
	if magnetartest.Start(t).Token("alice") != "" {
		t.Fatal("a server without token auth minted a token")
	}
}

// TestBrokerConfig: WithBrokerConfig reaches the broker: without
// automatic topic creation, producing to an unknown topic fails.
func TestBrokerConfig(t *testing.T) {
	srv := magnetartest.Start(t, magnetartest.WithBrokerConfig(func(c *brokerconf.Config) { c.DisableAutoTopicCreation = true }))
	if err := produce(t, client(t, srv, pulsar.ClientOptions{}), "persistent://public/default/not-created", "x"); err == nil {
		t.Fatal("produced to a topic that auto-creation would have made")
	}
	ctl := magnetartest.Start(t)
	if err := produce(t, client(t, ctl, pulsar.ClientOptions{}), "persistent://public/default/not-created", "x"); err != nil {
		t.Fatalf("default server: %v", err)
	}
}

// TestRestartOnDataDir: a server started again on the same directory
// serves every acknowledged message of the first, byte for byte.
func TestRestartOnDataDir(t *testing.T) {
	dir := t.TempDir()
	first := magnetartest.Start(t, magnetartest.WithDataDir(dir))
	const topic = "persistent://public/default/durable"
	var want []string
	for i := range 50 {
		want = append(want, fmt.Sprintf("m-%03d-%s", i, strings.Repeat("x", i)))
	}
	c := client(t, first, pulsar.ClientOptions{})
	if err := produce(t, c, topic, want...); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := magnetartest.Start(t, magnetartest.WithDataDir(dir))
	got := consume(t, client(t, second, pulsar.ClientOptions{}), topic, len(want))
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("after restart read %q", got)
	}
}

// TestFunctionsWorker: WithFunctionsWorker serves the functions REST
// API on WebURL; without it the route does not exist.
func TestFunctionsWorker(t *testing.T) {
	srv := magnetartest.Start(t, magnetartest.WithFunctionsWorker())
	if code, body := httpGet(t, srv.WebURL()+"/admin/v3/functions/public/default", ""); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Fatalf("functions list: %d %q", code, body)
	}
	plain := magnetartest.Start(t)
	if code, _ := httpGet(t, plain.WebURL()+"/admin/v3/functions/public/default", ""); code != http.StatusNotFound {
		t.Fatalf("functions list without a worker: %d, want 404", code)
	}
}

// BenchmarkStart measures starting and closing a server (what every
// test using the package pays); start-ms is the start alone.
func BenchmarkStart(b *testing.B) {
	var start time.Duration
	for b.Loop() {
		srv, err := magnetartest.New()
		if err != nil {
			b.Fatal(err)
		}
		start += srv.StartupTime()
		if err := srv.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(start.Microseconds())/1000/float64(b.N), "start-ms/op")
}

// BenchmarkStartProcess is the baseline: a `magnetar standalone` process
// started until its ready line, then stopped with SIGTERM (what a test
// without this package does).
func BenchmarkStartProcess(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "magnetar")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/magnetar").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	var start time.Duration
	for b.Loop() {
		t0 := time.Now()
		cmd := exec.Command(bin, "standalone", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
			"--data-dir", b.TempDir(), "--no-functions-worker", "--log-level", "error")
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || !strings.Contains(line, "ready") {
			b.Fatalf("no ready line: %q %v", line, err)
		}
		start += time.Since(t0)
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(start.Microseconds())/1000/float64(b.N), "start-ms/op")
}

// TestTLS: TLS keys given WithSecurity serve pulsar+ssl:// and https://
// on free loopback ports next to the plain ones; a client trusting the
// CA produces and consumes over TLS, and the admin API answers on https.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := testcert.NewCA("magnetartest CA")
	if err != nil {
		t.Fatal(err)
	}
	caFile, err := ca.WriteCA(dir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	srvCert, err := ca.Server("localhost", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	if srvCert, err = srvCert.Write(dir, "server"); err != nil {
		t.Fatal(err)
	}
	srv := magnetartest.Start(t,
		magnetartest.WithSecurity("tlsEnabled", "true"),
		magnetartest.WithSecurity("tlsCertificateFilePath", srvCert.CertFile),
		magnetartest.WithSecurity("tlsKeyFilePath", srvCert.KeyFile))
	for _, u := range []string{srv.TLSServiceURL(), srv.TLSWebURL()} {
		pu, err := url.Parse(u)
		if err != nil || pu.Hostname() != "127.0.0.1" || pu.Port() == "0" || pu.Port() == "" || pu.Port() == "6651" || pu.Port() == "8443" {
			t.Fatalf("TLS URL %q: want 127.0.0.1 on a free port", u)
		}
	}
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: srv.TLSServiceURL(), TLSTrustCertsFilePath: caFile,
		Logger: plog.DefaultNopLogger(), OperationTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	const topic = "persistent://public/default/over-tls"
	if err := produce(t, c, topic, "sealed"); err != nil {
		t.Fatal(err)
	}
	if got := consume(t, c, topic, 1); got[0] != "sealed" {
		t.Fatalf("read %q over TLS", got)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := hc.Get(srv.TLSWebURL() + "/admin/v2/clusters")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "standalone") {
		t.Fatalf("https admin: %d %s", resp.StatusCode, body)
	}
	if magnetartest.Start(t).TLSServiceURL() != "" {
		t.Fatal("a server without TLS keys reports a TLS URL")
	}
}
