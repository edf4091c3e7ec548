package auth

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/magnetar-mq/magnetar/metadata"
)

// Security bundles what the network entry points need: the
// authenticator (nil: authentication off), the authorizer (nil:
// authorization off) and the server TLS material (nil: no TLS).
type Security struct {
	Config Config
	Authn  *Authenticator
	Authz  *Authorizer
	TLS    *ServerTLS
	Log    *slog.Logger
	// Client is the broker's identity on its own connections, as the
	// configuration gives it and dynamic updates change it.
	Client *BrokerClient
}

// New builds a Security from cfg. store holds tenants, namespaces and
// grants; cluster is the local cluster name.
func New(cfg Config, store metadata.Store, cluster string, log *slog.Logger) (*Security, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Security{Config: cfg, Log: log, Client: NewBrokerClient(&cfg)}
	if cfg.AuthorizationEnabled && !cfg.AuthenticationEnabled {
		return nil, errors.New("auth: authorizationEnabled needs authenticationEnabled")
	}
	if cfg.AuthenticationEnabled {
		if len(cfg.AuthenticationProviders) == 0 && cfg.AnonymousUserRole == "" {
			return nil, errors.New("auth: authenticationEnabled with no authenticationProviders and no anonymousUserRole admits no one")
		}
		var ps []Provider
		for _, name := range cfg.AuthenticationProviders {
			m, err := providerName(name)
			if err != nil {
				return nil, err
			}
			p, err := newProvider(m, &cfg, log)
			if err != nil {
				return nil, err
			}
			ps = append(ps, p)
		}
		s.Authn = NewAuthenticator(cfg.AnonymousUserRole, ps...)
	}
	if cfg.AuthorizationEnabled {
		if store == nil {
			return nil, errors.New("auth: authorization needs a metadata store")
		}
		s.Authz = NewAuthorizer(AuthorizerConfig{
			Store: store, SuperUsers: cfg.SuperUserRoles, Cluster: cluster,
			Wildcards: cfg.AuthorizationAllowWildcardsMatching,
		})
	}
	if cfg.BrokerServicePortTls != "" || cfg.WebServicePortTls != "" || cfg.TLSCertificateFilePath != "" {
		t, err := NewServerTLS(&cfg)
		if err != nil {
			return nil, err
		}
		s.TLS = t
		if s.Authn != nil && cfg.TLSAllowInsecureConnection {
			s.Authn.verify = t.VerifyClient
		}
	}
	return s, nil
}

func newProvider(method string, cfg *Config, log *slog.Logger) (Provider, error) {
	switch method {
	case MethodToken:
		tc := TokenConfig{
			RoleClaim: cfg.TokenAuthClaim, AudienceClaim: cfg.TokenAudienceClaim, Audience: cfg.TokenAudience,
			ClockSkew: time.Duration(cfg.TokenAllowedClockSkewSeconds) * time.Second,
		}
		switch {
		case cfg.TokenSecretKey != "":
			k, err := ReadKey(cfg.TokenSecretKey)
			if err != nil {
				return nil, fmt.Errorf("tokenSecretKey: %w", err)
			}
			tc.SecretKey = k
		case cfg.TokenPublicKey != "":
			b, err := ReadKey(cfg.TokenPublicKey)
			if err != nil {
				return nil, fmt.Errorf("tokenPublicKey: %w", err)
			}
			if tc.PublicKey, err = ParsePublicKey(b); err != nil {
				return nil, fmt.Errorf("tokenPublicKey: %w", err)
			}
		default:
			return nil, errors.New("auth: the token provider needs tokenSecretKey or tokenPublicKey")
		}
		return NewTokenProvider(tc)
	case MethodTLS:
		if cfg.TLSTrustCertsFilePath == "" {
			return nil, errors.New("auth: the tls provider needs tlsTrustCertsFilePath to verify client certificates")
		}
		return TLSProvider{}, nil
	case MethodBasic:
		if cfg.BasicAuthConf == "" {
			return nil, errors.New("auth: the basic provider needs basicAuthConf")
		}
		b, err := ReadKey(cfg.BasicAuthConf)
		if err != nil {
			return nil, fmt.Errorf("basicAuthConf: %w", err)
		}
		p, err := ParseHtpasswd(b)
		if err != nil {
			return nil, fmt.Errorf("basicAuthConf: %w", err)
		}
		if w := p.Weak(); len(w) > 0 {
			log.Warn("basicAuthConf: weak password hashes; they work as in Pulsar, but bcrypt (htpasswd -B) is much stronger, and crypt reads only 8 password characters",
				"users", strings.Join(w, ", "))
		}
		return p, nil
	}
	return nil, fmt.Errorf("auth: unknown method %q", method)
}

