package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/bookie/server"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/internal/conf"
	"github.com/magnetar-mq/magnetar/ledger"
)

// securityFlags are the TLS, authentication and authorization settings
// of `standalone`, `broker` and `bookie`: one flag per Pulsar key under
// the same name (--tlsCertificateFilePath=...). The role's --config file
// and PULSAR_PREFIX_ variables set them through the role's schema
// (securityKeys), flags winning over both.
type securityFlags struct {
	values map[string]*string
	fl     *pflag.FlagSet
}

// securityKeys maps every security key to the flag of the same name,
// except those the role's schema already maps (brokerServicePort,
// webServicePort are the listen addresses).
func securityKeys(have []conf.Key) []conf.Key {
	taken := map[string]bool{}
	for _, k := range have {
		for _, n := range k.Names {
			taken[n] = true
		}
	}
	var c auth.Config
	var out []conf.Key
	for _, kv := range c.Keys() {
		if !taken[kv[0]] {
			out = append(out, conf.Key{Names: []string{kv[0]}, Flag: kv[0], Doc: kv[1]})
		}
	}
	return out
}

func (s *securityFlags) register(fl *pflag.FlagSet) {
	s.fl = fl
	s.values = map[string]*string{}
	var c auth.Config
	for _, kv := range c.Keys() {
		s.values[kv[0]] = fl.String(kv[0], "", kv[1])
		if c.IsBool(kv[0]) {
			fl.Lookup(kv[0]).NoOptDefVal = "true" // --authenticationEnabled alone means true
		}
	}
}

// load reads the file and the flags; set is false when neither gave
// any setting.
func (s *securityFlags) load(log *slog.Logger) (sc auth.Config, set bool, err error) {
	sc = auth.DefaultConfig()
	for k, v := range s.values {
		if s.fl.Changed(k) {
			if err := sc.Set(k, *v); err != nil {
				return sc, false, err
			}
			set = true
		}
	}
	return sc, set, nil
}

// apply builds the security configuration into cfg. Without any setting
// cfg.Security stays nil (no TLS, no authentication).
func (s *securityFlags) apply(cfg *broker.Config, log *slog.Logger) error {
	sc, set, err := s.load(log)
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

// bookieClient returns the bookie-client options of the broker and
// autorecovery: TLS (brokerClientTlsEnabled, brokerClientTrustCertsFilePath,
// a tls plugin's certificate) and AUTH credentials
// (brokerClientAuthenticationPlugin/Parameters).
func (s *securityFlags) bookieClient(log *slog.Logger) (func(*ledger.NetOptions), error) {
	sc, set, err := s.load(log)
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

// bookieServer returns the bookie server's TLS listener config and auth
// hook: TLS from the tls* settings (tlsRequireTrustedClientCertOnConnect
// for mutual TLS), AUTH required when authenticationEnabled, allowed for
// superUserRoles.
func (s *securityFlags) bookieServer(log *slog.Logger) (*tls.Config, server.Authenticator, error) {
	sc, set, err := s.load(log)
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
