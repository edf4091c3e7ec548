package broker

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"sync/atomic"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/httpapi"
)

// listeners are the broker's sockets: the binary protocol and HTTP, each
// plain and (with a security layer that has TLS) TLS, and the one HTTP
// server behind both HTTP listeners. bind binds them all at Start, so
// that every address is known (and advertised: registerCluster, the cluster)
// before anything is served; the broker then serves them (acceptLoop,
// serveHTTP) and close closes them.
type listeners struct {
	host string // Config.AdvertisedHost, the host of the advertised URLs

	service, http, tlsService, tlsHTTP net.Listener
	srv                                *httpapi.Server

	// The bound addresses ("" unbound), read from any goroutine.
	serviceAddr, httpAddr, tlsServiceAddr, tlsHTTPAddr atomic.Pointer[string]
}

// bind builds the HTTP server over h and binds the listeners cfg asks for
// ("-": none); on error nothing stays bound.
func (l *listeners) bind(ctx context.Context, cfg *brokerconf.Config, sec *auth.Security, h *httpapi.Server) error {
	l.host, l.srv = cfg.AdvertisedHost, h
	var lc net.ListenConfig
	listen := func(addr string, ln *net.Listener, bound *atomic.Pointer[string]) error {
		nl, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			l.close()
			return fmt.Errorf("broker: listen %s: %w", addr, err)
		}
		a := nl.Addr().String()
		bound.Store(&a)
		*ln = nl
		return nil
	}
	if cfg.ServiceAddr != "-" {
		if err := listen(cfg.ServiceAddr, &l.service, &l.serviceAddr); err != nil {
			return err
		}
	}
	if cfg.HTTPAddr != "-" {
		if err := listen(cfg.HTTPAddr, &l.http, &l.httpAddr); err != nil {
			return err
		}
	}
	if sec == nil {
		return nil
	}
	if cfg.TLSServiceAddr != "" {
		if err := listen(cfg.TLSServiceAddr, &l.tlsService, &l.tlsServiceAddr); err != nil {
			return err
		}
		l.tlsService = tls.NewListener(l.tlsService, sec.TLS.Config())
	}
	if cfg.TLSHTTPAddr != "" {
		if err := listen(cfg.TLSHTTPAddr, &l.tlsHTTP, &l.tlsHTTPAddr); err != nil {
			return err
		}
	}
	return nil
}

// close closes the listeners and shuts the HTTP server down (the binary
// connections are the broker's to stop).
func (l *listeners) close() {
	if l.srv != nil {
		_ = l.srv.Close() // the listeners it serves first, quietly
	}
	for _, ln := range []net.Listener{l.service, l.http, l.tlsService, l.tlsHTTP} {
		if ln != nil {
			ln.Close()
		}
	}
}

// addr returns a bound address, "" if none.
func addr(p *atomic.Pointer[string]) string {
	if a := p.Load(); a != nil {
		return *a
	}
	return ""
}

// url is scheme://host:port with the advertised host and bound's port
// ("" when tls and unbound: a TLS URL exists only with its listener).
func (l *listeners) url(scheme string, bound *atomic.Pointer[string], tls bool) string {
	a := addr(bound)
	if tls && a == "" {
		return ""
	}
	_, port, _ := net.SplitHostPort(a)
	return scheme + "://" + net.JoinHostPort(l.host, port)
}

// serviceURL is the pulsar:// URL handed out by lookups, webURL the
// http:// one.
func (l *listeners) serviceURL() string { return l.url("pulsar", &l.serviceAddr, false) }
func (l *listeners) webURL() string     { return l.url("http", &l.httpAddr, false) }

// serviceURLTLS is the pulsar+ssl:// URL ("" without a TLS listener),
// webURLTLS the https:// one.
func (l *listeners) serviceURLTLS() string { return l.url("pulsar+ssl", &l.tlsServiceAddr, true) }
func (l *listeners) webURLTLS() string     { return l.url("https", &l.tlsHTTPAddr, true) }

// lookupURLs returns the plain and TLS broker URLs for a lookup answer;
// with the plaintext port off, the plain URL is the TLS one.
func (l *listeners) lookupURLs() (plain, secure string) {
	secure = l.serviceURLTLS()
	if addr(&l.serviceAddr) == "" {
		return secure, secure
	}
	return l.serviceURL(), secure
}

// brokerID is Pulsar's broker id, host:webPort.
func (l *listeners) brokerID() string { return strings.TrimPrefix(l.webURL(), "http://") }

// ServiceAddr returns the bound binary-protocol address ("" before Start).
func (b *Broker) ServiceAddr() string { return addr(&b.net.serviceAddr) }

// HTTPAddr returns the bound HTTP address ("" before Start or when
// disabled).
func (b *Broker) HTTPAddr() string { return addr(&b.net.httpAddr) }

// TLSServiceAddr returns the bound TLS binary address ("" if none).
func (b *Broker) TLSServiceAddr() string { return addr(&b.net.tlsServiceAddr) }

// TLSHTTPAddr returns the bound HTTPS address ("" if none).
func (b *Broker) TLSHTTPAddr() string { return addr(&b.net.tlsHTTPAddr) }

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