// Enabled reports whether authentication is on.
func (s *Security) Enabled() bool { return s != nil && s.Authn != nil }

// AuthenticateConnect authenticates a binary CONNECT (or AUTH_RESPONSE).
// With authentication off it returns an empty identity.
func (s *Security) AuthenticateConnect(method string, data []byte, cs *tls.ConnectionState, remote string) (Identity, error) {
	if !s.Enabled() {
		return Identity{}, nil
	}
	c := s.Authn.peer(cs)
	c.Data, c.Remote = data, remote
	id, err := s.Authn.Authenticate(method, c)
	if err != nil {
		s.Log.Warn("authentication failed", "method", abbreviate(method), "remote", remote, "err", err)
		return Identity{}, err
	}
	s.Log.Debug("authenticated", "role", id.Role, "method", id.Method, "remote", remote)
	return id, nil
}

// topicCheck runs an authorization check on topic, which passes when
// authorization is off.
func (s *Security) topicCheck(ctx context.Context, role, topic string, f func(TopicRef) (bool, error)) error {
	if s == nil || s.Authz == nil {
		return nil
	}
	t, err := ParseTopic(topic)
	if err != nil {
		return err
	}
	ok, err := f(t)
	if err != nil {
		return err
	}
	if !ok {
		return ErrAuthorization
	}
	return nil
}

// CanLookup returns nil when role may look topic up (or authorization is
// off), ErrAuthorization when not, another error if the check failed.
func (s *Security) CanLookup(ctx context.Context, role, topic string) error {
	return s.topicCheck(ctx, role, topic, func(t TopicRef) (bool, error) { return s.Authz.CanLookup(ctx, role, t) })
}

// CanProduce is CanLookup for producing.
func (s *Security) CanProduce(ctx context.Context, role, topic string) error {
	return s.topicCheck(ctx, role, topic, func(t TopicRef) (bool, error) { return s.Authz.CanProduce(ctx, role, t) })
}

// CanConsume is CanLookup for consuming through subscription sub; the
// error text of a denial is the message for the client.
func (s *Security) CanConsume(ctx context.Context, role, topic, sub string) error {
	if s == nil || s.Authz == nil {
		return nil
	}
	t, err := ParseTopic(topic)
	if err != nil {
		return err
	}
	return s.Authz.CanConsume(ctx, role, t, sub)
}

// CanListNamespace checks consume on namespace ns ("tenant/ns").
func (s *Security) CanListNamespace(ctx context.Context, role, ns string) error {
	if s == nil || s.Authz == nil {
		return nil
	}
	ok, err := s.Authz.NamespaceAction(ctx, role, ns, ActionConsume)
	if err != nil {
		return err
	}
	if !ok {
		return ErrAuthorization
	}
	return nil
}

// ConnTLS returns the TLS session of a server connection, nil when it is
// plaintext: what AuthenticateConnect takes for the tls provider.
func ConnTLS(nc net.Conn) *tls.ConnectionState {
	tc, ok := nc.(*tls.Conn)
	if !ok {
		return nil
	}
	st := tc.ConnectionState()
	return &st
}
