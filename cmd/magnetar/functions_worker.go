package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/functions"
	"github.com/magnetar-mq/magnetar/functions/connectors"
	"github.com/magnetar-mq/magnetar/internal/cliflags"
	"github.com/magnetar-mq/magnetar/internal/conf"
	"github.com/magnetar-mq/magnetar/internal/conf/convert"
	"github.com/magnetar-mq/magnetar/internal/stack"
)

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
	sec         cliflags.Security
	http        cliflags.HTTP
	proc        cliflags.Functions
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
	f.proc.Register(fl)
	f.sec.Register(fl)
	f.http.Register(fl)
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

// workerOptions are the worker's options the flags ask for.
func (f *functionsWorkerFlags) workerOptions(log *slog.Logger) (stack.WorkerOptions, error) {
	o := stack.WorkerOptions{
		MetadataURL: f.meta.url, ConfigURL: f.configURL, SessionTimeout: f.meta.sessionTimeout,
		ID: f.id, HTTPAddr: f.httpAddr, HTTPSAddr: f.httpsAddr, Advertised: f.advertised, ServiceURL: f.serviceURL,
		DataDir: f.dataDir, ClusterName: f.clusterName, AllowUnauthenticatedRemote: f.allowRemote,
		NoBrokerClientAuth: f.clientAuth == "false", Logger: log,
	}
	sc, set, err := f.sec.Load(log)
	if err != nil {
		return o, fmt.Errorf("functions-worker: %w", err)
	}
	if set {
		o.Security = &sc
	}
	if o.Limits, err = f.http.Limits(); err != nil {
		return o, err
	}
	o.Functions, err = f.proc.Options()
	return o, err
}

func runFunctionsWorker(ctx context.Context, f functionsWorkerFlags) error {
	log, err := newLogger(f.run.logLevel, f.run.logFormat)
	if err != nil {
		return err
	}
	ctx, stop := signalContext(ctx)
	defer stop()
	o, err := f.workerOptions(log)
	if err != nil {
		return err
	}
	w, err := stack.OpenWorker(ctx, o)
	if err != nil {
		return err
	}
	extra := ""
	if a := w.HTTPSAddr(); a != "" {
		extra = " https=https://" + a
	}
	fmt.Printf("magnetar functions-worker ready http=%s id=%s%s\n", w.BaseURL(), w.ID(), extra)
	<-ctx.Done()
	return w.Close()
}
