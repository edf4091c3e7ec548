package listenset

import (
	"context"
	"crypto/tls"
	"net"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/testcert"
)

// TestBind: the listeners asked for are bound (the binary TLS one
// wrapped in TLS), the others stay off; a failing address leaves
// nothing bound.
func TestBind(t *testing.T) {
	ca, err := testcert.NewCA("listenset test")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Server("localhost", []string{"localhost"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(srv.CertPEM, srv.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}}
	var s Set
	if err := s.Bind(context.Background(), Addrs{Service: "127.0.0.1:0", TLSService: "127.0.0.1:0"}, tc); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.ServiceAddr() == "" || s.TLSServiceAddr() == "" || s.HTTPAddr() != "" || s.TLSHTTPAddr() != "" || s.HTTP != nil {
		t.Fatalf("bound %q %q %q %q", s.ServiceAddr(), s.HTTPAddr(), s.TLSServiceAddr(), s.TLSHTTPAddr())
	}
	if _, plain := s.TLSService.(*net.TCPListener); plain || s.TLSService == nil {
		t.Fatalf("binary TLS listener %T, want it wrapped in TLS", s.TLSService)
	}
	if err := (&Set{}).Bind(context.Background(), Addrs{TLSHTTP: "127.0.0.1:0"}, nil); err == nil {
		t.Fatal("TLS listener without a configuration bound")
	}
	var bad Set
	if err := bad.Bind(context.Background(), Addrs{Service: "127.0.0.1:0", HTTP: s.ServiceAddr()}, nil); err == nil {
		t.Fatal("bound an address in use")
	}
	if bad.ServiceAddr() == "" {
		t.Fatal("the first listener's address was not recorded")
	}
	// The first listener was closed: its address can be bound again.
	ln, err := net.Listen("tcp", bad.ServiceAddr())
	if err != nil {
		t.Fatalf("the listener bound before the failure stayed open: %v", err)
	}
	ln.Close()
}
