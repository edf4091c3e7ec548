package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/magnetar-mq/magnetar/autorecovery"
	"github.com/magnetar-mq/magnetar/bookieinfo"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/internal/cliflags"
	"github.com/magnetar-mq/magnetar/internal/stack"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
)

// metadataFlags selects the metadata store of a cluster command.
type metadataFlags struct {
	url            string
	sessionTimeout time.Duration
}

func (m *metadataFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&m.url, "metadata-url", "", "metadata store: zk://host:port[,host:port]/chroot, or embedded:/path/metadata.db (one process only)")
	c.Flags().DurationVar(&m.sessionTimeout, "zk-session-timeout", 10*time.Second, "ZooKeeper session timeout")
}

// quorumFlags are the E/Qw/Qa of new ledgers.
type quorumFlags struct {
	ensemble, writeQuorum, ackQuorum int
}

func (q *quorumFlags) register(c *cobra.Command) {
	c.Flags().IntVar(&q.ensemble, "ensemble", 3, "ensemble size E of new ledgers")
	c.Flags().IntVar(&q.writeQuorum, "write-quorum", 2, "write quorum Qw of new ledgers")
	c.Flags().IntVar(&q.ackQuorum, "ack-quorum", 2, "ack quorum Qa of new ledgers")
}

func (q *quorumFlags) createOptions() ledger.CreateOptions {
	return ledger.CreateOptions{Ensemble: q.ensemble, WriteQuorum: q.writeQuorum, AckQuorum: q.ackQuorum}
}

type brokerFlags struct {
	meta           metadataFlags
	quorum         quorumFlags
	serviceAddr    string
	httpAddr       string
	advertisedHost string
	clusterName    string
	maxMessageSize int
	svc            serviceFlags
	autorecovery   bool
	lostDelay      time.Duration
	openGrace      time.Duration
	cluster        brokerconf.ClusterConfig
	run            runFlags
	sec            cliflags.Security
	http           cliflags.HTTP
}

func newBrokerCmd() *cobra.Command {
	cmd, _ := brokerCommand()
	return cmd
}

// brokerCommand returns the command and the flags it fills.
func brokerCommand() (*cobra.Command, *brokerFlags) {
	f := &brokerFlags{}
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Run a broker on a bookie fleet, with metadata in ZooKeeper",
		Long: `Runs a broker whose managed ledgers are replicated ledgers on the bookies
registered in the metadata store (--metadata-url), each new ledger with
--ensemble/--write-quorum/--ack-quorum. The broker keeps no data of its
own. With --autorecovery (the default) it also takes part in the auditor
election and runs a re-replication worker.

Brokers on one metadata store form a cluster: each namespace is split into
bundles (hash ranges of topic names), each bundle is served by exactly one
broker at a time, found through lookups (any broker answers, redirecting to
the owner), placed on the least-loaded broker by the elected leader and moved
off overloaded ones. A broker that loses its metadata session stops serving
its bundles before another broker can take them.

When ready it prints one line to stdout:
  magnetar broker ready service=pulsar://HOST:PORT http=http://HOST:PORT`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyConfig(cmd, "broker"); err != nil {
				return err
			}
			f.svc.runtime = runtimeConfig("broker", cmd.Flags())
			f.svc.internal = internalData(f.meta.url, f.svc.configURL)
			return runServer(cmd.Context(), "broker", f.run, func(ctx context.Context, log *slog.Logger) (*stack.Stack, func() error, error) {
				b, err := openBroker(ctx, *f, log)
				if err != nil {
					return nil, nil, err
				}
				log.Info("quorums", "E", f.quorum.ensemble, "Qw", f.quorum.writeQuorum, "Qa", f.quorum.ackQuorum)
				return b.stack, func() error { return b.close(log) }, nil
			})
		},
	}
	f.meta.register(cmd)
	f.quorum.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.serviceAddr, "listen", ":6650", "Pulsar binary protocol listen address")
	fl.StringVar(&f.httpAddr, "http", ":8080", "admin/lookup HTTP listen address")
	fl.StringVar(&f.advertisedHost, "advertised-host", "localhost", "host name given to clients in lookups")
	fl.StringVar(&f.clusterName, "cluster-name", "magnetar", "cluster name reported by the admin API")
	fl.IntVar(&f.maxMessageSize, "max-message-size", 5<<20, "largest message (frame) accepted, in bytes")
	fl.BoolVar(&f.autorecovery, "autorecovery", true, "run an auditor candidate and a re-replication worker in this process")
	fl.DurationVar(&f.lostDelay, "lost-bookie-recovery-delay", 0, "auditor: wait this long after a bookie disappears before marking its ledgers")
	registerLoadBalancerFlags(fl, &f.cluster)
	fl.DurationVar(&f.openGrace, "open-ledger-grace", 30*time.Second, "worker: wait this long before fencing an open ledger with a lost bookie in its last ensemble")
	f.svc.register(fl, "")
	addRunFlags(fl, &f.run)
	f.sec.Register(fl)
	f.http.Register(fl)
	addConfigFlag(cmd)
	return cmd, f
}

