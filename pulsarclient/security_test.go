package pulsarclient_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/pulsarclient"

	"golang.org/x/crypto/bcrypt"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/internal/testcert"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

type secBroker struct {
	*testBroker
	tlsURL     string // pulsar+ssl://localhost:port
	tlsIPURL   string // pulsar+ssl://127.0.0.1:port (not in the certificate)
	caFile     string
	key        []byte
	admin, bob *testcert.Pair
}

// startSecure starts a broker with TLS, and token, TLS-certificate and
// basic authentication; "admin" is a superuser, everyone else is refused
// on public/default.
func startSecure(t *testing.T) *secBroker {
	t.Helper()
	dir := t.TempDir()
	ca, err := testcert.NewCA("pulsarclient test CA")
	if err != nil {
		t.Fatal(err)
	}
	sb := &secBroker{}
	sb.caFile, _ = ca.WriteCA(dir, "ca.pem")
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
	}{{&sb.admin, "admin"}, {&sb.bob, "bob"}} {
		p, err := ca.Client(c.role)
		if err != nil {
			t.Fatal(err)
		}
		if *c.p, err = p.Write(dir, c.role); err != nil {
			t.Fatal(err)
		}
	}
	sb.key, _ = auth.NewSecretKey("HS256")
	keyFile := filepath.Join(dir, "secret.key")
	if err := os.WriteFile(keyFile, sb.key, 0o600); err != nil {
		t.Fatal(err)
	}
	hash, _ := bcrypt.GenerateFromPassword([]byte("123456"), bcrypt.MinCost)
	htpasswd := filepath.Join(dir, "htpasswd")
	if err := os.WriteFile(htpasswd, []byte("admin:"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sc := auth.DefaultConfig()
	for k, v := range map[string]string{
		"authenticationEnabled":   "true",
		"authorizationEnabled":    "true",
		"authenticationProviders": "tls,token,basic",
		"tokenSecretKey":          "file://" + keyFile,
		"basicAuthConf":           htpasswd,
		"superUserRoles":          "admin",
		"tlsCertificateFilePath":  srv.CertFile,
		"tlsKeyFilePath":          srv.KeyFile,
		"tlsTrustCertsFilePath":   sb.caFile,
	} {
		if err := sc.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	sb.testBroker = startBroker(t, func(c *brokerconf.Config) {
		c.AdvertisedHost = "localhost"
		c.TLSServiceAddr = "127.0.0.1:0"
		c.TLSHTTPAddr = "127.0.0.1:0"
		c.Security = &sc
	})
	_, port, _ := net.SplitHostPort(sb.TLSServiceAddr())
	sb.tlsURL = "pulsar+ssl://localhost:" + port
	sb.tlsIPURL = "pulsar+ssl://127.0.0.1:" + port
	return sb
}

func (sb *secBroker) token(t *testing.T, role string) string {
	t.Helper()
	tok, err := auth.CreateToken(sb.key, auth.TokenSpec{Subject: role})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// roundTrip produces and consumes one message with opts.
func roundTrip(t *testing.T, tb *testBroker, opts pulsarclient.ClientOptions) error {
	t.Helper()
	cl, err := pulsarclient.NewClient(opts)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx := ctxT(t)
	topic := newTopic("sec")
	cons, err := cl.Subscribe(pulsarclient.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		return err
	}
	defer cons.Close()
	p, err := cl.CreateProducer(pulsarclient.ProducerOptions{Topic: topic})
	if err != nil {
		return err
	}
	defer p.Close()
	if _, err := p.Send(ctx, &pulsarclient.ProducerMessage{Payload: []byte("secret")}); err != nil {
		return err
	}
	m, err := cons.Receive(ctx)
	if err != nil {
		return err
	}
	if string(m.Payload()) != "secret" {
		t.Fatalf("got %q", m.Payload())
	}
	return nil
}

// TestTLSAndAuth: TLS with CA verification and token (fixed, supplier,
// file), TLS client certificate and basic authentication succeed; a wrong
// token, an unauthorised role, an unknown CA and a hostname mismatch under
// hostname verification fail.
func TestTLSAndAuth(t *testing.T) {
	sb := startSecure(t)
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte(sb.token(t, "admin")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	basic, err := pulsarclient.NewAuthenticationBasic("admin", "123456")
	if err != nil {
		t.Fatal(err)
	}
	supplied := 0
	good := map[string]pulsarclient.ClientOptions{
		"token":                 {URL: sb.tlsURL, TLSTrustCertsFilePath: sb.caFile, Authentication: pulsarclient.NewAuthenticationToken(sb.token(t, "admin"))},
		"token over plain":      {URL: sb.url, Authentication: pulsarclient.NewAuthenticationToken(sb.token(t, "admin"))},
		"token file":            {URL: sb.tlsURL, TLSTrustCertsFilePath: sb.caFile, Authentication: pulsarclient.NewAuthenticationTokenFromFile(tokFile)},
		"token supplier":        {URL: sb.tlsURL, TLSTrustCertsFilePath: sb.caFile, Authentication: pulsarclient.NewAuthenticationTokenFromSupplier(func() (string, error) { supplied++; return sb.token(t, "admin"), nil })},
		"tls cert":              {URL: sb.tlsURL, TLSTrustCertsFilePath: sb.caFile, Authentication: pulsarclient.NewAuthenticationTLS(sb.admin.CertFile, sb.admin.KeyFile)},
		"basic":                 {URL: sb.tlsURL, TLSTrustCertsFilePath: sb.caFile, Authentication: basic},
		"hostname verified":     {URL: sb.tlsURL, TLSTrustCertsFilePath: sb.caFile, TLSValidateHostname: true, Authentication: pulsarclient.NewAuthenticationToken(sb.token(t, "admin"))},
		"ip without hostname":   {URL: sb.tlsIPURL, TLSTrustCertsFilePath: sb.caFile, Authentication: pulsarclient.NewAuthenticationToken(sb.token(t, "admin"))},
		"insecure without a CA": {URL: sb.tlsURL, TLSAllowInsecureConnection: true, Authentication: pulsarclient.NewAuthenticationToken(sb.token(t, "admin"))},
	}
	for name, o := range good {
		o.OperationTimeout = 5e9
		if err := roundTrip(t, sb.testBroker, o); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if supplied == 0 {
		t.Error("the token supplier was never called")
	}
	other, _ := auth.NewSecretKey("HS256")
	badTok, _ := auth.CreateToken(other, auth.TokenSpec{Subject: "admin"})
	bad := map[string]struct {
		o    pulsarclient.ClientOptions
		code pb.ServerError // -1: any error
	}{
		"wrong key":         {pulsarclient.ClientOptions{URL: sb.tlsURL, TLSTrustCertsFilePath: sb.caFile, Authentication: pulsarclient.NewAuthenticationToken(badTok)}, pb.ServerError_AuthenticationError},
		"unauthorised role": {pulsarclient.ClientOptions{URL: sb.tlsURL, TLSTrustCertsFilePath: sb.caFile, Authentication: pulsarclient.NewAuthenticationTLS(sb.bob.CertFile, sb.bob.KeyFile)}, pb.ServerError_AuthorizationError},
		"no auth":           {pulsarclient.ClientOptions{URL: sb.tlsURL, TLSTrustCertsFilePath: sb.caFile}, -1},
		"unknown CA":        {pulsarclient.ClientOptions{URL: sb.tlsURL, Authentication: pulsarclient.NewAuthenticationToken(sb.token(t, "admin"))}, -1},
		"hostname mismatch": {pulsarclient.ClientOptions{URL: sb.tlsIPURL, TLSTrustCertsFilePath: sb.caFile, TLSValidateHostname: true, Authentication: pulsarclient.NewAuthenticationToken(sb.token(t, "admin"))}, -1},
	}
	for name, c := range bad {
		c.o.OperationTimeout = 3e9
		err := roundTrip(t, sb.testBroker, c.o)
		var se *pulsarclient.ServerError
		switch {
		case err == nil:
			t.Errorf("%s: succeeded", name)
		case c.code >= 0 && (!errors.As(err, &se) || se.Code != c.code):
			t.Errorf("%s: %v, want %s", name, err, c.code)
		}
	}
	if _, err := pulsarclient.NewClient(pulsarclient.ClientOptions{URL: sb.url, Authentication: pulsarclient.NewAuthenticationTLS(sb.admin.CertFile, sb.admin.KeyFile)}); !errors.Is(err, pulsarclient.ErrInvalidURL) {
		t.Errorf("tls auth over pulsar://: %v", err)
	}
}
