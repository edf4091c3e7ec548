package stack

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/bookie/server"
	"github.com/magnetar-mq/magnetar/bookieinfo"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/functions"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
)

// StandaloneBookieID names the standalone's in-process bookie in ledger
// metadata.
const StandaloneBookieID = "standalone-bookie"

// StandaloneOptions configure a standalone.
type StandaloneOptions struct {
	// DataDir holds the metadata store (metadata.db), and the journal
	// (journal/), ledgers (ledgers/) and function packages (functions/)
	// unless Bookie names other directories.
	DataDir string
	// Bookie configures the bookie; JournalDir and LedgerDirs default to
	// DataDir/journal and DataDir/ledgers, FS to the OS file system.
	Bookie bookie.Options
	// Service configures the broker and what runs beside it.
	Service Service
	// Functions, when not nil, runs the function worker in process with
	// these options (package and instance settings, builtin connector
	// command); Metadata, ID, DataDir, Client, AuthenticationEnabled and
	// Logger are filled here. Its routes are the broker's (same
	// authentication, authorization and TLS); its own connections use
	// the brokerClient* identity of Service.Broker.Security.
	Functions *functions.Options
	Logger    *slog.Logger
}

// Standalone is a running single-process deployment.
type Standalone struct {
	store *embedded.Store
	bk    *bookie.Bookie
	lc    *ledger.Client
	stack *Stack
	log   *slog.Logger
}

// Stack is the standalone's broker stack.
func (s *Standalone) Stack() *Stack { return s.stack }

// Bookie is the standalone's bookie.
func (s *Standalone) Bookie() *bookie.Bookie { return s.bk }

// OpenStandalone opens and starts a standalone; on error everything it
// opened is closed.
func OpenStandalone(ctx context.Context, o StandaloneOptions) (_ *Standalone, err error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Standalone{log: log}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	bo := o.Bookie
	if bo.JournalDir == "" {
		bo.JournalDir = filepath.Join(o.DataDir, "journal")
	}
	if len(bo.LedgerDirs) == 0 {
		bo.LedgerDirs = []string{filepath.Join(o.DataDir, "ledgers")}
	}
	if bo.FS == nil {
		bo.FS = vfs.Default
	}
	bo.Logger = log.With("component", "bookie")
	if err := os.MkdirAll(o.DataDir, 0o755); err != nil {
		return nil, err
	}
	if s.store, err = embedded.Open(filepath.Join(o.DataDir, "metadata.db"), embedded.Options{}); err != nil {
		return nil, fmt.Errorf("metadata store: %w", err)
	}
	t0 := time.Now()
	if s.bk, err = bookie.Open(bo); err != nil {
		return nil, fmt.Errorf("bookie: %w", err)
	}
	log.Info("bookie open", "journal", bo.JournalDir, "ledgers", bo.LedgerDirs, "took", time.Since(t0).Round(time.Millisecond), "durable", !bo.JournalNoSync)
	resolver := ledger.NewStaticResolver(map[string]ledger.BookieClient{StandaloneBookieID: server.NewLocal(s.bk)})
	s.lc, err = ledger.NewClient(s.store, resolver, ledger.Options{
		Bookies: []string{StandaloneBookieID},
		// A read-only bookie (full disk) gets no new ledgers: the broker
		// stops rolling instead of creating one per failed add.
		ReadOnly: func(string) bool { return s.bk.IsReadOnly() },
		Logger:   log.With("component", "ledger"),
	})
	if err != nil {
		return nil, fmt.Errorf("ledger client: %w", err)
	}
	var fw *functions.Worker
	if o.Functions != nil {
		fo := *o.Functions
		sec := o.Service.Broker.Security
		if sec != nil {
			if fo.Client, err = WorkerClient(*sec); err != nil {
				return nil, err
			}
		}
		fo.Metadata, fo.ID, fo.DataDir = s.store, "standalone", filepath.Join(o.DataDir, "functions")
		fo.AuthenticationEnabled = sec != nil && sec.AuthenticationEnabled
		fo.Logger = log.With("component", "functions")
		if fw, err = functions.NewWorker(fo); err != nil {
			return nil, err
		}
	}
	stats := &localBookieStats{bk: s.bk, dirs: append([]string{bo.JournalDir}, bo.LedgerDirs...)}
	svc := o.Service
	if svc.Broker.Cluster == nil && svc.ConfigURL == "" {
		// Pulsar's standalone is a cluster of one broker: its namespaces
		// have bundles (4 unless created with another count), which it
		// owns, splits and unloads as a clustered broker does. Not yet
		// with a configuration store shared with other clusters
		// (geo-replication): there the namespaces live in the shared
		// store and the one-broker cluster does not find them.
		svc.Broker.Cluster = &brokerconf.ClusterConfig{Standalone: true}
	}
	s.stack, err = OpenStack(ctx, svc, Deps{
		Metadata:   s.store,
		Ledgers:    s.lc,
		Quorum:     ledger.CreateOptions{Ensemble: 1, WriteQuorum: 1, AckQuorum: 1},
		Bookies:    bookieinfo.Local{ID: StandaloneBookieID, ReadOnly: s.bk.IsReadOnly, Stats: stats.read},
		Worker:     fw,
		Collectors: []prometheus.Collector{s.bk.Collector()},
		Logger:     log,
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Close stops everything in reverse order of opening; each step runs
// even if an earlier one failed.
func (s *Standalone) Close() error {
	var c CloseSteps
	if s.stack != nil {
		s.stack.Close(&c, s.log)
	}
	if s.lc != nil {
		c.Run(s.log, "ledger client", s.lc.Close)
	}
	if s.bk != nil {
		c.Run(s.log, "bookie", s.bk.Close)
	}
	if s.store != nil {
		c.Run(s.log, "metadata store", s.store.Close)
	}
	return c.Err()
}

// WorkerClient is a function worker's identity and trust on its own
// connections to brokers and workers: the brokerClient* settings.
func WorkerClient(sc auth.Config) (functions.ClientOptions, error) {
	var client functions.ClientOptions
	var err error
	if client.Auth, err = auth.ParseClientAuth(sc.BrokerClientAuthenticationPlugin, sc.BrokerClientAuthenticationParameters); err != nil {
		return client, fmt.Errorf("brokerClientAuthenticationPlugin: %w", err)
	}
	client.TrustCertsFile = sc.BrokerClientTrustCertsFilePath
	cert, key := sc.BrokerClientCertificateFilePath, sc.BrokerClientKeyFilePath
	if a := client.Auth; a != nil && a.Method == auth.MethodTLS {
		cert, key = a.CertFile, a.KeyFile
	}
	if client.TrustCertsFile != "" || cert != "" {
		if client.TLS, err = auth.ClientTLS(client.TrustCertsFile, cert, key, false); err != nil {
			return client, fmt.Errorf("worker client TLS: %w", err)
		}
	}
	return client, nil
}
