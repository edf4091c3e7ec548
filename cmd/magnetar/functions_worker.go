package main

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

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/functions"
	"github.com/magnetar-mq/magnetar/functions/connectors"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/internal/conf"
	"github.com/magnetar-mq/magnetar/internal/conf/convert"
	"github.com/magnetar-mq/magnetar/internal/stack"
	"github.com/magnetar-mq/magnetar/metadata"
)

// functionsOptions are a worker's options from the process flags, with
// builtin connectors run as this binary's functions-instance subcommand.
func functionsOptions(pf functionsProcessFlags) (functions.Options, error) {
	exe, err := os.Executable()
	if err != nil {
		return functions.Options{}, fmt.Errorf("function worker: %w", err)
	}
	cmd := []string{exe, "functions-instance"}
	var env []string
	// Under the test binary (see harness_test.go) main's arguments come
	// from MAGNETAR_MAIN_ARGS.
	if _, ok := os.LookupEnv("MAGNETAR_MAIN_ARGS"); ok {
		cmd = []string{exe}
		env = []string{"MAGNETAR_MAIN_ARGS=functions-instance"}
	}
	o := functions.Options{BuiltinCommand: cmd, BuiltinEnv: env}
	pf.apply(&o)
	return o, nil
}

// newFunctionWorker builds the worker of `magnetar functions-worker`.
// authn is the worker's authenticationEnabled: functions then run with
// their submitters' tokens (functions/instanceauth.go).
func newFunctionWorker(store metadata.Store, id, dataDir string, client functions.ClientOptions, authn bool, log *slog.Logger, pf functionsProcessFlags) (*functions.Worker, error) {
	o, err := functionsOptions(pf)
	if err != nil {
		return nil, err
	}
	o.Metadata, o.ID, o.DataDir, o.Client, o.AuthenticationEnabled = store, id, dataDir, client, authn
	o.Logger = log.With("component", "functions")
	return functions.NewWorker(o)
}

func newFunctionsInstanceCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "functions-instance",
		Short:  "Run one builtin connector instance (started by the function worker)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return connectors.Main(os.Getenv(functions.EnvBuiltin))
		},
	}
}

type functionsWorkerFlags struct {
	meta        metadataFlags
	configURL   string
	id          string
	httpAddr    string
	httpsAddr   string
	advertised  string
	serviceURL  string
	dataDir     string
	clusterName string
	allowRemote bool
	clientAuth  string
	run         runFlags
	sec         securityFlags
	http        httpFlags
	proc        functionsProcessFlags
}

