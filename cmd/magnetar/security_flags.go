package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker"
)

// securityFlags are the TLS, authentication and authorization settings
// of `standalone` and `broker`: a Pulsar-style properties file (--config,
// broker.conf key names) and one flag per key under the same name
// (--tlsCertificateFilePath=...), flags winning over the file.
type securityFlags struct {
	configFile string
	values     map[string]*string
	fl         *pflag.FlagSet
}

func (s *securityFlags) register(fl *pflag.FlagSet) {
	s.fl = fl
	s.values = map[string]*string{}
	fl.StringVar(&s.configFile, "config", "", "properties file (key=value, Pulsar broker.conf names) with the security settings; other keys are ignored with a warning")
	var c auth.Config
	for _, kv := range c.Keys() {
		s.values[kv[0]] = fl.String(kv[0], "", kv[1])
	}
}

// apply builds the security configuration into cfg. Without any setting
// cfg.Security stays nil (no TLS, no authentication).
func (s *securityFlags) apply(cfg *broker.Config, log *slog.Logger) error {
	sc := auth.DefaultConfig()
	set := false
	if s.configFile != "" {
		unknown, err := sc.LoadFile(s.configFile)
		if err != nil {
			return err
		}
		if len(unknown) > 0 {
			log.Warn("config file: settings Magnetar does not use", "file", s.configFile, "keys", unknown)
		}
		set = true
	}
	for k, v := range s.values {
		if s.fl.Changed(k) {
			if err := sc.Set(k, *v); err != nil {
				return err
			}
			set = true
		}
	}
	if !set {
		return nil
	}
	if sc.IsSet("brokerServicePort") {
		cfg.ServiceAddr = listenOrOff(sc.BrokerServicePort)
	}
	if sc.IsSet("webServicePort") {
		cfg.HTTPAddr = listenOrOff(sc.WebServicePort)
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