// registerLoadBalancerFlags adds the flags of the cluster's load reports,
// load shedding, bundle splits and failure domains.
func registerLoadBalancerFlags(fl *pflag.FlagSet, c *brokerconf.ClusterConfig) {
	fl.DurationVar(&c.ReportInterval, "load-report-interval", 5*time.Second, "how often the broker publishes its load report")
	fl.DurationVar(&c.ShedInterval, "load-shedding-interval", time.Minute, "how often the leader sheds load from overloaded brokers (negative: never)")
	fl.Float64Var(&c.ShedThreshold, "load-shedding-threshold", 0.5, "a broker whose message rate exceeds the cluster mean by this fraction of it is overloaded")
	fl.DurationVar(&c.ShedGrace, "load-shedding-grace", 30*time.Second, "a bundle shed is not shed again for this long")
	fl.IntVar(&c.SplitMaxTopics, "bundle-split-max-topics", 1000, "the leader splits a bundle with more topics")
	fl.IntVar(&c.SplitMaxSessions, "bundle-split-max-sessions", 1000, "the leader splits a bundle with more producers+consumers")
	fl.Float64Var(&c.SplitMaxMsgRate, "bundle-split-max-msg-rate", 30000, "the leader splits a bundle with a higher message rate (in+out, msg/s)")
	fl.Float64Var(&c.SplitMaxBytesRate, "bundle-split-max-bytes-rate", 100<<20, "the leader splits a bundle with a higher throughput (in+out, bytes/s)")
	fl.BoolVar(&c.DisableAutoSplit, "disable-bundle-auto-split", false, "never split bundles automatically")
	fl.BoolVar(&c.FailureDomainsEnabled, "failure-domains-enabled", false, "spread the namespaces of an anti-affinity group over the cluster's failure domains")
}

// clusterNode is the metadata store, bookie resolver and ledger client a
// cluster process (broker, autorecovery, shell tools) shares.
type clusterNode struct {
	store    metadata.Store
	resolver *ledger.NetResolver
	lc       *ledger.Client
}

func openClusterNode(mf metadataFlags, log *slog.Logger, opts ...func(*ledger.NetOptions)) (*clusterNode, error) {
	store, err := stack.OpenMetadataURL(mf.url, mf.sessionTimeout, log)
	if err != nil {
		return nil, err
	}
	n := &clusterNode{store: store}
	no := ledger.NetOptions{Logger: log.With("component", "bookie-client")}
	for _, o := range opts {
		o(&no)
	}
	n.resolver = ledger.NewNetResolver(no)
	n.lc, err = ledger.NewClient(store, standaloneHint{n.resolver}, ledger.Options{Logger: log.With("component", "ledger")})
	if err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}

