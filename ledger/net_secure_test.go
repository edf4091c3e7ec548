package ledger_test

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/bookie/server"
	"github.com/magnetar-mq/magnetar/internal/testcert"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/ledger"
)

// secureBookie is one bookie on a TLS listener that requires a trusted
// client certificate and an AUTH token of role "broker".
type secureBookie struct {
	addr, caFile string
	key          []byte
	client       *testcert.Pair
	ca           *testcert.CA
}

func newSecureBookie(t *testing.T, dns []string, ips []net.IP) *secureBookie {
	t.Helper()
	dir := t.TempDir()
	ca, err := testcert.NewCA("bookie CA")
	if err != nil {
		t.Fatal(err)
	}
	sb := &secureBookie{ca: ca}
	sb.caFile, _ = ca.WriteCA(dir, "ca.pem")
	srv, _ := ca.Server("bookie", dns, ips)
	srv.Write(dir, "bookie")
	sb.client, _ = ca.Client("broker")
	sb.client.Write(dir, "client")
	sb.key, _ = auth.NewSecretKey("HS256")
	keyFile := filepath.Join(dir, "secret.key")
	os.WriteFile(keyFile, sb.key, 0o600)
	sc := auth.DefaultConfig()
	sc.TLSCertificateFilePath, sc.TLSKeyFilePath, sc.TLSTrustCertsFilePath = srv.CertFile, srv.KeyFile, sb.caFile
	sc.TLSRequireTrustedClientCertOnConnect = true
	sc.AuthenticationEnabled = true
	sc.AuthenticationProviders = []string{"token"}
	sc.TokenSecretKey = "file://" + keyFile
	sc.SuperUserRoles = []string{"broker"}
	sec, err := auth.New(sc, nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bookie.Open(bookieOptions(vfs.NewOS(), t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	s, err := server.New(b, server.Options{TLS: sec.TLS.Config(), Auth: &auth.BookieAuthenticator{Authn: sec.Authn, Roles: sc.SuperUserRoles}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sb.addr = s.Addr()
	return sb
}

func (sb *secureBookie) token(t *testing.T, role string) []byte {
	tok, err := auth.CreateToken(sb.key, auth.TokenSpec{Subject: role})
	if err != nil {
		t.Fatal(err)
	}
	return []byte(tok)
}

// tryWrite creates a ledger on the bookie and adds one entry.
func tryWrite(t *testing.T, sb *secureBookie, o ledger.NetOptions) error {
	t.Helper()
	o.DialTimeout, o.RequestTimeout = 3*time.Second, 3*time.Second
	res := ledger.NewNetResolver(o)
	t.Cleanup(func() { res.Close() })
	c, err := ledger.NewClient(openStore(t), res, ledger.Options{Bookies: []string{sb.addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := ctxT(t)
	h, err := c.Create(ctx, ledger.CreateOptions{Ensemble: 1, WriteQuorum: 1, AckQuorum: 1, Password: []byte("p")})
	if err != nil {
		return err
	}
	if _, err := h.Add(ctx, payload(h.ID(), 0, 100)); err != nil {
		return err
	}
	checkEntries(t, h, h.ID(), 0, 0)
	return h.Close(ctx)
}

func TestNetBookieTLSAndToken(t *testing.T) {
	sb := newSecureBookie(t, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	clientTLS := func(t *testing.T, trust string, cert *testcert.Pair) *tls.Config {
		var cf, kf string
		if cert != nil {
			cf, kf = cert.CertFile, cert.KeyFile
		}
		c, err := auth.ClientTLS(trust, cf, kf, false)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	creds := func(tok []byte) func() ([]byte, error) {
		ca, err := auth.ParseClientAuth("token", "token:"+string(tok))
		if err != nil {
			t.Fatal(err)
		}
		return auth.BookieAuthPayload(ca)
	}
	if err := tryWrite(t, sb, ledger.NetOptions{TLS: clientTLS(t, sb.caFile, sb.client), Auth: creds(sb.token(t, "broker"))}); err != nil {
		t.Fatalf("mTLS + token: %v", err)
	}
	other, _ := testcert.NewCA("other")
	otherFile, _ := other.WriteCA(t.TempDir(), "other.pem")
	foreign, _ := other.Client("broker")
	foreign, _ = foreign.Write(t.TempDir(), "foreign")
	otherKey, _ := auth.NewSecretKey("HS256")
	forged, _ := auth.CreateToken(otherKey, auth.TokenSpec{Subject: "broker"})
	fails := map[string]ledger.NetOptions{
		"plaintext":             {Auth: creds(sb.token(t, "broker"))},
		"no client certificate": {TLS: clientTLS(t, sb.caFile, nil), Auth: creds(sb.token(t, "broker"))},
		"foreign client cert":   {TLS: clientTLS(t, sb.caFile, foreign), Auth: creds(sb.token(t, "broker"))},
		"untrusted bookie":      {TLS: clientTLS(t, otherFile, sb.client), Auth: creds(sb.token(t, "broker"))},
		"no AUTH":               {TLS: clientTLS(t, sb.caFile, sb.client)},
		"wrong role":            {TLS: clientTLS(t, sb.caFile, sb.client), Auth: creds(sb.token(t, "alice"))},
		"forged token":          {TLS: clientTLS(t, sb.caFile, sb.client), Auth: creds([]byte(forged))},
	}
	for name, o := range fails {
		t.Run(name, func(t *testing.T) {
			if err := tryWrite(t, sb, o); err == nil {
				t.Fatal("write accepted")
			}
		})
	}
}

// The client verifies the bookie's host name (Pulsar CVE-2022-33682/33683:
// internal clients that skipped it): a certificate without the dialled
// address fails even though its chain is trusted.
func TestNetBookieHostnameVerified(t *testing.T) {
	sb := newSecureBookie(t, []string{"bookie.example"}, nil)
	tc, _ := auth.ClientTLS(sb.caFile, sb.client.CertFile, sb.client.KeyFile, false)
	ca, _ := auth.ParseClientAuth("token", "token:"+string(sb.token(t, "broker")))
	if err := tryWrite(t, sb, ledger.NetOptions{TLS: tc, Auth: auth.BookieAuthPayload(ca)}); err == nil {
		t.Fatal("bookie certificate without the dialled address accepted")
	}
}
