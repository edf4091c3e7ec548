package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/internal/cliflags"
	"github.com/magnetar-mq/magnetar/internal/conf"
	"github.com/magnetar-mq/magnetar/internal/conf/convert"
	"github.com/magnetar-mq/magnetar/internal/stack"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/proxy"
)

// `magnetar proxy`: package proxy behind flags named after Pulsar's
// proxy.conf (docs/proxy.md).

type proxyFlags struct {
	meta                      metadataFlags
	serviceAddr, httpAddr     string
	tlsServiceAddr, tlsHTTP   string
	brokerURL, brokerURLTLS   string
	brokerWeb, brokerWebTLS   string
	forwardCreds              bool
	tlsWithBroker             bool
	maxLookups, maxConns      int
	keepAlive, connectTimeout time.Duration
	maxMessageSize            int
	run                       runFlags
	sec                       cliflags.Security
	http                      cliflags.HTTP
}

func newProxyCmd() *cobra.Command {
	cmd, _ := proxyCommand()
	return cmd
}

// proxyCommand returns the command and the flags it fills.
func proxyCommand() (*cobra.Command, *proxyFlags) {
	f := &proxyFlags{}
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Run a proxy: one address for clients that cannot reach the brokers",
		Long: `Runs a stateless Pulsar proxy in front of a broker cluster. Clients connect
to the proxy only: it answers lookups itself (pointing the client back at
the proxy), relays each producer/consumer connection to the broker that
owns the topic without decoding its frames, and forwards /admin and
/lookup HTTP calls to brokers (to the topic's owner for topic calls),
following redirects itself.

Brokers are found in the metadata store (--metadata-url, the cluster's
registrations) or, without one, in a static list (--broker-service-url,
--broker-web-service-url). With authenticationEnabled the proxy
authenticates clients and hands their role to the broker as the original
principal; the proxy's own credentials towards brokers are
brokerClientAuthenticationPlugin/Parameters, whose role must be listed in
the brokers' proxyRoles.

When ready it prints one line to stdout:
  magnetar proxy ready service=pulsar://HOST:PORT http=http://HOST:PORT`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyConfig(cmd, "proxy"); err != nil {
				return err
			}
			return runProxy(cmd.Context(), *f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.meta.url, "metadata-url", "", "metadata store of the cluster (zk://host:port/chroot); empty: use --broker-service-url")
	fl.DurationVar(&f.meta.sessionTimeout, "zk-session-timeout", 10*time.Second, "ZooKeeper session timeout")
	fl.StringVar(&f.serviceAddr, "listen", ":6650", "Pulsar binary protocol listen address (empty: off)")
	fl.StringVar(&f.httpAddr, "http", ":8080", "HTTP listen address: /admin, /lookup, /metrics, /proxy-stats (empty: off)")
	fl.StringVar(&f.tlsServiceAddr, "listen-tls", "", "TLS binary protocol listen address")
	fl.StringVar(&f.tlsHTTP, "http-tls", "", "HTTPS listen address")
	fl.StringVar(&f.brokerURL, "broker-service-url", "", "static brokers: pulsar://h1:6650,h2:6650 (without --metadata-url)")
	fl.StringVar(&f.brokerURLTLS, "broker-service-url-tls", "", "static brokers' TLS URLs: pulsar+ssl://h1:6651,...")
	fl.StringVar(&f.brokerWeb, "broker-web-service-url", "", "static brokers' HTTP URLs: http://h1:8080,...")
	fl.StringVar(&f.brokerWebTLS, "broker-web-service-url-tls", "", "static brokers' HTTPS URLs")
	fl.BoolVar(&f.forwardCreds, "forward-authorization-credentials", false, "send the client's credentials to the broker as original_auth_data")
	fl.BoolVar(&f.tlsWithBroker, "tls-enabled-with-broker", false, "talk TLS to brokers (brokerClientTrustCertsFilePath verifies them)")
	fl.IntVar(&f.maxLookups, "max-concurrent-lookups", 50000, "lookups in flight before TooManyRequests")
	fl.IntVar(&f.maxConns, "max-connections", 10000, "client connections before new ones are closed")
	fl.DurationVar(&f.keepAlive, "keep-alive-interval", 30*time.Second, "ping idle lookup connections this often")
	fl.DurationVar(&f.connectTimeout, "connect-timeout", 10*time.Second, "bound on a client's CONNECT and on connecting to a broker")
	fl.IntVar(&f.maxMessageSize, "max-message-size", 5<<20, "max message size announced on lookup connections")
	addRunFlags(fl, &f.run)
	f.sec.Register(fl)
	f.http.Register(fl)
	addConfigFlag(cmd)
	return cmd, f
}