func (n *clusterNode) close() error {
	var errs []error
	if n.lc != nil {
		errs = append(errs, n.lc.Close())
	}
	if n.resolver != nil {
		errs = append(errs, n.resolver.Close())
	}
	errs = append(errs, n.store.Close())
	return errors.Join(errs...)
}

// brokerConfig is the broker configuration the flags ask for.
func (f *brokerFlags) brokerConfig(log *slog.Logger) (brokerconf.Config, error) {
	bcfg := brokerconf.Config{
		ServiceAddr:    f.serviceAddr,
		HTTPAddr:       f.httpAddr,
		AdvertisedHost: f.advertisedHost,
		ClusterName:    f.clusterName,
		MaxMessageSize: f.maxMessageSize,
		Cluster:        &f.cluster,
	}
	f.svc.apply(&bcfg)
	bcfg.ClusterName = f.clusterName
	var err error
	if bcfg.HTTPLimits, err = f.http.Limits(); err != nil {
		return bcfg, err
	}
	err = f.sec.Apply(&bcfg, log)
	return bcfg, err
}

// brokerProc is a running `magnetar broker`.
type brokerProc struct {
	node  *clusterNode
	rec   *autorecovery.Service
	stack *stack.Stack
}

func openBroker(ctx context.Context, f brokerFlags, log *slog.Logger) (_ *brokerProc, err error) {
	co := f.quorum.createOptions()
	if !(co.Ensemble >= co.WriteQuorum && co.WriteQuorum >= co.AckQuorum && co.AckQuorum >= 1) {
		return nil, fmt.Errorf("want --ensemble >= --write-quorum >= --ack-quorum >= 1, got %d/%d/%d", co.Ensemble, co.WriteQuorum, co.AckQuorum)
	}
	b := &brokerProc{}
	defer func() {
		if err != nil {
			b.close(log)
		}
	}()
	bc, err := f.sec.BookieClient(log)
	if err != nil {
		return nil, err
	}
	if b.node, err = openClusterNode(f.meta, log, bc); err != nil {
		return nil, err
	}
	if f.autorecovery {
		b.rec, err = autorecovery.Start(b.node.store, b.node.lc, b.node.resolver, autorecovery.Options{
			LostBookieDelay: f.lostDelay,
			OpenLedgerGrace: f.openGrace,
			Logger:          log.With("component", "autorecovery"),
		})
		if err != nil {
			return nil, fmt.Errorf("autorecovery: %w", err)
		}
	}
	bcfg, err := f.brokerConfig(log)
	if err != nil {
		return b, err
	}
	svc, err := f.svc.service(bcfg)
	if err != nil {
		return b, err
	}
	b.stack, err = stack.OpenStack(ctx, svc, stack.Deps{Metadata: b.node.store, Ledgers: b.node.lc, Quorum: co, Bookies: registeredBookies{b.node.store}, Logger: log})
	return b, err
}

// close stops everything in reverse order of opening.
func (b *brokerProc) close(log *slog.Logger) error {
	var c stack.CloseSteps
	if b.stack != nil {
		b.stack.Close(&c, log)
	}
	if b.rec != nil {
		c.Run(log, "autorecovery", b.rec.Close)
	}
	if b.node != nil {
		c.Run(log, "ledger client", b.node.close)
	}
	return c.Err()
}

// registeredBookies reports the bookies registered in the metadata store
// to the broker's admin API.
type registeredBookies struct{ store metadata.Store }

func (r registeredBookies) Bookies() []bookieinfo.Status {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := autorecovery.ListBookies(ctx, r.store)
	if err != nil {
		return nil
	}
	out := make([]bookieinfo.Status, 0, len(s.Writable)+len(s.ReadOnly))
	for _, id := range s.Writable {
		out = append(out, bookieinfo.Status{BookieID: id})
	}
	for _, id := range s.ReadOnly {
		out = append(out, bookieinfo.Status{BookieID: id, ReadOnly: true})
	}
	return out
}
