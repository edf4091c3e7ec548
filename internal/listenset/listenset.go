package listenset

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
)

// Addrs are the addresses to listen on; "" leaves that listener off.
type Addrs struct {
	Service, HTTP, TLSService, TLSHTTP string
}

// Set is a server's listeners (nil: off) and their bound addresses.
type Set struct {
	Service, HTTP, TLSService, TLSHTTP net.Listener

	service, http, tlsService, tlsHTTP atomic.Pointer[string]
}

// Bind binds the listeners a asks for; a TLS one needs tc. On error
// nothing stays bound.
func (s *Set) Bind(ctx context.Context, a Addrs, tc *tls.Config) error {
	if (a.TLSService != "" || a.TLSHTTP != "") && tc == nil {
		return errors.New("listenset: a TLS listener without a TLS configuration")
	}
	var lc net.ListenConfig
	for _, l := range []struct {
		addr  string
		ln    *net.Listener
		bound *atomic.Pointer[string]
	}{{a.Service, &s.Service, &s.service}, {a.HTTP, &s.HTTP, &s.http},
		{a.TLSService, &s.TLSService, &s.tlsService}, {a.TLSHTTP, &s.TLSHTTP, &s.tlsHTTP}} {
		if l.addr == "" {
			continue
		}
		ln, err := lc.Listen(ctx, "tcp", l.addr)
		if err != nil {
			s.Close()
			return fmt.Errorf("listen %s: %w", l.addr, err)
		}
		bound := ln.Addr().String()
		l.bound.Store(&bound)
		*l.ln = ln
	}
	if s.TLSService != nil {
		s.TLSService = tls.NewListener(s.TLSService, tc)
	}
	return nil
}

// Close closes the bound listeners.
func (s *Set) Close() {
	for _, ln := range []net.Listener{s.Service, s.HTTP, s.TLSService, s.TLSHTTP} {
		if ln != nil {
			ln.Close()
		}
	}
}

// ServiceAddr, HTTPAddr, TLSServiceAddr and TLSHTTPAddr return the bound
// addresses ("" if none).
func (s *Set) ServiceAddr() string    { return load(&s.service) }
func (s *Set) HTTPAddr() string       { return load(&s.http) }
func (s *Set) TLSServiceAddr() string { return load(&s.tlsService) }
func (s *Set) TLSHTTPAddr() string    { return load(&s.tlsHTTP) }

func load(p *atomic.Pointer[string]) string {
	if a := p.Load(); a != nil {
		return *a
	}
	return ""
}