func newFunctionsWorkerCmd() *cobra.Command {
	var f functionsWorkerFlags
	cmd := &cobra.Command{
		Use:   "functions-worker",
		Short: "Run a function worker for a cluster (Pulsar Functions and Pulsar IO)",
		Long: `Runs a function worker that shares deployments, packages, state and
instance assignments with the other workers of the metadata store given by
--metadata-url. It serves /admin/v3/functions, /admin/v3/sources and
/admin/v3/sinks and /metrics on --http (and --https), and runs the
instances assigned to it as child processes connecting to
--broker-service-url. When a worker dies its instances move to the others.

Security takes the broker's settings under Pulsar's worker keys
(functions_worker.yml or flags of the same name): authenticationEnabled,
authenticationProviders, authorizationEnabled, superUserRoles, tls*,
brokerClient* for the worker's own connections. Superusers and the
tenant's admins manage functions, sources and sinks; other roles need
the functions, sources or sinks permission on the namespace. The worker
listens on loopback by default and refuses a non-loopback address with
authentication off unless --allow-unauthenticated-remote is given.

When ready it prints one line to stdout:
  magnetar functions-worker ready http=http://HOST:PORT`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyConfig(cmd, "functions-worker"); err != nil {
				return err
			}
			return runFunctionsWorker(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	f.meta.register(cmd)
	fl.StringVar(&f.configURL, "configuration-metadata-url", "", "store of tenants and grants for authorization (default: --metadata-url)")
	fl.StringVar(&f.id, "worker-id", "", "worker id, unique among the workers (default HOST-PORT of --http)")
	fl.StringVar(&f.httpAddr, "http", "127.0.0.1:6750", "REST listen address (empty: off; a non-loopback address needs authentication)")
	fl.StringVar(&f.httpsAddr, "https", "", "REST listen address with TLS (tlsCertificateFilePath, tlsKeyFilePath)")
	fl.StringVar(&f.advertised, "advertised-host", "localhost", "host name other workers and instances use to reach this worker")
	fl.StringVar(&f.serviceURL, "broker-service-url", "pulsar://localhost:6650", "broker the instances connect to")
	fl.StringVar(&f.dataDir, "data-dir", "./functions-data", "packages, instance logs and instance directories")
	fl.StringVar(&f.clusterName, "cluster-name", "standalone", "cluster whose tenants the worker serves (a tenant's allowedClusters must name it)")
	fl.BoolVar(&f.allowRemote, "allow-unauthenticated-remote", false, "serve a non-loopback address with authentication off (anyone who reaches it runs programs)")
	fl.StringVar(&f.clientAuth, "broker-client-authentication-enabled", "", "brokerClientAuthenticationEnabled: false ignores brokerClientAuthenticationPlugin")
	addRunFlags(fl, &f.run)
	f.proc.register(fl)
	f.sec.register(fl)
	f.http.register(fl)
	addConfigFlag(cmd)
	return cmd
}

// workerSchema maps functions_worker.yml's keys onto the worker's flags.
var workerSchema = &conf.Schema{
	Keys: []conf.Key{
		{Names: []string{"metadataStoreUrl"}, Flag: "metadata-url", Convert: convert.PulsarMetadataURL},
		{Names: []string{"configurationMetadataStoreUrl", "configurationStoreServers"}, Flag: "configuration-metadata-url", Convert: convert.PulsarMetadataURL},
		{Names: []string{"metadataStoreSessionTimeoutMillis"}, Flag: "zk-session-timeout", Convert: convert.Millis},
		{Names: []string{"workerId"}, Flag: "worker-id"},
		{Names: []string{"workerHostname"}, Flag: "advertised-host"},
		{Names: []string{"workerPort"}, Flag: "http", Convert: workerPort, Doc: "REST port (on loopback unless --http names a host)", Empty: map[string]string{"workerPort": ""}},
		{Names: []string{"workerPortTls"}, Flag: "https", Convert: workerPort, Doc: "REST TLS port", Empty: map[string]string{"workerPortTls": ""}},
		{Names: []string{"pulsarServiceUrl"}, Flag: "broker-service-url"},
		{Names: []string{"pulsarFunctionsCluster"}, Flag: "cluster-name"},
		{Names: []string{"brokerClientAuthenticationEnabled"}, Flag: "broker-client-authentication-enabled"},
	},
	Ignored: []string{"pulsarWebServiceUrl", "useTls", "pulsarFunctionsNamespace", "functionMetadataTopicName",
		"clusterCoordinationTopicName", "numFunctionPackageReplicas", "numHttpServerThreads", "authorizationProvider",
		"tlsEnableHostnameVerification", "schedulerClassName", "functionAssignmentTopicName", "failureCheckFreqMs",
		"rescheduleTimeoutMs", "rebalanceCheckFreqSec", "initialBrokerReconnectMaxRetries", "assignmentWriteMaxRetries",
		"instanceLivenessCheckFreqMs", "topicCompactionFrequencySec", "webServiceHaProxyProtocolEnabled",
		"webServiceTrustXForwardedFor", "webServiceLogDetailedAddresses", "metadataStoreOperationTimeoutSeconds",
		"metadataStoreCacheExpirySeconds", "useCompactedMetadataTopic", "exposeAdminClientEnabled"},
}

// workerPort turns workerPort/workerPortTls into a listen address on the
// flag's host (loopback by default); "null" or empty turns it off.
func workerPort(vals []string, cur string) (string, error) {
	if vals[0] == "" || vals[0] == "null" {
		return "", nil
	}
	host := "127.0.0.1"
	if h, _, err := net.SplitHostPort(cur); err == nil && cur != "" {
		host = h
	}
	return net.JoinHostPort(host, vals[0]), nil
}

// isLoopback reports whether a listen address binds loopback only.
func isLoopback(addr string) bool {
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

// workerSecurity builds the worker's security layer and client identity
// from the security keys. authz is the store of tenants and grants.
func workerSecurity(f functionsWorkerFlags, authz metadata.Store, log *slog.Logger) (*auth.Security, functions.ClientOptions, error) {
	var client functions.ClientOptions
	sc, set, err := f.sec.load(log)
	if err != nil || !set {
		return nil, client, err
	}
	s, err := auth.New(sc, authz, f.clusterName, log.With("component", "auth"))
	if err != nil {
		return nil, client, err
	}
	if f.clientAuth == "false" {
		sc.BrokerClientAuthenticationPlugin, sc.BrokerClientAuthenticationParameters = "", ""
	}
	client, err = stack.WorkerClient(sc)
	return s, client, err
}

func runFunctionsWorker(ctx context.Context, f functionsWorkerFlags) error {
	log, err := newLogger(f.run.logLevel, f.run.logFormat)
	if err != nil {
		return err
	}
	ctx, stop := signalContext(ctx)
	defer stop()
	if f.httpAddr == "" && f.httpsAddr == "" {
		return errors.New("functions-worker: neither --http nor --https is set")
	}
	store, authzStore, closeStores, err := openWorkerStores(f, log)
	if err != nil {
		return err
	}
	defer closeStores()
	sec, client, err := workerSecurity(f, authzStore, log)
	if err != nil {
		return fmt.Errorf("functions-worker: %w", err)
	}
	if err := checkWorkerListen(&f, sec); err != nil {
		return err
	}
	lim, err := f.http.limits()
	if err != nil {
		return err
	}
	l, err := listenWorker(&f)
	if err != nil {
		return err
	}
	defer l.close()
	if err := os.MkdirAll(f.dataDir, 0o755); err != nil {
		return err
	}
	dir, _ := filepath.Abs(f.dataDir)
	w, err := newFunctionWorker(store, f.id, dir, client, sec.Enabled(), log, f.proc)
	if err != nil {
		return err
	}
	srv, err := serveWorker(w, l, sec, lim, log)
	if err != nil {
		return err
	}
	if err := w.Start(ctx, f.serviceURL, l.base); err != nil {
		return err
	}
	extra := ""
	if l.secure != nil {
		extra = " https=https://" + l.secure.Addr().String()
	}
	fmt.Printf("magnetar functions-worker ready http=%s id=%s%s\n", l.base, f.id, extra)
	<-ctx.Done()
	_ = srv.Close()
	return w.Close()
}

// openWorkerStores opens the worker's metadata store and, when
// --configuration-metadata-url names another one, the store of tenants
// and grants (else the same).
func openWorkerStores(f functionsWorkerFlags, log *slog.Logger) (store, authz metadata.Store, closeAll func(), err error) {
	store, err = stack.OpenMetadataURL(f.meta.url, f.meta.sessionTimeout, log)
	if err != nil {
		return nil, nil, nil, err
	}
	if f.configURL == "" || f.configURL == f.meta.url {
		return store, store, func() { store.Close() }, nil
	}
	authz, err = stack.OpenMetadataURL(f.configURL, f.meta.sessionTimeout, log.With("component", "config-store"))
	if err != nil {
		store.Close()
		return nil, nil, nil, err
	}
	return store, authz, func() { authz.Close(); store.Close() }, nil
}

// checkWorkerListen defaults --https under TLS and refuses a remote
// listener without authentication (unless --allow-unauthenticated-remote)
// and --https without a certificate.
func checkWorkerListen(f *functionsWorkerFlags, sec *auth.Security) error {
	if sec != nil && sec.Config.TLSEnabled && f.httpsAddr == "" {
		f.httpsAddr = "127.0.0.1:6751" // Pulsar's workerPortTls
	}
	for _, a := range []string{f.httpAddr, f.httpsAddr} {
		if a != "" && !isLoopback(a) && !sec.Enabled() && !f.allowRemote {
			return fmt.Errorf("functions-worker: refusing to listen on %s with authentication off: anyone who reaches it "+
				"could run programs; set authenticationEnabled (and authorizationEnabled), listen on 127.0.0.1, or pass "+
				"--allow-unauthenticated-remote", a)
		}
	}
	if f.httpsAddr != "" && (sec == nil || sec.TLS == nil) {
		return errors.New("functions-worker: --https needs tlsCertificateFilePath and tlsKeyFilePath")
	}
	return nil
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

// listenWorker opens --http and --https; the base URL is the plain one
// if any. An empty --worker-id becomes advertised-host-port.
func listenWorker(f *functionsWorkerFlags) (*workerListeners, error) {
	l := &workerListeners{}
	var err error
	if f.httpAddr != "" {
		if l.plain, err = net.Listen("tcp", f.httpAddr); err != nil {
			return nil, err
		}
	}
	if f.httpsAddr != "" {
		if l.secure, err = net.Listen("tcp", f.httpsAddr); err != nil {
			l.close()
			return nil, err
		}
	}
	scheme, ln := "http://", l.plain
	if ln == nil {
		scheme, ln = "https://", l.secure
	}
	port := ln.Addr().(*net.TCPAddr).Port
	l.base = scheme + net.JoinHostPort(f.advertised, fmt.Sprint(port))
	if f.id == "" {
		f.id = fmt.Sprintf("%s-%d", f.advertised, port)
	}
	return l, nil
}

// serveWorker serves the worker's routes and /metrics on its listeners.
func serveWorker(w *functions.Worker, l *workerListeners, sec *auth.Security, lim httpapi.Limits, log *slog.Logger) (*httpapi.Server, error) {
	rt := httpapi.NewTable()
	w.Register(rt)
	m := metricsHandler(w)
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
	if l.plain != nil {
		go serve(l.plain, nil)
	}
	if l.secure != nil {
		go serve(l.secure, sec.TLS.Config())
	}
	return srv, nil
}

// metricsHandler serves the worker's function metrics in the Prometheus
// text format.
func metricsHandler(w *functions.Worker) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(w.Collector())
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
