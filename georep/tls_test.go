package georep

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/internal/testcert"
)

// TestReplicationOverTLS: a remote cluster that takes only TLS with
// client-certificate authentication receives every message, in order,
// when its ClusterData says brokerClientTlsEnabled with a trust file and
// a client certificate. A ClusterData naming TLS authentication without
// a certificate is an error before anything is dialled; nothing is sent
// or lost, and replication resumes once the certificate is added.
func TestReplicationOverTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := testcert.NewCA("magnetar geo CA")
	if err != nil {
		t.Fatal(err)
	}
	caFile, _ := ca.WriteCA(dir, "ca.pem")
	srv, err := ca.Server("localhost", []string{"localhost"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Write(dir, "broker"); err != nil {
		t.Fatal(err)
	}
	repl, err := ca.Client("replicator")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repl.Write(dir, "replicator"); err != nil {
		t.Fatal(err)
	}
	sc := auth.DefaultConfig()
	for k, v := range map[string]string{
		"authenticationEnabled":   "true",
		"authenticationProviders": "tls",
		"superUserRoles":          "replicator",
		"tlsCertificateFilePath":  srv.CertFile,
		"tlsKeyFilePath":          srv.KeyFile,
		"tlsTrustCertsFilePath":   caFile,
	} {
		if err := sc.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	config := newConfigStore(t)
	a := startGeo(t, "ca", config, geoOptions{})
	b := startGeo(t, "cb", config, geoOptions{mut: func(c *brokerconf.Config) {
		c.AdvertisedHost = "localhost"
		c.TLSServiceAddr = "127.0.0.1:0"
		c.Security = &sc
	}})
	ctx := context.Background()
	_, port, _ := net.SplitHostPort(b.TLSServiceAddr())
	tlsURL := "pulsar+ssl://localhost:" + port
	cd, err := a.Policies().Cluster(ctx, "cb")
	if err != nil {
		t.Fatal(err)
	}
	// First without the client certificate: the replicator cannot
	// connect and keeps the backlog.
	cd.BrokerServiceURL = "" // plaintext is not an option
	cd.BrokerServiceURLTLS = tlsURL
	cd.BrokerClientTLSEnabled = true
	cd.BrokerClientTrustCertsFilePath = caFile
	cd.AuthenticationPlugin = "org.apache.pulsar.client.impl.auth.AuthenticationTls"
	if err := a.Policies().UpdateCluster(ctx, "cb", cd); err != nil {
		t.Fatal(err)
	}
	if _, err := replTargetOf("cb", cd, nil); err == nil || !strings.Contains(err.Error(), "brokerClientCertificateFilePath") {
		t.Fatalf("TLS auth without a certificate: %v", err)
	}
	geoNamespace(t, a, "tls", "ca", "cb")
	topic := geoTopic("tls")
	p, err := a.Client(t).CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	for i := range n {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "m-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := a.Admin().Reads.TopicStats(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if rs := st.Replication["cb"]; rs.Connected || rs.ReplicationBacklog != n {
		t.Fatalf("replicator without a certificate: connected %v backlog %d", rs.Connected, rs.ReplicationBacklog)
	}
	cd.BrokerClientCertificateFilePath = repl.CertFile
	cd.BrokerClientKeyFilePath = repl.KeyFile
	if err := a.Policies().UpdateCluster(ctx, "cb", cd); err != nil {
		t.Fatal(err)
	}
	cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: tlsURL, TLSTrustCertsFilePath: caFile,
		Authentication: pulsar.NewAuthenticationTLS(repl.CertFile, repl.KeyFile)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	consB, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		m, err := consB.Receive(rctx)
		cancel()
		if err != nil {
			t.Fatalf("cb: %d of %d: %v", i, n, err)
		}
		if want := fmt.Sprintf("m-%d", i); string(m.Payload()) != want {
			t.Fatalf("cb got %q, want %q", m.Payload(), want)
		}
		consB.Ack(m)
	}
	brokertest.WaitFor(t, "replicator connected over TLS", func() bool {
		st, err := a.Admin().Reads.TopicStats(ctx, topic)
		return err == nil && st.Replication["cb"].Connected && strings.Contains(st.Replication["cb"].OutboundConnection, port)
	})
}
