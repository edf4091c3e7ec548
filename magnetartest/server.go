package magnetartest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/functions"
	"github.com/magnetar-mq/magnetar/internal/stack"
)

// AdminRole is the superuser role of a server started WithTokenAuth.
const AdminRole = "admin"

// Option configures a server.
type Option func(*settings)

type settings struct {
	dataDir   string
	logger    *slog.Logger
	security  [][2]string
	tokenAuth bool
	broker    []func(*brokerconf.Config)
	functions bool
}

// WithTokenAuth turns on token authentication (Pulsar's
// AuthenticationProviderToken with a fresh HS256 secret key) and
// authorization, with AdminRole as the superuser.
func WithTokenAuth() Option { return func(s *settings) { s.tokenAuth = true } }

// WithSecurity sets one of Pulsar's security keys (broker.conf names:
// authenticationEnabled, authorizationEnabled, superUserRoles,
// tlsCertificateFilePath, tlsKeyFilePath, tokenPublicKey, ...). Keys are
// applied in order, after WithTokenAuth's.
func WithSecurity(key, value string) Option {
	return func(s *settings) { s.security = append(s.security, [2]string{key, value}) }
}

// WithBrokerConfig adjusts the broker's configuration after the
// server's own settings (listeners on 127.0.0.1:0).
func WithBrokerConfig(fn func(*brokerconf.Config)) Option {
	return func(s *settings) { s.broker = append(s.broker, fn) }
}

// WithFunctionsWorker runs the function worker in process, serving
// /admin/v3/functions on WebURL.
func WithFunctionsWorker() Option { return func(s *settings) { s.functions = true } }

// WithDataDir keeps the server's files in dir instead of a fresh
// temporary directory: a second server on the same dir (after the first
// closed) sees its topics and messages.
func WithDataDir(dir string) Option { return func(s *settings) { s.dataDir = dir } }

// WithLogger sends the server's logs to l.
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.logger = l } }

// Server is a running in-process standalone.
type Server struct {
	sa      *stack.Standalone
	dataDir string
	ownDir  bool // dataDir was made by New and is removed by Close
	secret  []byte
	startup time.Duration

	closeOnce sync.Once
	closeErr  error
}

// Start starts a standalone in t.TempDir() (or WithDataDir's directory)
// and registers its Close with t.Cleanup; it fails the test (t.Fatal)
// when the server cannot start.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var st settings
	for _, o := range opts {
		o(&st)
	}
	if st.dataDir == "" {
		st.dataDir = t.TempDir()
	}
	s, err := start(st)
	if err != nil {
		t.Fatalf("magnetartest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("magnetartest: close: %v", err)
		}
	})
	return s
}

// New starts a standalone outside a test's lifetime (TestMain, examples,
// a benchmark's setup); the caller closes it. Without WithDataDir its
// files go to a new temporary directory that Close removes.
func New(opts ...Option) (*Server, error) {
	var st settings
	for _, o := range opts {
		o(&st)
	}
	own := false
	if st.dataDir == "" {
		dir, err := os.MkdirTemp("", "magnetartest-")
		if err != nil {
			return nil, err
		}
		st.dataDir, own = dir, true
	}
	s, err := start(st)
	if err != nil {
		if own {
			os.RemoveAll(st.dataDir)
		}
		return nil, err
	}
	s.ownDir = own
	return s, nil
}

