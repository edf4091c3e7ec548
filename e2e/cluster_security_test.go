package e2e

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/internal/testcert"
)

// TestClusterSecure runs ZooKeeper, a bookie that requires mutual TLS and
// a token AUTH of role "broker", and a broker that reaches it with
// brokerClient* settings and serves clients over pulsar+ssl with token
// authentication. A second broker without bookie credentials cannot
// store anything.
func TestClusterSecure(t *testing.T) {
	c := newTestCluster(t)
	dir := t.TempDir()
	ca, err := testcert.NewCA("cluster CA")
	if err != nil {
		t.Fatal(err)
	}
	caFile, _ := ca.WriteCA(dir, "ca.pem")
	bk, _ := ca.Server("bookie", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	bk.Write(dir, "bookie")
	br, _ := ca.Server("broker", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	br.Write(dir, "broker")
	cl, _ := ca.Client("broker")
	cl.Write(dir, "broker-client")
	k, _ := auth.NewSecretKey("HS256")
	key := filepath.Join(dir, "secret.key")
	os.WriteFile(key, k, 0o600)
	tok := func(role string) string {
		s, err := auth.CreateToken(k, auth.TokenSpec{Subject: role})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	brokerTok := filepath.Join(dir, "broker.token")
	os.WriteFile(brokerTok, []byte(tok("broker")), 0o600)
	bookieConf := filepath.Join(dir, "bookie.conf")
	os.WriteFile(bookieConf, []byte(strings.Join([]string{
		"tlsCertificateFilePath=" + bk.CertFile, "tlsKeyFilePath=" + bk.KeyFile, "tlsTrustCertsFilePath=" + caFile,
		"tlsRequireTrustedClientCertOnConnect=true", "authenticationEnabled=true", "authenticationProviders=token",
		"tokenSecretKey=file://" + key, "superUserRoles=broker",
	}, "\n")), 0o600)
	startMagnetar(t, "bookie", "magnetar bookie ready", "bookie", "--metadata-url", c.url, "--listen", "127.0.0.1:0",
		"--data-dir", t.TempDir(), "--config", bookieConf)

	common := []string{"--ensemble", "1", "--write-quorum", "1", "--ack-quorum", "1", "--autorecovery=false",
		"--authenticationEnabled", "--authenticationProviders", "token", "--tokenSecretKey", "file://" + key,
		"--authorizationEnabled", "--superUserRoles", "broker,admin",
		"--brokerServicePortTls", "127.0.0.1:0", "--tlsCertificateFilePath", br.CertFile, "--tlsKeyFilePath", br.KeyFile}
	good := append([]string{"--brokerClientTlsEnabled", "--brokerClientTrustCertsFilePath", caFile,
		"--brokerClientCertificateFilePath", cl.CertFile, "--brokerClientKeyFilePath", cl.KeyFile,
		"--brokerClientAuthenticationPlugin", "org.apache.pulsar.client.impl.auth.AuthenticationToken",
		"--brokerClientAuthenticationParameters", "file://" + brokerTok}, common...)
	p1, f1 := startMagnetar(t, "broker", "magnetar broker ready", append([]string{"broker", "--metadata-url", c.url,
		"--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--advertised-host", "127.0.0.1"}, good...)...)
	produce := func(url string) error {
		cli, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, TLSTrustCertsFilePath: caFile, OperationTimeout: 10 * time.Second,
			Authentication: pulsar.NewAuthenticationToken(tok("admin")), Logger: plog.DefaultNopLogger()})
		if err != nil {
			return err
		}
		defer cli.Close()
		p, err := cli.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/secure-" + url[len(url)-5:], SendTimeout: 10 * time.Second})
		if err != nil {
			return err
		}
		defer p.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_, err = p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("x")})
		return err
	}
	if err := produce(f1["service-tls"]); err != nil {
		t.Fatalf("secure broker: %v", err)
	}
	// Same cluster, no bookie credentials: TLS to the bookie but no
	// client certificate and no token. The first broker stops (releasing
	// its bundles) so that this one owns the topic instead of
	// redirecting the client to the broker that has credentials.
	p1.stop()
	bad := append([]string{"--brokerClientTlsEnabled", "--brokerClientTrustCertsFilePath", caFile}, common...)
	_, f2 := startMagnetar(t, "broker2", "magnetar broker ready", append([]string{"broker", "--metadata-url", c.url,
		"--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--advertised-host", "127.0.0.1"}, bad...)...)
	if err := produce(f2["service-tls"]); err == nil {
		t.Fatal("broker without bookie credentials stored a message")
	}
}
