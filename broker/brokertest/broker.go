package brokertest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-mq/magnetar/bookieinfo"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/brokeradmin"
	"github.com/magnetar-mq/magnetar/brokerauthz"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/brokermetrics"
	"github.com/magnetar-mq/magnetar/enforcement"
	"github.com/magnetar-mq/magnetar/internal/testenv"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
	"github.com/magnetar-mq/magnetar/schemareg"
	"github.com/magnetar-mq/magnetar/tiered"
)

// Options configures the brokers a test starts.
type Options struct {
	// Config adjusts the broker's configuration after the kit's
	// defaults (127.0.0.1:0 listeners, 1 MiB messages).
	Config func(*brokerconf.Config)
	// Ledger configures the managed ledgers.
	Ledger mledger.Config
	// Features registers features on every broker the kit starts,
	// before Start (Restart wires them again). Policy enforcement
	// (package enforcement) and the schema registry are always on, as in
	// the binary.
	Features func(*broker.Broker) error
	// Schema configures the schema registry.
	Schema schemareg.Config
	// Ledgers stores the ledgers (default memstore.New()); a test may
	// inject add failures into it.
	Ledgers *memstore.Store
	// Meta, if set, is the metadata store (the test owns it; two brokers
	// may share it, as after a crash); default an embedded store in a
	// temporary directory, closed with the broker.
	Meta metadata.Store
	// ConfigStore, if set, is the configuration store (clusters,
	// tenants, namespace policies) the brokers of several clusters share
	// (geo-replication); default the broker's metadata store.
	ConfigStore metadata.Store
	// CloseErrorsOK: errors closing the broker at the end of the test
	// are expected (its storage was taken over) and not reported.
	CloseErrorsOK bool
	// MetaDir is where the kit's embedded metadata store lives (default
	// a temporary directory); a later broker given the same directory
	// finds the same metadata.
	MetaDir string
	// Bookies is what /metrics reports about the bookies; a test that
	// declares the admin API hands it to admin.Deps too.
	Bookies bookieinfo.Source
	// NoSchemas runs the broker without its schema registry.
	NoSchemas bool
	// Wire, if set, runs after the features are registered and before
	// the broker starts, with the kit's broker (its stores set): more
	// features, the admin API's routes. The func it returns (nil: none)
	// runs when the broker is closed, before the broker closes.
	Wire func(b *Broker) (stop func(), err error)
}

// Broker is a broker with its stores (started, unless made by New and
// not yet Run).
type Broker struct {
	*broker.Broker
	// URL is the broker's pulsar:// service URL.
	URL string
	// Meta is the broker's metadata store.
	Meta    metadata.Store
	Factory *mledger.Factory
	Ledgers *memstore.Store
	// Schemas is the broker's schema registry.
	Schemas *schemareg.Registry
	// Enforcer is the broker's policy enforcement.
	Enforcer *enforcement.Enforcer
	// Tiered is the broker's tiered storage (offload policies, the
	// admin API's Offloads).
	Tiered *tiered.Tiering

	opts    Options
	metaDir string
	unwire  func()
	closed  atomic.Bool
}