func start(st settings) (*Server, error) {
	if st.logger == nil {
		st.logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{dataDir: st.dataDir}
	cfg := brokerconf.Config{
		ServiceAddr:    "127.0.0.1:0",
		HTTPAddr:       "127.0.0.1:0",
		AdvertisedHost: "127.0.0.1",
		// No console: nothing shows its samples.
		HistoryInterval: -1,
	}
	sec, err := s.security(st)
	if err != nil {
		return nil, err
	}
	if sec != nil {
		cfg.Security = sec
		if sec.TLSEnabled || sec.BrokerServicePortTls != "" {
			cfg.TLSServiceAddr = "127.0.0.1:0"
		}
		if sec.TLSEnabled || sec.WebServicePortTls != "" {
			cfg.TLSHTTPAddr = "127.0.0.1:0"
		}
	}
	for _, fn := range st.broker {
		fn(&cfg)
	}
	o := stack.StandaloneOptions{
		DataDir: st.dataDir,
		Service: stack.Service{Broker: cfg},
		Logger:  st.logger,
	}
	if st.functions {
		o.Functions = &functions.Options{}
	}
	t0 := time.Now()
	if s.sa, err = stack.OpenStandalone(context.Background(), o); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	s.startup = time.Since(t0)
	return s, nil
}

// security builds the security settings: WithTokenAuth's, then the
// WithSecurity keys; nil when none is set.
func (s *Server) security(st settings) (*auth.Config, error) {
	if !st.tokenAuth && len(st.security) == 0 {
		return nil, nil
	}
	sc := auth.DefaultConfig()
	kv := st.security
	if st.tokenAuth {
		key, err := auth.NewSecretKey("HS256")
		if err != nil {
			return nil, err
		}
		s.secret = key
		admin, err := auth.CreateToken(key, auth.TokenSpec{Subject: AdminRole})
		if err != nil {
			return nil, err
		}
		kv = append([][2]string{
			{"authenticationEnabled", "true"},
			{"authorizationEnabled", "true"},
			{"authenticationProviders", "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"},
			{"tokenSecretKey", "data:;base64," + base64.StdEncoding.EncodeToString(key)},
			{"superUserRoles", AdminRole},
			// The function worker's own connections.
			{"brokerClientAuthenticationPlugin", "org.apache.pulsar.client.impl.auth.AuthenticationToken"},
			{"brokerClientAuthenticationParameters", "token:" + admin},
		}, kv...)
	}
	for _, p := range kv {
		if err := sc.Set(p[0], p[1]); err != nil {
			return nil, err
		}
	}
	return &sc, nil
}

// ServiceURL is the Pulsar binary protocol URL (pulsar://127.0.0.1:PORT).
func (s *Server) ServiceURL() string { return "pulsar://" + s.sa.Stack().Broker().ServiceAddr() }

// WebURL is the HTTP URL of the admin and lookup API
// (http://127.0.0.1:PORT).
func (s *Server) WebURL() string { return "http://" + s.sa.Stack().Broker().HTTPAddr() }

// TLSServiceURL is the pulsar+ssl:// URL ("" without TLS).
func (s *Server) TLSServiceURL() string {
	if a := s.sa.Stack().Broker().TLSServiceAddr(); a != "" {
		return "pulsar+ssl://" + a
	}
	return ""
}

// TLSWebURL is the https:// URL ("" without TLS).
func (s *Server) TLSWebURL() string {
	if a := s.sa.Stack().Broker().TLSHTTPAddr(); a != "" {
		return "https://" + a
	}
	return ""
}

// DataDir is the directory holding the server's metadata, journal and
// ledgers.
func (s *Server) DataDir() string { return s.dataDir }

// StartupTime is how long opening the server took (metadata store,
// bookie, broker, listeners).
func (s *Server) StartupTime() time.Duration { return s.startup }

// Token returns a token for role signed with the server's key; "" when
// the server was not started WithTokenAuth.
func (s *Server) Token(role string) string {
	if s.secret == nil {
		return ""
	}
	tok, err := auth.CreateToken(s.secret, auth.TokenSpec{Subject: role})
	if err != nil {
		// An HS256 signature over a fresh key cannot fail.
		panic("magnetartest: token: " + err.Error())
	}
	return tok
}

// AdminToken is Token(AdminRole): a superuser's token.
func (s *Server) AdminToken() string { return s.Token(AdminRole) }

// Close stops the server (in-flight sends are answered, cursors and
// ledgers closed, the bookie checkpointed). Start registers it with
// t.Cleanup; calling it earlier (to restart on the same WithDataDir) is
// allowed, and later calls return the first result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.sa.Close()
		if s.ownDir {
			s.closeErr = errors.Join(s.closeErr, os.RemoveAll(s.dataDir))
		}
	})
	return s.closeErr
}