// proxySchema maps proxy.conf's keys onto the proxy's flags.
var proxySchema = &conf.Schema{
	Keys: []conf.Key{
		{Names: []string{"metadataStoreUrl", "zookeeperServers"}, Flag: "metadata-url", Convert: convert.PulsarMetadataURL},
		{Names: []string{"metadataStoreSessionTimeoutMillis", "zooKeeperSessionTimeoutMillis"}, Flag: "zk-session-timeout", Convert: convert.SessionTimeout},
		{Names: []string{"bindAddress", "servicePort"}, Flag: "listen", Convert: convert.HostPort, Doc: "binary protocol address", Empty: map[string]string{"servicePort": ""}},
		{Names: []string{"bindAddress", "webServicePort"}, Flag: "http", Convert: convert.HostPort, Doc: "HTTP address", Empty: map[string]string{"webServicePort": ""}},
		{Names: []string{"servicePortTls"}, Flag: "listen-tls", Convert: portAddr},
		{Names: []string{"webServicePortTls"}, Flag: "http-tls", Convert: portAddr},
		{Names: []string{"brokerServiceURL"}, Flag: "broker-service-url"},
		{Names: []string{"brokerServiceURLTLS"}, Flag: "broker-service-url-tls"},
		{Names: []string{"brokerWebServiceURL"}, Flag: "broker-web-service-url"},
		{Names: []string{"brokerWebServiceURLTLS"}, Flag: "broker-web-service-url-tls"},
		{Names: []string{"forwardAuthorizationCredentials"}, Flag: "forward-authorization-credentials"},
		{Names: []string{"tlsEnabledWithBroker"}, Flag: "tls-enabled-with-broker"},
		{Names: []string{"maxConcurrentLookupRequests"}, Flag: "max-concurrent-lookups", Convert: convert.Positive},
		{Names: []string{"maxConcurrentInboundConnections"}, Flag: "max-connections", Convert: convert.Positive},
		{Names: []string{"keepAliveIntervalSeconds"}, Flag: "keep-alive-interval", Convert: convert.OrOff(time.Second)},
		{Names: []string{"maxMessageSize"}, Flag: "max-message-size", Convert: convert.MessageSize},
	},
	Ignored: []string{"configurationMetadataStoreUrl", "configurationStoreServers", "proxyLogLevel", "clusterName",
		"brokerProxyAllowedHostNames", "brokerProxyAllowedIPAddresses", "brokerProxyAllowedTargetPorts", "checkActiveBrokers"},
}

// portAddr turns a port ("6651") into a listen address; empty stays off.
func portAddr(vals []string, _ string) (string, error) {
	return auth.ListenAddr(vals[0]), nil
}

