package cliflags

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/bookie/server"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/internal/testcert"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
)

func secFlags(t *testing.T, args ...string) *Security {
	t.Helper()
	var s Security
	fl := pflag.NewFlagSet("x", pflag.ContinueOnError)
	s.Register(fl)
	if err := fl.Parse(args); err != nil {
		t.Fatal(err)
	}
	return &s
}

// TestBookieSecurityWiring: a bookie configured with the bookie command's
// settings and a ledger client configured with the broker's
// brokerClient* settings write and read a ledger over mutual TLS with a
// token AUTH; the same client without credentials is refused.
func TestBookieSecurityWiring(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	ca, _ := testcert.NewCA("wiring CA")
	caFile, _ := ca.WriteCA(dir, "ca.pem")
	srv, _ := ca.Server("bookie", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	srv.Write(dir, "bookie")
	cl, _ := ca.Client("broker")
	cl.Write(dir, "client")
	key := filepath.Join(dir, "secret.key")
	k, _ := auth.NewSecretKey("HS256")
	os.WriteFile(key, k, 0o600)
	tok, _ := auth.CreateToken(k, auth.TokenSpec{Subject: "broker"})
	tokFile := filepath.Join(dir, "broker.token")
	os.WriteFile(tokFile, []byte(tok+"\n"), 0o600)

	bookieSide := secFlags(t, "--tlsCertificateFilePath", srv.CertFile, "--tlsKeyFilePath", srv.KeyFile,
		"--tlsTrustCertsFilePath", caFile, "--tlsRequireTrustedClientCertOnConnect=true",
		"--authenticationEnabled=true", "--authenticationProviders", "token", "--tokenSecretKey", "file://"+key,
		"--superUserRoles", "broker")
	tc, hook, err := bookieSide.BookieServer(log)
	if err != nil || tc == nil || hook == nil {
		t.Fatalf("bookieServer: %v %v %v", tc, hook, err)
	}
	bk, err := bookie.Open(bookie.Options{FS: vfs.NewOS(), JournalDir: filepath.Join(dir, "j"), LedgerDirs: []string{filepath.Join(dir, "l")}, JournalNoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bk.Close()
	s, err := server.New(bk, server.Options{TLS: tc, Auth: hook})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	write := func(args ...string) error {
		bc, err := secFlags(t, args...).BookieClient(log)
		if err != nil {
			return err
		}
		store, err := embedded.Open(filepath.Join(t.TempDir(), "m.db"), embedded.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		no := ledger.NetOptions{DialTimeout: 3 * time.Second, RequestTimeout: 3 * time.Second}
		bc(&no)
		res := ledger.NewNetResolver(no)
		defer res.Close()
		c, err := ledger.NewClient(store, res, ledger.Options{Bookies: []string{s.Addr()}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h, err := c.Create(ctx, ledger.CreateOptions{Ensemble: 1, WriteQuorum: 1, AckQuorum: 1, Password: []byte("p")})
		if err != nil {
			return err
		}
		if _, err := h.Add(ctx, []byte("x")); err != nil {
			return err
		}
		return h.Close(ctx)
	}
	good := []string{"--brokerClientTlsEnabled=true", "--brokerClientTrustCertsFilePath", caFile,
		"--brokerClientAuthenticationPlugin", "tls", "--brokerClientAuthenticationParameters", "tlsCertFile:" + cl.CertFile + ",tlsKeyFile:" + cl.KeyFile}
	// mTLS alone is not enough: the bookie also wants a token.
	if err := write(good...); err == nil {
		t.Fatal("no AUTH accepted")
	}
	// A tls plugin cannot also carry a token; use the token plugin over
	// TLS with a client certificate.
	tlsOn := []string{"--brokerClientTlsEnabled=true", "--brokerClientTrustCertsFilePath", caFile}
	if err := write(append(tlsOn, "--brokerClientAuthenticationPlugin", "token", "--brokerClientAuthenticationParameters", "file://"+tokFile)...); err == nil {
		t.Fatal("token without client certificate accepted by a mutual-TLS bookie")
	}
	// Client certificate for the transport, token for AUTH: accepted.
	if err := write(append(tlsOn, "--brokerClientCertificateFilePath", cl.CertFile, "--brokerClientKeyFilePath", cl.KeyFile,
		"--brokerClientAuthenticationPlugin", "token", "--brokerClientAuthenticationParameters", "file://"+tokFile)...); err != nil {
		t.Fatalf("mutual TLS + token: %v", err)
	}
	if _, err := secFlags(t, "--brokerClientAuthenticationPlugin", "tls", "--brokerClientAuthenticationParameters", "tlsCertFile:a,tlsKeyFile:b").BookieClient(log); err == nil {
		t.Fatal("tls plugin without brokerClientTlsEnabled accepted")
	}
}

// TestSecurityFlagsApply: Pulsar's listener keys map onto the broker's
// addresses (nothing is bound here).
func TestSecurityFlagsApply(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	cases := []struct {
		args                     []string
		svc, http, tlsSvc, https string
	}{
		{nil, ":6650", ":8080", "", ""},
		{[]string{"--tlsEnabled"}, ":6650", ":8080", ":6651", ":8443"},
		{[]string{"--tlsEnabled", "--brokerServicePortTls", "127.0.0.1:7000"}, ":6650", ":8080", "127.0.0.1:7000", ":8443"},
		{[]string{"--brokerServicePort=", "--webServicePort=", "--brokerServicePortTls", "6651"}, "-", "-", ":6651", ""},
		{[]string{"--brokerServicePort", "7650"}, ":7650", ":8080", "", ""},
	}
	for _, c := range cases {
		cfg := brokerconf.Config{ServiceAddr: ":6650", HTTPAddr: ":8080"}
		if err := secFlags(t, c.args...).Apply(&cfg, log); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if cfg.ServiceAddr != c.svc || cfg.HTTPAddr != c.http || cfg.TLSServiceAddr != c.tlsSvc || cfg.TLSHTTPAddr != c.https {
			t.Errorf("%v: %q %q %q %q", c.args, cfg.ServiceAddr, cfg.HTTPAddr, cfg.TLSServiceAddr, cfg.TLSHTTPAddr)
		}
		if (cfg.Security == nil) != (len(c.args) == 0) {
			t.Errorf("%v: Security %v", c.args, cfg.Security)
		}
	}
	cfg := brokerconf.Config{ServiceAddr: ":6650"}
	if err := secFlags(t, "--brokerServicePort=").Apply(&cfg, log); err == nil {
		t.Error("no binary port at all accepted")
	}
	if err := secFlags(t, "--authenticationEnabled=maybe").Apply(&cfg, log); err == nil {
		t.Error("bad boolean accepted")
	}
}
