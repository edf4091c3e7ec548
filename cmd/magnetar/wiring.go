package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/magnetar-mq/magnetar/brokerconf"
	topiccompact "github.com/magnetar-mq/magnetar/compact"
	"github.com/magnetar-mq/magnetar/internal/stack"
	"github.com/magnetar-mq/magnetar/schemareg"
	"github.com/magnetar-mq/magnetar/txn/server"
)

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

// service is the stack configuration the flags shared by standalone and
// broker ask for, over the broker configuration cfg (its offload
// defaults are set here).
func (s *serviceFlags) service(cfg brokerconf.Config) (stack.Service, error) {
	var err error
	if cfg.Offload, err = s.storage.OffloadDefaults(); err != nil {
		return stack.Service{}, fmt.Errorf("tiered storage: %w", err)
	}
	svc := stack.Service{
		Broker:        cfg,
		ManagedLedger: s.storage.MLConfig(),
		ConfigURL:     s.configURL,
		Features: stack.Features{EntryMetadata: s.entryMeta, DedupMaxProducers: s.dedupMaxProducers,
			Schemas:    schemareg.Config{CompatibilityStrategy: s.schemaStrategy, ValidationEnforced: s.schemaEnforced},
			Compaction: topiccompact.Config{RetainNullKey: s.retainNullKey}},
		Console:                   s.console,
		StatusFile:                s.statusFile,
		ClientLibraryVersionCheck: s.versionCheck,
		Runtime:                   s.runtime,
		Internal:                  s.internal,
	}
	if s.packagesEnabled {
		svc.Packages = &stack.Packages{Replicas: s.packagesReplicas}
	}
	if s.txnEnabled {
		svc.Features.Transactions = &server.Config{Coordinators: s.txnCoordinators, MaxActivePerCoordinator: s.txnMaxActive}
	}
	return svc, nil
}

// runFlags are the process-level flags every server subcommand shares.
type runFlags struct {
	logLevel, logFormat, cpuProfile, memProfile, trace string
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
func runServer(ctx context.Context, role string, rf runFlags, open func(context.Context, *slog.Logger) (*stack.Stack, func() error, error)) error {
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
	st, closeAll, err := open(ctx, log)
	if err != nil {
		return err
	}
	b := st.Broker()
	svc, web := b.ServiceAddr(), b.HTTPAddr()
	log.Info("magnetar "+role+" ready", "service", svc, "http", web, "startup", time.Since(t0).Round(time.Microsecond))
	extra := ""
	if a := b.TLSServiceAddr(); a != "" {
		extra += " service-tls=pulsar+ssl://" + a
	}
	if a := b.TLSHTTPAddr(); a != "" {
		extra += " https=https://" + a
	}
	fmt.Printf("magnetar %s ready service=pulsar://%s http=http://%s%s\n", role, svc, web, extra)
	<-ctx.Done()
	log.Info("stopping")
	if rf.memProfile != "" {
		if err := writeHeapProfile(rf.memProfile); err != nil {
			log.Warn("heap profile not written", "err", err)
		}
	}
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
	fl.StringVar(&rf.memProfile, "memprofile", "", "on SIGINT/SIGTERM, before anything closes, write a heap profile (after a GC) to this file")
}

// writeHeapProfile writes the in-use heap, after a GC, to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
