package proxy

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/metadata"
)

// Config configures a Proxy. Brokers are found through Metadata (the
// cluster's registrations) or, without it, through the static
// BrokerServiceURL / BrokerWebServiceURL lists.
type Config struct {
	// Listen addresses; "" turns a listener off. At least one binary
	// listener is required.
	ServiceAddr    string // servicePort
	HTTPAddr       string // webServicePort
	TLSServiceAddr string // servicePortTls
	TLSHTTPAddr    string // webServicePortTls

	// Metadata is the cluster's metadata store (metadataStoreUrl).
	Metadata metadata.Store
	// Static broker lists (comma-separated URLs), used when Metadata is
	// nil: brokerServiceURL(Tls) and brokerWebServiceURL(Tls).
	BrokerServiceURL       string
	BrokerServiceURLTLS    string
	BrokerWebServiceURL    string
	BrokerWebServiceURLTLS string

	// Security authenticates clients (authenticationEnabled and the
	// providers) and holds the server TLS material of the TLS listeners;
	// nil: neither.
	Security *auth.Security
	// SuperUserRoles may read /proxy-stats when authentication is on.
	SuperUserRoles []string
	// HTTPLimits are the timeouts and caps of the HTTP and HTTPS
	// listeners (zero fields: defaults; see httpapi.Limits).
	HTTPLimits httpapi.Limits

	// BrokerClientAuth is the proxy's own identity towards brokers
	// (brokerClientAuthenticationPlugin / Parameters); nil: none.
	BrokerClientAuth *auth.ClientAuth
	// BrokerClientTLS, when set, makes the proxy talk TLS to brokers
	// (tlsEnabledWithBroker) using their TLS URLs.
	BrokerClientTLS *tls.Config
	// ForwardAuthorizationCredentials sends the client's credentials to
	// the broker as original_auth_data / original_auth_method.
	ForwardAuthorizationCredentials bool

	// MaxConcurrentLookupRequests bounds lookups in flight (over all
	// clients); more get TooManyRequests. Default 50000.
	MaxConcurrentLookupRequests int
	// MaxConcurrentInboundConnections bounds client connections; more
	// are closed at accept. Default 10000.
	MaxConcurrentInboundConnections int
	// ConnectTimeout bounds a client's CONNECT and the proxy's dial and
	// handshake with a broker. Default 10 s.
	ConnectTimeout time.Duration
	// MaxMessageSize is announced to lookup connections. Default 5 MiB.
	MaxMessageSize int
	// KeepAlive pings idle lookup connections this often, and closes one
	// silent for 2.5 intervals. Default 30 s; negative: neither (Pulsar's
	// keepAliveIntervalSeconds=0).
	KeepAlive time.Duration

	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.MaxConcurrentLookupRequests <= 0 {
		c.MaxConcurrentLookupRequests = 50000
	}
	if c.MaxConcurrentInboundConnections <= 0 {
		c.MaxConcurrentInboundConnections = 10000
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	if c.MaxMessageSize <= 0 {
		c.MaxMessageSize = 5 << 20
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// ErrBadConfig wraps configuration errors.
var ErrBadConfig = errors.New("proxy: bad configuration")

func (c *Config) validate() error {
	if c.ServiceAddr == "" && c.TLSServiceAddr == "" {
		return fmt.Errorf("%w: no binary listener (servicePort or servicePortTls)", ErrBadConfig)
	}
	if (c.TLSServiceAddr != "" || c.TLSHTTPAddr != "") && (c.Security == nil || c.Security.TLS == nil) {
		return fmt.Errorf("%w: TLS ports need tlsCertificateFilePath and tlsKeyFilePath", ErrBadConfig)
	}
	if c.Metadata == nil {
		if c.BrokerServiceURL == "" && c.BrokerServiceURLTLS == "" {
			return fmt.Errorf("%w: neither metadataStoreUrl nor brokerServiceURL is set", ErrBadConfig)
		}
		for _, l := range []struct{ key, v string }{
			{"brokerServiceURL", c.BrokerServiceURL}, {"brokerServiceURLTLS", c.BrokerServiceURLTLS},
			{"brokerWebServiceURL", c.BrokerWebServiceURL}, {"brokerWebServiceURLTLS", c.BrokerWebServiceURLTLS},
		} {
			if _, err := parseURLList(l.v); err != nil {
				return fmt.Errorf("%w: %s: %w", ErrBadConfig, l.key, err)
			}
		}
	}
	return nil
}

// parseURLList reads "scheme://h1:p1,h2:p2" or "scheme://h1:p1,scheme://h2:p2"
// into one URL per host.
func parseURLList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	scheme, rest, ok := strings.Cut(strings.TrimSpace(s), "://")
	if !ok {
		return nil, fmt.Errorf("%q: want scheme://host:port", s)
	}
	var out []string
	for _, h := range strings.Split(rest, ",") {
		h = strings.TrimSpace(h)
		if sc, r, ok := strings.Cut(h, "://"); ok {
			scheme, h = sc, r
		}
		h = strings.TrimSuffix(h, "/")
		u, err := url.Parse(scheme + "://" + h)
		if err != nil || u.Host == "" || u.Port() == "" {
			return nil, fmt.Errorf("%q: want scheme://host:port", s)
		}
		switch scheme {
		case "pulsar", "pulsar+ssl", "http", "https":
		default:
			return nil, fmt.Errorf("%q: unknown scheme %q", s, scheme)
		}
		out = append(out, scheme+"://"+u.Host)
	}
	return out, nil
}
