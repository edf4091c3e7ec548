package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/internal/acceptloop"
	"github.com/magnetar-mq/magnetar/internal/listenset"
)

// Proxy is a running proxy: binary and HTTP listeners, the broker
// connection pool and the stats. It keeps no state beyond caches, so any
// number of proxies can serve the same cluster.
type Proxy struct {
	cfg       Config
	log       *slog.Logger
	disc      *discovery
	pool      pool
	m         *metrics
	lookupSem semaphore
	web       *http.Client

	lns     listenset.Set   // package internal/listenset
	httpSrv *httpapi.Server // the HTTP and HTTPS listeners (http.go)

	done chan struct{}
	wg   sync.WaitGroup
	mu   struct {
		sync.Mutex
		conns  map[*clientConn]struct{}
		closed bool
	}
}

// Start binds the listeners and serves.
func Start(ctx context.Context, cfg Config) (*Proxy, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	d, err := newDiscovery(&cfg)
	if err != nil {
		return nil, err
	}
	p := &Proxy{cfg: cfg, log: cfg.Logger, disc: d, m: newMetrics(), done: make(chan struct{})}
	p.pool = pool{p: p, m: map[poolKey]*poolEntry{}}
	p.lookupSem.max = int64(cfg.MaxConcurrentLookupRequests)
	p.mu.conns = map[*clientConn]struct{}{}
	p.web = p.newWebClient()
	if cfg.HTTPAddr != "" || cfg.TLSHTTPAddr != "" {
		if p.httpSrv, err = p.newHTTPServer(); err != nil {
			return nil, err
		}
	}
	var tc *tls.Config
	if cfg.TLSServiceAddr != "" || cfg.TLSHTTPAddr != "" {
		tc = cfg.Security.TLS.Config()
	}
	if err := p.lns.Bind(ctx, listenset.Addrs{Service: cfg.ServiceAddr, HTTP: cfg.HTTPAddr,
		TLSService: cfg.TLSServiceAddr, TLSHTTP: cfg.TLSHTTPAddr}, tc); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	var served []func()
	for _, ln := range []net.Listener{p.lns.Service, p.lns.TLSService} {
		if ln != nil {
			served = append(served, func() { p.acceptLoop(ln) })
		}
	}
	for _, h := range []struct {
		ln net.Listener
		tc *tls.Config
	}{{p.lns.HTTP, nil}, {p.lns.TLSHTTP, tc}} {
		if h.ln != nil {
			served = append(served, func() {
				defer p.wg.Done()
				if err := p.httpSrv.Serve(h.ln, h.tc); err != nil && !errors.Is(err, http.ErrServerClosed) {
					p.log.Error("http server", "addr", h.ln.Addr().String(), "err", err)
				}
			})
		}
	}
	for _, f := range served {
		p.wg.Add(1)
		go f()
	}
	p.wg.Add(1)
	go p.sweepLoop()
	return p, nil
}

// ServiceAddr is the bound plaintext binary address ("" if off).
func (p *Proxy) ServiceAddr() string { return p.lns.ServiceAddr() }

// HTTPAddr is the bound plaintext HTTP address ("" if off).
func (p *Proxy) HTTPAddr() string { return p.lns.HTTPAddr() }

// TLSServiceAddr is the bound TLS binary address ("" if off).
func (p *Proxy) TLSServiceAddr() string { return p.lns.TLSServiceAddr() }

// TLSHTTPAddr is the bound HTTPS address ("" if off).
func (p *Proxy) TLSHTTPAddr() string { return p.lns.TLSHTTPAddr() }

func (p *Proxy) acceptLoop(ln net.Listener) {
	defer p.wg.Done()
	acceptloop.Run(ln, p.done, p.log, func(nc net.Conn) bool {
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		p.mu.Lock()
		closed, n := p.mu.closed, len(p.mu.conns)
		p.mu.Unlock()
		if closed || n >= p.cfg.MaxConcurrentInboundConnections {
			p.m.rejected.Inc()
			nc.Close()
			return true
		}
		p.wg.Add(1)
		go p.serveConn(nc)
		return true
	})
}

// track adds or removes a client connection.
func (p *Proxy) track(c *clientConn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.mu.conns[c] = struct{}{}
		p.m.newConns.Inc()
		p.m.active.Inc()
		if p.mu.closed {
			c.nc.Close()
		}
		return
	}
	delete(p.mu.conns, c)
	p.m.active.Dec()
}

func (p *Proxy) sweepLoop() {
	defer p.wg.Done()
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			p.pool.sweep(2 * time.Minute)
		}
	}
}

// Close stops the listeners and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		return nil
	}
	p.mu.closed = true
	for c := range p.mu.conns {
		c.nc.Close()
	}
	p.mu.Unlock()
	close(p.done)
	if p.httpSrv != nil {
		_ = p.httpSrv.Close()
	}
	p.lns.Close()
	p.pool.closeAll()
	p.wg.Wait()
	return nil
}
