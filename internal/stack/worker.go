package stack

// The function worker as a process of its own (`magnetar
// functions-worker`): a worker sharing a metadata store with the other
// workers, serving its routes and /metrics on its own listeners.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/functions"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/metadata"
)

// WorkerOptions configure a function worker process. The fields are
// the command's flags of the same meaning (the error messages name
// them).
type WorkerOptions struct {
	// MetadataURL is the store the workers share; ConfigURL, when set
	// and different, the store of tenants and grants for authorization.
	MetadataURL, ConfigURL string
	SessionTimeout         time.Duration
	// ID is unique among the workers ("": Advertised-PORT of the
	// listener the base URL names).
	ID string
	// HTTPAddr and HTTPSAddr are the REST listeners ("": off; HTTPSAddr
	// defaults to 127.0.0.1:6751 under TLS, Pulsar's workerPortTls).
	HTTPAddr, HTTPSAddr string
	// Advertised is the host other workers and instances reach this
	// worker by; ServiceURL the broker the instances connect to.
	Advertised, ServiceURL string
	DataDir, ClusterName   string
	// AllowUnauthenticatedRemote serves a non-loopback address with
	// authentication off.
	AllowUnauthenticatedRemote bool
	// Security is the worker's security configuration (nil: none).
	Security *auth.Config
	// NoBrokerClientAuth ignores brokerClientAuthenticationPlugin
	// (brokerClientAuthenticationEnabled=false).
	NoBrokerClientAuth bool
	Limits             httpapi.Limits
	// Functions are the worker's options from its process flags; the
	// fields above fill the rest.
	Functions functions.Options
	Logger    *slog.Logger
}

// Worker is a running function worker process.
type Worker struct {
	o           WorkerOptions
	w           *functions.Worker
	srv         *httpapi.Server
	l           workerListeners
	closeStores func()
}

// OpenWorker opens the worker's stores, listeners and worker, serves its
// routes and starts it. On error everything opened is closed.
func OpenWorker(ctx context.Context, o WorkerOptions) (_ *Worker, err error) {
	if o.HTTPAddr == "" && o.HTTPSAddr == "" {
		return nil, errors.New("functions-worker: neither --http nor --https is set")
	}
	wk := &Worker{o: o}
	defer func() {
		if err != nil {
			wk.Close()
		}
	}()
	store, authzStore, err := wk.openStores()
	if err != nil {
		return nil, err
	}
	sec, client, err := wk.security(authzStore)
	if err != nil {
		return nil, fmt.Errorf("functions-worker: %w", err)
	}
	if err := wk.checkListen(sec); err != nil {
		return nil, err
	}
	if err := wk.listen(); err != nil {
		return nil, err
	}
	if wk.w, err = wk.newWorker(store, client, sec.Enabled()); err != nil {
		return nil, err
	}
	if wk.srv, err = wk.serve(sec); err != nil {
		return nil, err
	}
	return wk, wk.w.Start(ctx, wk.o.ServiceURL, wk.l.base)
}

// ID is the worker's id; BaseURL the URL it advertises; HTTPSAddr the
// address of its HTTPS listener ("" without one).
func (wk *Worker) ID() string      { return wk.o.ID }
func (wk *Worker) BaseURL() string { return wk.l.base }
func (wk *Worker) HTTPSAddr() string {
	if wk.l.secure == nil {
		return ""
	}
	return wk.l.secure.Addr().String()
}

// Close stops serving, then the worker, then closes the listeners and
// stores.
func (wk *Worker) Close() error {
	var err error
	if wk.srv != nil {
		_ = wk.srv.Close()
	}
	if wk.w != nil {
		err = wk.w.Close()
	}
	wk.l.close()
	if wk.closeStores != nil {
		wk.closeStores()
	}
	return err
}

// openStores opens the worker's metadata store and, when ConfigURL names
// another one, the store of tenants and grants (else the same).
func (wk *Worker) openStores() (store, authz metadata.Store, err error) {
	o := wk.o
	store, err = OpenMetadataURL(o.MetadataURL, o.SessionTimeout, o.Logger)
	if err != nil {
		return nil, nil, err
	}
	if o.ConfigURL == "" || o.ConfigURL == o.MetadataURL {
		wk.closeStores = func() { store.Close() }
		return store, store, nil
	}
	authz, err = OpenMetadataURL(o.ConfigURL, o.SessionTimeout, o.Logger.With("component", "config-store"))
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	wk.closeStores = func() { authz.Close(); store.Close() }
	return store, authz, nil
}

// security builds the worker's security layer and client identity from
// the security keys. authz is the store of tenants and grants.
func (wk *Worker) security(authz metadata.Store) (*auth.Security, functions.ClientOptions, error) {
	var client functions.ClientOptions
	if wk.o.Security == nil {
		return nil, client, nil
	}
	sc := *wk.o.Security
	s, err := auth.New(sc, authz, wk.o.ClusterName, wk.o.Logger.With("component", "auth"))
	if err != nil {
		return nil, client, err
	}
	if wk.o.NoBrokerClientAuth {
		sc.BrokerClientAuthenticationPlugin, sc.BrokerClientAuthenticationParameters = "", ""
	}
	client, err = WorkerClient(sc)
	return s, client, err
}

