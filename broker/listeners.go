package broker

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/internal/listenset"
)

// listeners are the broker's sockets (package internal/listenset: the
// binary protocol and HTTP, each plain and, with a security layer that
// has TLS, TLS) and the one HTTP server behind both HTTP listeners. bind
// binds them all at Start, so that every address is known (and
// advertised: registerCluster, the cluster) before anything is served;
// the broker then serves them (acceptLoop, serveHTTP) and close closes
// them.
type listeners struct {
	listenset.Set
	host string // Config.AdvertisedHost, the host of the advertised URLs
	srv  *httpapi.Server
}

// bind builds the HTTP server over h and binds the listeners cfg asks for
// ("-": none); on error nothing stays bound.
func (l *listeners) bind(ctx context.Context, cfg *brokerconf.Config, sec *auth.Security, h *httpapi.Server) error {
	l.host, l.srv = cfg.AdvertisedHost, h
	var a listenset.Addrs
	if cfg.ServiceAddr != "-" {
		a.Service = cfg.ServiceAddr
	}
	if cfg.HTTPAddr != "-" {
		a.HTTP = cfg.HTTPAddr
	}
	var tc *tls.Config
	if sec != nil && sec.TLS != nil {
		a.TLSService, a.TLSHTTP, tc = cfg.TLSServiceAddr, cfg.TLSHTTPAddr, sec.TLS.Config()
	}
	if err := l.Bind(ctx, a, tc); err != nil {
		l.close()
		return fmt.Errorf("broker: %w", err)
	}
	return nil
}

// close closes the listeners and shuts the HTTP server down (the binary
// connections are the broker's to stop).
func (l *listeners) close() {
	if l.srv != nil {
		_ = l.srv.Close() // the listeners it serves first, quietly
	}
	l.Close()
}

// url is scheme://host:port with the advertised host and a's port ("" when
// tls and unbound: a TLS URL exists only with its listener).
func (l *listeners) url(scheme string, a string, tls bool) string {
	if tls && a == "" {
		return ""
	}
	_, port, _ := net.SplitHostPort(a)
	return scheme + "://" + net.JoinHostPort(l.host, port)
}

// serviceURL is the pulsar:// URL handed out by lookups, webURL the
// http:// one.
func (l *listeners) serviceURL() string { return l.url("pulsar", l.ServiceAddr(), false) }
func (l *listeners) webURL() string     { return l.url("http", l.HTTPAddr(), false) }

// serviceURLTLS is the pulsar+ssl:// URL ("" without a TLS listener),
// webURLTLS the https:// one.
func (l *listeners) serviceURLTLS() string { return l.url("pulsar+ssl", l.TLSServiceAddr(), true) }
func (l *listeners) webURLTLS() string     { return l.url("https", l.TLSHTTPAddr(), true) }

// lookupURLs returns the plain and TLS broker URLs for a lookup answer;
// with the plaintext port off, the plain URL is the TLS one.
func (l *listeners) lookupURLs() (plain, secure string) {
	secure = l.serviceURLTLS()
	if l.ServiceAddr() == "" {
		return secure, secure
	}
	return l.serviceURL(), secure
}

// brokerID is Pulsar's broker id, host:webPort.
func (l *listeners) brokerID() string { return strings.TrimPrefix(l.webURL(), "http://") }

// ServiceAddr returns the bound binary-protocol address ("" before Start).
func (b *Broker) ServiceAddr() string { return b.net.ServiceAddr() }

// HTTPAddr returns the bound HTTP address ("" before Start or when
// disabled).
func (b *Broker) HTTPAddr() string { return b.net.HTTPAddr() }

// TLSServiceAddr returns the bound TLS binary address ("" if none).
func (b *Broker) TLSServiceAddr() string { return b.net.TLSServiceAddr() }

// TLSHTTPAddr returns the bound HTTPS address ("" if none).
func (b *Broker) TLSHTTPAddr() string { return b.net.TLSHTTPAddr() }

// serveHTTP serves ln (TLS when cfg is set) until Close.
func (b *Broker) serveHTTP(ln net.Listener, cfg *tls.Config) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := b.net.srv.Serve(ln, cfg); err != nil {
			b.log.Error("http server", "addr", ln.Addr().String(), "err", err)
		}
	}()
}

// URLs are the broker's advertised URLs.
type URLs struct {
	// BrokerID is Pulsar's broker id, host:webPort.
	BrokerID string
	// Service and Web are the pulsar:// and http:// URLs; ServiceTLS and
	// WebTLS the pulsar+ssl:// and https:// ones ("" without their
	// listener).
	Service, Web, ServiceTLS, WebTLS string
	// Lookup and LookupTLS are the broker URLs a lookup answer hands
	// out: with the plaintext port off, Lookup is the TLS one.
	Lookup, LookupTLS string
}

// URLs returns the advertised URLs (ports known once Start bound them).
func (b *Broker) URLs() URLs {
	l := &b.net
	plain, secure := l.lookupURLs()
	return URLs{BrokerID: l.brokerID(), Service: l.serviceURL(), Web: l.webURL(),
		ServiceTLS: l.serviceURLTLS(), WebTLS: l.webURLTLS(), Lookup: plain, LookupTLS: secure}
}