func runProxy(ctx context.Context, f proxyFlags) error {
	log, err := newLogger(f.run.logLevel, f.run.logFormat)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cfg, closeStore, err := proxyConfig(f, log)
	if err != nil {
		return err
	}
	defer closeStore()
	p, err := proxy.Start(ctx, cfg)
	if err != nil {
		return err
	}
	extra := ""
	if a := p.TLSServiceAddr(); a != "" {
		extra += " service-tls=pulsar+ssl://" + a
	}
	if a := p.TLSHTTPAddr(); a != "" {
		extra += " https=https://" + a
	}
	log.Info("magnetar proxy ready", "service", p.ServiceAddr(), "http", p.HTTPAddr())
	fmt.Fprintf(os.Stdout, "magnetar proxy ready service=pulsar://%s http=http://%s%s\n", p.ServiceAddr(), p.HTTPAddr(), extra)
	<-ctx.Done()
	log.Info("stopping")
	return p.Close()
}

// proxyConfig builds the proxy's configuration from the flags.
func proxyConfig(f proxyFlags, log *slog.Logger) (proxy.Config, func(), error) {
	cfg := proxy.Config{
		ServiceAddr: f.serviceAddr, HTTPAddr: f.httpAddr, TLSServiceAddr: f.tlsServiceAddr, TLSHTTPAddr: f.tlsHTTP,
		BrokerServiceURL: f.brokerURL, BrokerServiceURLTLS: f.brokerURLTLS,
		BrokerWebServiceURL: f.brokerWeb, BrokerWebServiceURLTLS: f.brokerWebTLS,
		ForwardAuthorizationCredentials: f.forwardCreds,
		MaxConcurrentLookupRequests:     f.maxLookups, MaxConcurrentInboundConnections: f.maxConns,
		KeepAlive: f.keepAlive, ConnectTimeout: f.connectTimeout, MaxMessageSize: f.maxMessageSize,
		Logger: log.With("component", "proxy"),
	}
	lim, err := f.http.Limits()
	if err != nil {
		return cfg, nil, err
	}
	cfg.HTTPLimits = lim
	sc, set, err := f.sec.Load(log)
	if err != nil {
		return cfg, nil, err
	}
	if set {
		if sc.AuthorizationEnabled {
			log.Info("authorizationEnabled is ignored by the proxy: brokers authorize the original principal")
			sc.AuthorizationEnabled = false
		}
		s, err := auth.New(sc, nil, "", log.With("component", "auth"))
		if err != nil {
			return cfg, nil, err
		}
		cfg.Security = s
		cfg.SuperUserRoles = sc.SuperUserRoles
		ca, err := auth.ParseClientAuth(sc.BrokerClientAuthenticationPlugin, sc.BrokerClientAuthenticationParameters)
		if err != nil {
			return cfg, nil, fmt.Errorf("brokerClientAuthenticationPlugin: %w", err)
		}
		cfg.BrokerClientAuth = ca
		if f.tlsWithBroker || sc.BrokerClientTLSEnabled {
			cert, key := sc.BrokerClientCertificateFilePath, sc.BrokerClientKeyFilePath
			if ca != nil && ca.Method == auth.MethodTLS {
				cert, key = ca.CertFile, ca.KeyFile
			}
			if cfg.BrokerClientTLS, err = auth.ClientTLS(sc.BrokerClientTrustCertsFilePath, cert, key, false); err != nil {
				return cfg, nil, fmt.Errorf("TLS towards brokers: %w", err)
			}
		}
	} else if f.tlsWithBroker {
		return cfg, nil, fmt.Errorf("--tls-enabled-with-broker needs brokerClientTrustCertsFilePath")
	}
	closeStore := func() {}
	if f.meta.url != "" {
		st, err := stack.OpenMetadataURL(f.meta.url, f.meta.sessionTimeout, log)
		if err != nil {
			return cfg, nil, err
		}
		cfg.Metadata = st
		closeStore = func() { closeMetadata(st, log) }
	}
	return cfg, closeStore, nil
}

func closeMetadata(st metadata.Store, log *slog.Logger) {
	if c, ok := st.(interface{ Close() error }); ok {
		if err := c.Close(); err != nil {
			log.Warn("closing metadata store", "err", err)
		}
	}
}
