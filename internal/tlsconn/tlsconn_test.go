package tlsconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/testcert"
)

// server accepts TLS connections with a certificate for "localhost"
// only and echoes one byte.
func server(t *testing.T) (addr string, roots *x509.CertPool) {
	t.Helper()
	ca, err := testcert.NewCA("tlsconn CA")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ca.Server("localhost", []string{"localhost"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := make([]byte, 1)
				if _, err := c.Read(b); err == nil {
					c.Write(b)
				}
			}()
		}
	}()
	roots = x509.NewCertPool()
	roots.AddCert(ca.Cert)
	return ln.Addr().String(), roots
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

// TestClientServerName: the server name is the dialled host unless the
// configuration names one, and the caller's configuration is not
// changed; a name the certificate does not hold fails the handshake and
// closes the connection.
func TestClientServerName(t *testing.T) {
	addr, roots := server(t)
	_, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	cfg := &tls.Config{RootCAs: roots}
	tc, err := Client(ctx, dial(t, addr), "localhost:"+port, cfg)
	if err != nil {
		t.Fatalf("localhost: %v", err)
	}
	if _, err := tc.Write([]byte{7}); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := tc.Read(b); err != nil || b[0] != 7 {
		t.Fatalf("echo %v %v", b, err)
	}
	tc.Close()
	if cfg.ServerName != "" {
		t.Fatalf("caller's config changed: ServerName %q", cfg.ServerName)
	}

	// 127.0.0.1 is not in the certificate: refused, the connection closed.
	nc := dial(t, addr)
	if _, err := Client(ctx, nc, addr, cfg); err == nil {
		t.Fatal("certificate accepted for 127.0.0.1")
	}
	if _, err := nc.Write([]byte{1}); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("connection after a failed handshake: write %v, want closed", err)
	}
	// A configured name wins over the address.
	if tc, err := Client(ctx, dial(t, addr), addr, &tls.Config{RootCAs: roots, ServerName: "localhost"}); err != nil {
		t.Fatalf("ServerName localhost: %v", err)
	} else {
		tc.Close()
	}
}