// checkListen defaults HTTPSAddr under TLS and refuses a remote listener
// without authentication (unless AllowUnauthenticatedRemote) and HTTPS
// without a certificate.
func (wk *Worker) checkListen(sec *auth.Security) error {
	o := &wk.o
	if sec != nil && sec.Config.TLSEnabled && o.HTTPSAddr == "" {
		o.HTTPSAddr = "127.0.0.1:6751" // Pulsar's workerPortTls
	}
	for _, a := range []string{o.HTTPAddr, o.HTTPSAddr} {
		if a != "" && !IsLoopback(a) && !sec.Enabled() && !o.AllowUnauthenticatedRemote {
			return fmt.Errorf("functions-worker: refusing to listen on %s with authentication off: anyone who reaches it "+
				"could run programs; set authenticationEnabled (and authorizationEnabled), listen on 127.0.0.1, or pass "+
				"--allow-unauthenticated-remote", a)
		}
	}
	if o.HTTPSAddr != "" && (sec == nil || sec.TLS == nil) {
		return errors.New("functions-worker: --https needs tlsCertificateFilePath and tlsKeyFilePath")
	}
	return nil
}

// IsLoopback reports whether a listen address binds loopback only.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// workerListeners are the worker's HTTP and HTTPS listeners (either may
// be nil) and its advertised base URL.
type workerListeners struct {
	plain, secure net.Listener
	base          string
}

func (l *workerListeners) close() {
	for _, ln := range []net.Listener{l.plain, l.secure} {
		if ln != nil {
			ln.Close()
		}
	}
}

// listen opens HTTPAddr and HTTPSAddr; the base URL is the plain one if
// any. An empty ID becomes Advertised-PORT.
func (wk *Worker) listen() error {
	o, l := &wk.o, &wk.l
	var err error
	if o.HTTPAddr != "" {
		if l.plain, err = net.Listen("tcp", o.HTTPAddr); err != nil {
			return err
		}
	}
	if o.HTTPSAddr != "" {
		if l.secure, err = net.Listen("tcp", o.HTTPSAddr); err != nil {
			return err
		}
	}
	scheme, ln := "http://", l.plain
	if ln == nil {
		scheme, ln = "https://", l.secure
	}
	port := ln.Addr().(*net.TCPAddr).Port
	l.base = scheme + net.JoinHostPort(o.Advertised, fmt.Sprint(port))
	if o.ID == "" {
		o.ID = fmt.Sprintf("%s-%d", o.Advertised, port)
	}
	return nil
}

// newWorker builds the worker over store, its packages and instance
// directories under DataDir. authn is the worker's authenticationEnabled:
// functions then run with their submitters' tokens
// (functions/instanceauth.go).
func (wk *Worker) newWorker(store metadata.Store, client functions.ClientOptions, authn bool) (*functions.Worker, error) {
	if err := os.MkdirAll(wk.o.DataDir, 0o755); err != nil {
		return nil, err
	}
	dir, _ := filepath.Abs(wk.o.DataDir)
	fo := wk.o.Functions
	fo.Metadata, fo.ID, fo.DataDir, fo.Client, fo.AuthenticationEnabled = store, wk.o.ID, dir, client, authn
	fo.Logger = wk.o.Logger.With("component", "functions")
	return functions.NewWorker(fo)
}

// serve serves the worker's routes and /metrics on its listeners.
func (wk *Worker) serve(sec *auth.Security) (*httpapi.Server, error) {
	log, lim := wk.o.Logger, wk.o.Limits
	rt := httpapi.NewTable()
	wk.w.Register(rt)
	m := workerMetrics(wk.w)
	rt.Handle("GET", "/metrics", auth.AccessMetrics, func(rw http.ResponseWriter, r *http.Request, _ httpapi.Params) { m.ServeHTTP(rw, r) })
	h, err := rt.Handler(httpapi.Guard{Security: sec, Limits: lim, Log: log.With("component", "http")})
	if err != nil {
		return nil, err
	}
	srv := httpapi.NewServer(h, lim, log.With("component", "http"))
	serve := func(ln net.Listener, tc *tls.Config) {
		if err := srv.Serve(ln, tc); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http", "addr", ln.Addr().String(), "err", err)
		}
	}
	if wk.l.plain != nil {
		go serve(wk.l.plain, nil)
	}
	if wk.l.secure != nil {
		go serve(wk.l.secure, sec.TLS.Config())
	}
	return srv, nil
}

// workerMetrics serves the worker's function metrics in the Prometheus
// text format.
func workerMetrics(w *functions.Worker) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(w.Collector())
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
