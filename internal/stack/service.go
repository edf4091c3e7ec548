package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-mq/magnetar/admin"
	"github.com/magnetar-mq/magnetar/bookieinfo"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/brokerauthz"
	"github.com/magnetar-mq/magnetar/brokercluster"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/brokermetrics"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/compact"
	"github.com/magnetar-mq/magnetar/console"
	"github.com/magnetar-mq/magnetar/dedupsnap"
	"github.com/magnetar-mq/magnetar/dynconfig"
	"github.com/magnetar-mq/magnetar/enforcement"
	"github.com/magnetar-mq/magnetar/entrymeta"
	"github.com/magnetar-mq/magnetar/functions"
	"github.com/magnetar-mq/magnetar/georep"
	"github.com/magnetar-mq/magnetar/isolation"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/metadata/zookeeper"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/offload"
	"github.com/magnetar-mq/magnetar/packages"
	"github.com/magnetar-mq/magnetar/schemareg"
	"github.com/magnetar-mq/magnetar/tiered"
	"github.com/magnetar-mq/magnetar/topichistory"
	txnserver "github.com/magnetar-mq/magnetar/txn/server"
)

// Service is the configuration of a stack: the broker's settings and
// what runs beside the core.
type Service struct {
	// Broker is the broker's configuration. Broker.Offload (when its
	// driver is set) also builds the tiered-storage offloader.
	Broker brokerconf.Config
	// ManagedLedger configures every managed ledger (rollover, trimming).
	ManagedLedger mledger.Config
	// ConfigURL names a configuration store shared by the clusters of a
	// geo-replicated instance ("": the cluster's own store).
	ConfigURL string
	// Features are the features behind the core's extension points.
	Features Features
	// Console serves the web console under /console.
	Console bool
	// StatusFile is Pulsar's statusFilePath: /status.html answers OK
	// while this file exists ("": never).
	StatusFile string
	// ClientLibraryVersionCheck is Pulsar's
	// clientLibraryVersionCheckEnabled (admin.Deps), dynamic.
	ClientLibraryVersionCheck bool
	// Runtime is the broker's configuration by Pulsar key, secrets left
	// out, and Internal its InternalConfigurationData: what the admin
	// API's configuration routes answer (package dynconfig).
	Runtime  map[string]string
	Internal dynconfig.InternalData
	// Packages turns on package management (/admin/v3/packages, contents
	// in ledgers; package packages); nil: its routes answer 503.
	Packages *Packages
}

// Packages configures package management.
type Packages struct {
	// Replicas is Pulsar's packagesReplicas: E, Qw and Qa of package
	// ledgers.
	Replicas int
}

// Features are the broker's features (packages behind the core's
// extension points) a stack runs.
type Features struct {
	// EntryMetadata are the broker entry metadata interceptors, by
	// Pulsar class name (package entrymeta).
	EntryMetadata []string
	// Schemas configures the schema registry (package schemareg), always
	// on.
	Schemas schemareg.Config
	// Compaction configures topic compaction (package compact), always
	// on.
	Compaction compact.Config
	// DedupMaxProducers is Pulsar's
	// brokerDeduplicationMaxNumberOfProducers (dedupsnap.Options).
	DedupMaxProducers int
	// Transactions turns on the transaction coordinators (nil: off).
	Transactions *txnserver.Config
}

// Deps are what a stack runs over.
type Deps struct {
	// Metadata is the cluster's metadata store.
	Metadata metadata.Store
	// Ledgers is the ledger client; Quorum the E/Qw/Qa of new ledgers
	// (a persistence policy overrides it per managed ledger).
	Ledgers *ledger.Client
	Quorum  ledger.CreateOptions
	// Bookies reports the bookies to the admin API, the console and
	// /metrics.
	Bookies bookieinfo.Source
	// Worker is an in-process function worker (nil: none); its routes
	// are the broker's, and it starts after the broker.
	Worker *functions.Worker
	// Collectors are further metrics on the broker's /metrics.
	Collectors []prometheus.Collector
	Logger     *slog.Logger
}

