package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/magnetar-mq/magnetar/internal/acceptloop"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/httpapi"
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

	lns     []net.Listener
	httpSrv *httpapi.Server // the HTTP and HTTPS listeners (http.go)
	addrs   struct{ service, http, tlsService, tlsHTTP string }

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
	var lc net.ListenConfig
	listen := func(addr string, tlsOn bool, out *string) (net.Listener, error) {
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("proxy: listen %s: %w", addr, err)
		}
		*out = ln.Addr().String()
		p.lns = append(p.lns, ln)
		return ln, nil
	}
	type binding struct {
		addr string
		tls  bool
		out  *string
		http bool
	}
	var served []func()
	for _, b := range []binding{
		{cfg.ServiceAddr, false, &p.addrs.service, false}, {cfg.TLSServiceAddr, true, &p.addrs.tlsService, false},
		{cfg.HTTPAddr, false, &p.addrs.http, true}, {cfg.TLSHTTPAddr, true, &p.addrs.tlsHTTP, true},
	} {
		if b.addr == "" {
			continue
		}
		ln, err := listen(b.addr, b.tls, b.out)
		if err != nil {
			for _, l := range p.lns {
				l.Close()
			}
			return nil, err
		}
		var tc *tls.Config
		if b.tls {
			tc = cfg.Security.TLS.Config()
		}
		if b.http {
			served = append(served, func() {
				defer p.wg.Done()
				if err := p.httpSrv.Serve(ln, tc); err != nil && !errors.Is(err, http.ErrServerClosed) {
					p.log.Error("http server", "addr", ln.Addr().String(), "err", err)
				}
			})
		} else {
			if tc != nil {
				ln = tls.NewListener(ln, tc)
			}
			served = append(served, func() { p.acceptLoop(ln) })
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
func (p *Proxy) ServiceAddr() string { return p.addrs.service }

// HTTPAddr is the bound plaintext HTTP address ("" if off).
func (p *Proxy) HTTPAddr() string { return p.addrs.http }

// TLSServiceAddr is the bound TLS binary address ("" if off).
func (p *Proxy) TLSServiceAddr() string { return p.addrs.tlsService }

// TLSHTTPAddr is the bound HTTPS address ("" if off).
func (p *Proxy) TLSHTTPAddr() string { return p.addrs.tlsHTTP }

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
	for _, ln := range p.lns {
		ln.Close()
	}
	p.pool.closeAll()
	p.wg.Wait()
	return nil
}
