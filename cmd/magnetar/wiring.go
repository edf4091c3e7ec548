package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-mq/magnetar/admin"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/console"
	"github.com/magnetar-mq/magnetar/functions"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/offload"
)

// ledgerStore adapts the ledger client to the managed ledger's LedgerStore:
// every ledger a managed ledger creates gets the configured E/Qw/Qa.
type ledgerStore struct {
	c    *ledger.Client
	opts ledger.CreateOptions
}

var _ mledger.LedgerStore = ledgerStore{}

func (s ledgerStore) Create(ctx context.Context) (mledger.WriteLedger, error) {
	h, err := s.c.Create(ctx, s.opts)
	if err != nil {
		return nil, err
	}
	return h, nil
}

func (s ledgerStore) Open(ctx context.Context, id int64) (mledger.ReadLedger, error) {
	r, err := s.c.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (s ledgerStore) Delete(ctx context.Context, id int64) error { return s.c.Delete(ctx, id) }

// newLogger returns the process logger: structured text (or JSON) on stderr
// at the given level.
func newLogger(level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch strings.ToLower(format) {
	case "text", "":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// serviceStack is what `standalone` and `broker` share above the ledger
// client: managed ledgers with the given E/Qw/Qa, and the broker serving
// them.
type serviceStack struct {
	factory *mledger.Factory
	broker  *broker.Broker
	config  metadata.Store    // a separate configuration store, or nil
	fw      *functions.Worker // nil without an in-process function worker
}

// openServiceStack opens the managed ledgers and the broker over store;
// configURL names a configuration store shared with other clusters ("":
// store itself).
func openServiceStack(ctx context.Context, store metadata.Store, configURL string, lc *ledger.Client, co ledger.CreateOptions,
	cfg broker.Config, sf *storageFlags, withConsole bool, bookies broker.BookieInfo, fw *functions.Worker, log *slog.Logger, collectors ...prometheus.Collector) (_ *serviceStack, err error) {
	s := &serviceStack{}
	if fw != nil {
		collectors = append(collectors, fw.Collector())
	}
	defer func() {
		if err != nil {
			var c closeSteps
			s.close(&c, log)
		}
	}()
	if configURL != "" {
		if s.config, err = openMetadataURL(configURL, 10*time.Second, log.With("component", "config-store")); err != nil {
			return nil, fmt.Errorf("configuration store: %w", err)
		}
	}
	if cfg.Offload, err = sf.offloadDefaults(); err != nil {
		return nil, fmt.Errorf("tiered storage: %w", err)
	}
	offMetrics := offload.NewMetrics()
	var off *offload.Offloader
	var mlOff mledger.Offloader
	if drv := cfg.Offload.Properties["managedLedgerOffloadDriver"]; drv != "" {
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
		Ledgers:   ledgerStore{c: lc, opts: co},
		Metadata:  store,
		Logger:    log.With("component", "mledger"),
		Offloader: mlOff,
	})
	if err != nil {
		return nil, fmt.Errorf("managed ledgers: %w", err)
	}
	cfg.Logger = log.With("component", "broker")
	s.broker, err = broker.New(cfg, broker.Deps{
		Metadata:       store,
		ConfigStore:    s.config,
		OpenLedger:     broker.LedgerOpener(s.factory, sf.mlConfig()),
		DeleteLedger:   s.factory.Delete,
		Bookies:        bookies,
		Collectors:     collectors,
		Offloader:      off,
		OffloadMetrics: offMetrics,
	})
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	admin.Register(s.broker.Router(), s.broker)
	if withConsole {
		if _, err := console.Register(s.broker.Router(), s.broker, log.With("component", "console")); err != nil {
			return nil, err
		}
	}
	if fw != nil {
		fw.Register(s.broker.Router())
	}
	if err := s.broker.Start(ctx); err != nil {
		s.broker = nil
		return nil, fmt.Errorf("broker: %w", err)
	}
	if fw != nil {
		if err := fw.Start(ctx, "pulsar://"+s.broker.ServiceAddr(), "http://"+s.broker.HTTPAddr()); err != nil {
			return nil, fmt.Errorf("function worker: %w", err)
		}
		s.fw = fw
	}
	return s, nil
}

// close stops the broker (answering in-flight sends), then the managed
// ledgers (flushing cursors, closing ledgers).
func (s *serviceStack) close(c *closeSteps, log *slog.Logger) {
	if s.fw != nil {
		c.run(log, "function worker", s.fw.Close)
	}
	if s.broker != nil {
		c.run(log, "broker", s.broker.Close)
	}
	if s.factory != nil {
		c.run(log, "managed ledgers", s.factory.Close)
	}
	if s.config != nil {
		c.run(log, "configuration store", s.config.Close)
	}
}

// closeSteps runs shutdown steps in order; every step runs even if an
// earlier one failed, and the errors are joined.
type closeSteps struct{ errs []error }

func (c *closeSteps) run(log *slog.Logger, name string, fn func() error) {
	if err := fn(); err != nil {
		log.Error("close", "component", name, "err", err)
		c.errs = append(c.errs, fmt.Errorf("%s: %w", name, err))
	}
}

func (c *closeSteps) err() error { return errors.Join(c.errs...) }

// runFlags are the process-level flags every server subcommand shares.
type runFlags struct {
	logLevel, logFormat, cpuProfile, trace string
}

// signalContext is ctx (Background if nil) cancelled by SIGINT or SIGTERM:
// how every long-running subcommand stops.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	return signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
}

// runServer is the life of a server process: logger, optional CPU
// profile, open, one ready line on stdout (tests and scripts wait for it),
// serve until SIGINT/SIGTERM, close.
func runServer(ctx context.Context, role string, rf runFlags, open func(context.Context, *slog.Logger) (*serviceStack, func() error, error)) error {
	log, err := newLogger(rf.logLevel, rf.logFormat)
	if err != nil {
		return err
	}
	ctx, stop := signalContext(ctx)
	defer stop()
	if rf.cpuProfile != "" {
		pf, err := os.Create(rf.cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			pf.Close()
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			pf.Close()
		}()
	}
	stopTrace, err := startTrace(rf.trace)
	if err != nil {
		return err
	}
	defer stopTrace()
	t0 := time.Now()
	stack, closeAll, err := open(ctx, log)
	if err != nil {
		return err
	}
	svc, web := stack.broker.ServiceAddr(), stack.broker.HTTPAddr()
	log.Info("magnetar "+role+" ready", "service", svc, "http", web, "startup", time.Since(t0).Round(time.Microsecond))
	extra := ""
	if a := stack.broker.TLSServiceAddr(); a != "" {
		extra += " service-tls=pulsar+ssl://" + a
	}
	if a := stack.broker.TLSHTTPAddr(); a != "" {
		extra += " https=https://" + a
	}
	fmt.Printf("magnetar %s ready service=pulsar://%s http=http://%s%s\n", role, svc, web, extra)
	<-ctx.Done()
	log.Info("stopping")
	t1 := time.Now()
	err = closeAll()
	log.Info("stopped", "took", time.Since(t1).Round(time.Millisecond))
	return err
}

func addRunFlags(fl interface {
	StringVar(p *string, name, value, usage string)
}, rf *runFlags) {
	fl.StringVar(&rf.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fl.StringVar(&rf.logFormat, "log-format", "text", "log format: text or json")
	fl.StringVar(&rf.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (stopped at shutdown)")
	fl.StringVar(&rf.trace, "trace", "", "write a Go execution trace of the whole run to this file (stopped at shutdown; go tool trace)")
}