// Stack is a started broker with its managed ledgers and features.
type Stack struct {
	factory *mledger.Factory
	broker  *broker.Broker
	config  metadata.Store    // a separate configuration store, or nil
	dyn     *dynconfig.Config // the broker's dynamic configuration
	unwatch []func()          // stop applying dynamic updates (dynamic.go)
	fw      *functions.Worker // nil without an in-process function worker
}

// Broker is the stack's broker (its ServiceAddr, HTTPAddr and TLS
// addresses are the bound ones).
func (s *Stack) Broker() *broker.Broker { return s.broker }

// OpenStack opens the managed ledgers and the broker over d.Metadata,
// registers the features, the admin API, the console and the function
// worker's routes, and starts them.
func OpenStack(ctx context.Context, svc Service, d Deps) (_ *Stack, err error) {
	s := &Stack{}
	log := d.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	collectors := d.Collectors
	if d.Worker != nil {
		collectors = append(collectors[:len(collectors):len(collectors)], d.Worker.Collector())
	}
	defer func() {
		if err != nil {
			var c CloseSteps
			s.Close(&c, log)
		}
	}()
	if svc.ConfigURL != "" {
		if s.config, err = OpenMetadataURL(svc.ConfigURL, 10*time.Second, log.With("component", "config-store")); err != nil {
			return nil, fmt.Errorf("configuration store: %w", err)
		}
	}
	cfg := svc.Broker
	offMetrics := offload.NewMetrics()
	var off *offload.Offloader
	var mlOff mledger.Offloader
	if cfg.Offload != nil && cfg.Offload.Properties["managedLedgerOffloadDriver"] != "" {
		drv := cfg.Offload.Properties["managedLedgerOffloadDriver"]
		oc, err := offload.FromProperties(cfg.Offload.Properties)
		if err == nil {
			off, err = offload.New(oc, offMetrics)
		}
		if err != nil {
			return nil, fmt.Errorf("tiered storage: %w", err)
		}
		mlOff = mledger.NewOffloader(off)
		log.Info("tiered storage", "driver", drv, "bucket", oc.Bucket, "endpoint", oc.ServiceEndpoint, "directory", oc.Directory)
	}
	s.factory, err = mledger.NewFactory(mledger.Options{
		Ledgers:   LedgerStore{Client: d.Ledgers, Options: d.Quorum},
		Metadata:  d.Metadata,
		Logger:    log.With("component", "mledger"),
		Offloader: mlOff,
	})
	if err != nil {
		return nil, fmt.Errorf("managed ledgers: %w", err)
	}
	cfg.Logger = log.With("component", "broker")
	s.broker, err = broker.New(cfg, broker.Deps{
		Metadata:     d.Metadata,
		ConfigStore:  s.config,
		OpenLedger:   storage.Opener(s.factory, svc.ManagedLedger),
		DeleteLedger: s.factory.Delete,
		JoinCluster:  brokercluster.Join,
	})
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	tier, err := tiered.Enable(s.broker, tiered.Options{Offloader: off, Metrics: offMetrics})
	if err != nil {
		return nil, fmt.Errorf("tiered storage: %w", err)
	}
	feats, err := svc.Features.enable(s.broker)
	if err != nil {
		return nil, err
	}
	collectors = append(collectors[:len(collectors):len(collectors)], offMetrics.Collectors()...)
	if _, err := brokermetrics.Enable(s.broker, brokermetrics.Options{Collectors: collectors, Bookies: d.Bookies}); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	deps := admin.BrokerDeps(s.broker)
	deps.Bookies = d.Bookies
	deps.Log = log.With("component", "admin")
	deps.StatusFile = svc.StatusFile
	deps.ClientLibraryVersionCheck = svc.ClientLibraryVersionCheck
	deps.Isolation = isolation.NewStore(d.Metadata)
	deps.Schemas = feats.schemas
	deps.Compaction = feats.compaction
	deps.Offloads = tier
	deps.Quotas = cluster.NewQuotas(d.Metadata)
	// The dynamic configuration applies before the first topic loads.
	s.dyn = dynconfig.New(d.Metadata, s.broker.Policies(), dynconfig.Options{Static: svc.Runtime, Internal: svc.Internal,
		InactiveFollowsFrequency: svc.Broker.DeleteInactiveTopicsMaxInactiveDuration == 0,
		Logger:                   log.With("component", "dynamic-config")})
	if err := s.dyn.Start(ctx); err != nil {
		return nil, err
	}
	s.unwatch = append(s.unwatch, watchDynamic(s.dyn, s.broker, feats.enforcer))
	deps.Config = s.dyn
	if feats.txn != nil {
		deps.Coordinators, deps.Participants = feats.txn, feats.txn
	}
	admin.Register(s.broker.Router(), deps)
	if svc.Console {
		h, err := topichistory.Enable(s.broker)
		if err != nil {
			return nil, err
		}
		if _, err := console.Register(s.broker.Router(), console.BrokerSource(s.broker, h, d.Bookies), log.With("component", "console")); err != nil {
			return nil, err
		}
	}
	var pkgs *packages.Store
	if svc.Packages != nil {
		pkgs, err = packages.New(packages.Options{Metadata: d.Metadata, Ledgers: d.Ledgers, Replicas: svc.Packages.Replicas,
			Security: s.broker.Security(), Logger: log.With("component", "packages")})
		if err != nil {
			return nil, err
		}
	}
	packages.Register(s.broker.Router(), pkgs, log.With("component", "packages"))
	if d.Worker != nil {
		if pkgs != nil {
			d.Worker.UsePackages(pkgs)
		}
		d.Worker.Register(s.broker.Router())
	}
	if err := s.broker.Start(ctx); err != nil {
		s.broker = nil
		return nil, fmt.Errorf("broker: %w", err)
	}
	if cs := brokercluster.Service(s.broker); cs != nil {
		s.unwatch = append(s.unwatch, watchLoadBalancer(s.dyn, cs))
	}
	if d.Worker != nil {
		s.fw = d.Worker // closed from here on, also when Start fails
		if err := d.Worker.Start(ctx, "pulsar://"+s.broker.ServiceAddr(), "http://"+s.broker.HTTPAddr()); err != nil {
			return nil, fmt.Errorf("function worker: %w", err)
		}
	}
	return s, nil
}