// Start starts a broker; it is closed when the test ends.
func Start(t testing.TB, o Options) *Broker {
	t.Helper()
	b, err := New(t, o)
	if err == nil {
		err = b.Run()
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// New builds a broker with its stores, features and wiring, not started
// (Run starts it); it is closed when the test ends, also after an error.
func New(t testing.TB, o Options) (*Broker, error) {
	t.Helper()
	if o.Ledgers == nil {
		o.Ledgers = memstore.New()
	}
	if o.MetaDir == "" {
		o.MetaDir = t.TempDir()
	}
	tb := &Broker{Ledgers: o.Ledgers, opts: o, metaDir: o.MetaDir}
	err := tb.build()
	t.Cleanup(func() { tb.close(t) })
	if err != nil {
		return nil, err
	}
	return tb, nil
}

func (tb *Broker) build() error {
	o := tb.opts
	tb.Meta = o.Meta
	if tb.Meta == nil {
		em, err := embedded.Open(filepath.Join(tb.metaDir, "meta"), embedded.Options{})
		if err != nil {
			return err
		}
		tb.Meta = em
	}
	f, err := mledger.NewFactory(mledger.Options{Ledgers: o.Ledgers, Metadata: tb.Meta})
	if err != nil {
		return err
	}
	tb.Factory = f
	level := slog.LevelWarn
	if os.Getenv("BROKER_DEBUG") != "" {
		level = slog.LevelDebug
	}
	cfg := brokerconf.Config{
		ServiceAddr:    "127.0.0.1:0",
		HTTPAddr:       "127.0.0.1:0",
		AdvertisedHost: "127.0.0.1",
		MaxMessageSize: 1 << 20,
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	}
	if o.Config != nil {
		o.Config(&cfg)
	}
	b, err := broker.New(cfg, broker.Deps{Metadata: tb.Meta, ConfigStore: o.ConfigStore, OpenLedger: storage.Opener(f, o.Ledger)})
	if err != nil {
		return err
	}
	tb.Broker = b
	_, err = brokerauthz.Enable(b)
	if err == nil {
		tb.Enforcer, err = enforcement.Enable(b)
	}
	if err == nil {
		tb.Tiered, err = tiered.Enable(b, tiered.Options{})
	}
	if err == nil {
		_, err = brokermetrics.Enable(b, brokermetrics.Options{Bookies: o.Bookies})
	}
	if err == nil && !o.NoSchemas {
		tb.Schemas, err = schemareg.Enable(b, o.Schema)
	}
	if err == nil && o.Features != nil {
		err = o.Features(b)
	}
	if err == nil && o.Wire != nil {
		tb.unwire, err = o.Wire(tb)
	}
	return err
}

// MetaDir is the directory of the kit's embedded metadata store.
func (b *Broker) MetaDir() string { return b.metaDir }

// Run starts a broker New built.
func (b *Broker) Run() error {
	if err := b.Broker.Start(context.Background()); err != nil {
		return err
	}
	b.URL = "pulsar://" + b.ServiceAddr()
	return nil
}

// Stop closes the broker and its stores (the metadata store only if the
// kit opened it) before the test ends; closing again does nothing.
func (b *Broker) Stop(t testing.TB) { b.close(t) }

func (b *Broker) close(t testing.TB) {
	if !b.closed.CompareAndSwap(false, true) {
		return
	}
	report := func(what string, err error) {
		if err != nil && !b.opts.CloseErrorsOK {
			t.Errorf("%s close: %v", what, err)
		}
	}
	if b.unwire != nil {
		b.unwire()
	}
	if b.Broker != nil {
		report("broker", b.Broker.Close())
	}
	if b.Factory != nil {
		report("managed ledgers", b.Factory.Close())
	}
	if b.opts.Meta == nil && b.Meta != nil {
		report("metadata", b.Meta.Close())
	}
}

// Restart closes b and starts a broker over the same metadata and
// ledgers, with the same options, on the same service address (as a
// restarted process would be; clients given b.URL reconnect to it). It
// retries for 10 s while the address is still held.
func (b *Broker) Restart(t testing.TB) *Broker {
	t.Helper()
	addr := b.ServiceAddr()
	b.close(t)
	o := b.opts
	mut := o.Config
	o.Config = func(c *brokerconf.Config) {
		if mut != nil {
			mut(c)
		}
		c.ServiceAddr = addr
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		nb, err := New(t, o)
		if err == nil {
			if err = nb.Run(); err == nil {
				return nb
			}
			nb.close(t)
		}
		if time.Now().After(deadline) {
			t.Fatalf("restart on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Client returns a pulsar-client-go client of b, closed when the test
// ends.
func (b *Broker) Client(t testing.TB) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{
		URL:               b.URL,
		OperationTimeout:  5 * time.Second,
		ConnectionTimeout: 5 * time.Second,
		Logger:            plog.DefaultNopLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Ledger returns topic's open managed ledger (loading the topic first).
func (b *Broker) Ledger(t testing.TB, topic string) *mledger.ManagedLedger {
	t.Helper()
	if _, err := b.Topic(Ctx(t), topic); err != nil {
		t.Fatal(err)
	}
	ml, err := b.Factory.Open(Ctx(t), topic, b.opts.Ledger)
	if err != nil {
		t.Fatal(err)
	}
	return ml
}

var topicSeq atomic.Int64

// Topic returns a fresh persistent topic name in public/default.
func Topic(prefix string) string {
	return fmt.Sprintf("persistent://public/default/%s-%d-%d", prefix, time.Now().UnixNano()%1000000, topicSeq.Add(1))
}

// Ctx returns a context that ends after 10 s or with the test.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// WaitFor polls cond until it holds (failing the test after 10 s).
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, 0, what, cond)
}

// Admin returns the broker's administration roles (package brokeradmin).
func (b *Broker) Admin() brokeradmin.Roles { return brokeradmin.For(b.Broker) }
