package cliflags

import (
	"crypto/tls"
	"fmt"
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/bookie/server"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/internal/conf"
	"github.com/magnetar-mq/magnetar/ledger"
)

// Security are the TLS, authentication and authorization settings
// of `standalone`, `broker` and `bookie`: one flag per Pulsar key under
// the same name (--tlsCertificateFilePath=...). The role's --config file
// and PULSAR_PREFIX_ variables set them through the role's schema
// (SecurityKeys), flags winning over both.
type Security struct{ keyed }

// SecurityKeys maps every security key to the flag of the same name,
// except those the role's schema already maps (brokerServicePort,
// webServicePort are the listen addresses).
func SecurityKeys(have []conf.Key) []conf.Key { return keysOf(&auth.Config{}, have) }

// Register adds one flag per security key to fl.
func (s *Security) Register(fl *pflag.FlagSet) { s.register(fl, &auth.Config{}) }

// Load reads the file and the flags; set is false when neither gave
// any setting.
func (s *Security) Load(log *slog.Logger) (sc auth.Config, set bool, err error) {
	sc = auth.DefaultConfig()
	set, err = s.setInto(&sc)
	return sc, set, err
}

// Apply builds the security configuration into cfg. Without any setting
// cfg.Security stays nil (no TLS, no authentication).
func (s *Security) Apply(cfg *brokerconf.Config, log *slog.Logger) error {
	sc, set, err := s.Load(log)
	if err != nil || !set {
		return err
	}
	if sc.IsSet("brokerServicePort") {
		cfg.ServiceAddr = listenOrOff(sc.BrokerServicePort)
	}
	if sc.IsSet("webServicePort") {
		cfg.HTTPAddr = listenOrOff(sc.WebServicePort)
	}
	if sc.TLSEnabled && !sc.IsSet("brokerServicePortTls") {
		sc.BrokerServicePortTls = "6651"
	}
	if sc.TLSEnabled && !sc.IsSet("webServicePortTls") {
		sc.WebServicePortTls = "8443"
	}
	cfg.TLSServiceAddr = auth.ListenAddr(sc.BrokerServicePortTls)
	cfg.TLSHTTPAddr = auth.ListenAddr(sc.WebServicePortTls)
	if cfg.ServiceAddr == "-" && cfg.TLSServiceAddr == "" {
		return fmt.Errorf("brokerServicePort is off and brokerServicePortTls is not set: no binary-protocol port")
	}
	cfg.Security = &sc
	return nil
}

func listenOrOff(v string) string {
	if v == "" {
		return "-"
	}
	return auth.ListenAddr(v)
}

// BookieClient returns the bookie-client options of the broker and
// autorecovery: TLS (brokerClientTlsEnabled, brokerClientTrustCertsFilePath,
// a tls plugin's certificate) and AUTH credentials
// (brokerClientAuthenticationPlugin/Parameters).
func (s *Security) BookieClient(log *slog.Logger) (func(*ledger.NetOptions), error) {
	sc, set, err := s.Load(log)
	if err != nil || !set {
		return func(*ledger.NetOptions) {}, err
	}
	ca, err := auth.ParseClientAuth(sc.BrokerClientAuthenticationPlugin, sc.BrokerClientAuthenticationParameters)
	if err != nil {
		return nil, fmt.Errorf("brokerClientAuthenticationPlugin: %w", err)
	}
	var tc *tls.Config
	if sc.BrokerClientTLSEnabled {
		cert, key := sc.BrokerClientCertificateFilePath, sc.BrokerClientKeyFilePath
		if ca != nil && ca.Method == auth.MethodTLS {
			cert, key = ca.CertFile, ca.KeyFile
		}
		if tc, err = auth.ClientTLS(sc.BrokerClientTrustCertsFilePath, cert, key, false); err != nil {
			return nil, err
		}
	} else if ca != nil && ca.Method == auth.MethodTLS {
		return nil, fmt.Errorf("brokerClientAuthenticationPlugin tls needs brokerClientTlsEnabled=true")
	}
	payload := auth.BookieAuthPayload(ca)
	return func(o *ledger.NetOptions) { o.TLS, o.Auth = tc, payload }, nil
}

// BookieServer returns the bookie server's TLS listener config and auth
// hook: TLS from the tls* settings (tlsRequireTrustedClientCertOnConnect
// for mutual TLS), AUTH required when authenticationEnabled, allowed for
// superUserRoles.
func (s *Security) BookieServer(log *slog.Logger) (*tls.Config, server.Authenticator, error) {
	sc, set, err := s.Load(log)
	if err != nil || !set {
		return nil, nil, err
	}
	var tc *tls.Config
	if sc.TLSCertificateFilePath != "" {
		st, err := auth.NewServerTLS(&sc)
		if err != nil {
			return nil, nil, err
		}
		tc = st.Config()
	}
	if !sc.AuthenticationEnabled {
		return tc, nil, nil
	}
	sc.AuthorizationEnabled = false
	sec, err := auth.New(sc, nil, "", log)
	if err != nil {
		return nil, nil, err
	}
	if len(sc.SuperUserRoles) == 0 {
		return nil, nil, fmt.Errorf("bookie authentication needs superUserRoles: the roles brokers and autorecovery use")
	}
	return tc, &auth.BookieAuthenticator{Authn: sec.Authn, Roles: sc.SuperUserRoles, Log: log}, nil
}