// enabled are the features a stack runs that the admin API serves (nil:
// off).
type enabled struct {
	enforcer   *enforcement.Enforcer
	schemas    *schemareg.Registry
	compaction *compact.Compactor
	txn        *txnserver.Server
}

// enable registers the features f turns on, before Start.
func (f Features) enable(b *broker.Broker) (enabled, error) {
	var e enabled
	var err error
	if _, err = brokerauthz.Enable(b); err != nil {
		return e, err
	}
	if e.enforcer, err = enforcement.Enable(b); err != nil {
		return e, err
	}
	if _, err := dedupsnap.EnableWith(b, dedupsnap.Options{MaxProducers: f.DedupMaxProducers}); err != nil {
		return e, err
	}
	if _, err := entrymeta.Enable(b, f.EntryMetadata); err != nil {
		return e, err
	}
	reg, err := schemareg.Enable(b, f.Schemas)
	if err != nil {
		return e, err
	}
	e.schemas = reg
	if e.compaction, err = compact.Enable(b, f.Compaction); err != nil {
		return e, err
	}
	if f.Transactions != nil {
		if e.txn, err = txnserver.Enable(b, *f.Transactions); err != nil {
			return e, err
		}
	}
	// After transactions: replicators read under their read bound.
	if _, err := georep.Enable(b); err != nil {
		return e, err
	}
	return e, nil
}

// Close stops the function worker, the broker (answering in-flight
// sends), then the managed ledgers (flushing cursors, closing ledgers)
// and the configuration store, recording each step in c.
func (s *Stack) Close(c *CloseSteps, log *slog.Logger) {
	if s.fw != nil {
		c.Run(log, "function worker", s.fw.Close)
	}
	for _, stop := range s.unwatch {
		stop()
	}
	if s.dyn != nil {
		s.dyn.Close()
	}
	if s.broker != nil {
		c.Run(log, "broker", s.broker.Close)
	}
	if s.factory != nil {
		c.Run(log, "managed ledgers", s.factory.Close)
	}
	if s.config != nil {
		c.Run(log, "configuration store", s.config.Close)
	}
}

// LedgerStore adapts the ledger client to the managed ledger's
// LedgerStore: every ledger a managed ledger creates gets Options' E/Qw/Qa,
// or the managed ledger's own (a persistence policy, mledger.QuorumFrom).
type LedgerStore struct {
	Client  *ledger.Client
	Options ledger.CreateOptions
}

var _ mledger.LedgerStore = LedgerStore{}

// Create creates a ledger.
func (s LedgerStore) Create(ctx context.Context) (mledger.WriteLedger, error) {
	opts := s.Options
	if q, ok := mledger.QuorumFrom(ctx); ok {
		opts.Ensemble, opts.WriteQuorum, opts.AckQuorum = q.Ensemble, q.WriteQuorum, q.AckQuorum
	}
	if p, ok := mledger.PlacementFrom(ctx); ok {
		opts.Affinity = &ledger.Affinity{Primary: ledger.ParseGroups(p.Primary), Secondary: ledger.ParseGroups(p.Secondary)}
	}
	h, err := s.Client.Create(ctx, opts)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// Open opens ledger id for reading.
func (s LedgerStore) Open(ctx context.Context, id int64) (mledger.ReadLedger, error) {
	r, err := s.Client.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Delete deletes ledger id.
func (s LedgerStore) Delete(ctx context.Context, id int64) error { return s.Client.Delete(ctx, id) }

// CloseSteps runs shutdown steps in order; every step runs even if an
// earlier one failed, and the errors are joined.
type CloseSteps struct{ errs []error }

// Run runs one step, logging and keeping its error.
func (c *CloseSteps) Run(log *slog.Logger, name string, fn func() error) {
	if err := fn(); err != nil {
		log.Error("close", "component", name, "err", err)
		c.errs = append(c.errs, fmt.Errorf("%s: %w", name, err))
	}
}

// Err is the joined error of the steps (nil when all succeeded).
func (c *CloseSteps) Err() error { return errors.Join(c.errs...) }

// OpenMetadataURL opens the store named by url: "zk://..." (ZooKeeper) or
// "embedded:PATH" / "file://PATH" (a bbolt file, usable by one process).
func OpenMetadataURL(url string, sessionTimeout time.Duration, log *slog.Logger) (metadata.Store, error) {
	switch {
	case url == "":
		return nil, errors.New("--metadata-url is required (zk://host:port/chroot or embedded:/path/metadata.db)")
	case strings.HasPrefix(url, "zk://"):
		s, err := zookeeper.Open(url, zookeeper.Options{SessionTimeout: sessionTimeout, Logger: log.With("component", "zookeeper")})
		if err != nil {
			return nil, fmt.Errorf("metadata store %s: %w", url, err)
		}
		return s, nil
	}
	p, ok := strings.CutPrefix(url, "embedded:")
	if !ok {
		p, ok = strings.CutPrefix(url, "file://")
	}
	if !ok || p == "" {
		return nil, fmt.Errorf("--metadata-url %q: want zk://host:port/chroot or embedded:/path/metadata.db", url)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	s, err := embedded.Open(p, embedded.Options{})
	if err != nil {
		return nil, fmt.Errorf("metadata store %s: %w", url, err)
	}
	return s, nil
}
