package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/bookie/server"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/internal/uring"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/mledger"
)

// standaloneBookieID names the in-process bookie in ledger metadata.
const standaloneBookieID = "standalone-bookie"

type standaloneFlags struct {
	dataDir        string
	journalDir     string
	ledgerDirs     []string
	serviceAddr    string
	httpAddr       string
	advertisedHost string
	maxMessageSize int
	dedup          bool
	noSync         bool
	writeMode      string
	logLevel       string
	logFormat      string
	cpuProfile     string
}

func init() {
	var f standaloneFlags
	cmd := &cobra.Command{
		Use:   "standalone",
		Short: "Run a broker, one bookie and the embedded metadata store in one process",
		Long: `Runs the whole system in one process: the Pulsar binary protocol on --listen
(default :6650), the admin/lookup HTTP API on --http (default :8080), one
bookie at E=Qw=Qa=1 with its journal and ledger dirs under --data-dir, and
the embedded metadata store. public/default exists from the first start.
SIGTERM or SIGINT stops it gracefully: in-flight sends are answered,
cursors and ledgers closed, the bookie checkpointed.

When both are ready it prints one line to stdout:
  magnetar standalone ready service=pulsar://HOST:PORT http=http://HOST:PORT`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStandalone(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dataDir, "data-dir", "./data", "data directory (metadata, journal and ledgers inside it by default)")
	fl.StringVar(&f.journalDir, "journal-dir", "", "journal directory (default DATA/journal); put it on its own disk")
	fl.StringSliceVar(&f.ledgerDirs, "ledger-dirs", nil, "ledger directories, comma-separated (default DATA/ledgers)")
	fl.StringVar(&f.serviceAddr, "listen", ":6650", "Pulsar binary protocol listen address")
	fl.StringVar(&f.httpAddr, "http", ":8080", "admin/lookup HTTP listen address")
	fl.StringVar(&f.advertisedHost, "advertised-host", "localhost", "host name given to clients in lookups")
	fl.IntVar(&f.maxMessageSize, "max-message-size", 5<<20, "largest message (frame) accepted, in bytes")
	fl.BoolVar(&f.dedup, "dedup", false, "drop re-sent messages by producer name and sequence id")
	fl.BoolVar(&f.noSync, "journal-no-sync", false, "skip fdatasync in the journal (NOT DURABLE; benchmarks only)")
	fl.StringVar(&f.writeMode, "journal-write-mode", "auto", "journal write path: auto, uring or pwrite")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (stopped at shutdown)")
	rootCmd.AddCommand(cmd)
}

// standalone is a running single-process deployment.
type standalone struct {
	store   *embedded.Store
	bk      *bookie.Bookie
	lc      *ledger.Client
	factory *mledger.Factory
	broker  *broker.Broker
}

func openStandalone(ctx context.Context, f standaloneFlags, log *slog.Logger) (_ *standalone, err error) {
	s := &standalone{}
	defer func() {
		if err != nil {
			s.close(log)
		}
	}()
	if f.journalDir == "" {
		f.journalDir = filepath.Join(f.dataDir, "journal")
	}
	if len(f.ledgerDirs) == 0 {
		f.ledgerDirs = []string{filepath.Join(f.dataDir, "ledgers")}
	}
	mode, err := uring.ParseMode(f.writeMode)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(f.dataDir, 0o755); err != nil {
		return nil, err
	}
	if s.store, err = embedded.Open(filepath.Join(f.dataDir, "metadata.db"), embedded.Options{}); err != nil {
		return nil, fmt.Errorf("metadata store: %w", err)
	}
	t0 := time.Now()
	s.bk, err = bookie.Open(bookie.Options{
		FS:               vfs.Default,
		JournalDir:       f.journalDir,
		LedgerDirs:       f.ledgerDirs,
		JournalNoSync:    f.noSync,
		JournalWriteMode: mode,
		Logger:           log.With("component", "bookie"),
	})
	if err != nil {
		return nil, fmt.Errorf("bookie: %w", err)
	}
	log.Info("bookie open", "journal", f.journalDir, "ledgers", f.ledgerDirs, "took", time.Since(t0).Round(time.Millisecond), "durable", !f.noSync)
	resolver := ledger.NewStaticResolver(map[string]ledger.BookieClient{standaloneBookieID: server.NewLocal(s.bk)})
	s.lc, err = ledger.NewClient(s.store, resolver, ledger.Options{
		Bookies: []string{standaloneBookieID},
		Logger:  log.With("component", "ledger"),
	})
	if err != nil {
		return nil, fmt.Errorf("ledger client: %w", err)
	}
	s.factory, err = mledger.NewFactory(mledger.Options{
		Ledgers:  ledgerStore{c: s.lc, opts: ledger.CreateOptions{Ensemble: 1, WriteQuorum: 1, AckQuorum: 1}},
		Metadata: s.store,
		Logger:   log.With("component", "mledger"),
	})
	if err != nil {
		return nil, fmt.Errorf("managed ledgers: %w", err)
	}
	s.broker, err = broker.New(broker.Config{
		ServiceAddr:    f.serviceAddr,
		HTTPAddr:       f.httpAddr,
		AdvertisedHost: f.advertisedHost,
		MaxMessageSize: f.maxMessageSize,
		Deduplication:  f.dedup,
		Logger:         log.With("component", "broker"),
	}, broker.Deps{
		Metadata:   s.store,
		OpenLedger: broker.LedgerOpener(s.factory, mledger.Config{}),
		Bookies:    broker.LocalBookie{ID: standaloneBookieID, ReadOnly: s.bk.IsReadOnly},
	})
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	if err := s.broker.Start(ctx); err != nil {
		s.broker = nil
		return nil, fmt.Errorf("broker: %w", err)
	}
	return s, nil
}

// close stops everything in reverse order of opening; each step runs even
// if an earlier one failed.
func (s *standalone) close(log *slog.Logger) error {
	var errs []error
	step := func(name string, fn func() error) {
		if err := fn(); err != nil {
			log.Error("close", "component", name, "err", err)
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	if s.broker != nil {
		step("broker", s.broker.Close)
	}
	if s.factory != nil {
		step("managed ledgers", s.factory.Close)
	}
	if s.lc != nil {
		step("ledger client", s.lc.Close)
	}
	if s.bk != nil {
		step("bookie", s.bk.Close)
	}
	if s.store != nil {
		step("metadata store", s.store.Close)
	}
	return errors.Join(errs...)
}

func runStandalone(ctx context.Context, f standaloneFlags) error {
	log, err := newLogger(f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
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
	t0 := time.Now()
	s, err := openStandalone(ctx, f, log)
	if err != nil {
		return err
	}
	log.Info("magnetar standalone ready", "service", s.broker.ServiceAddr(), "http", s.broker.HTTPAddr(), "startup", time.Since(t0).Round(time.Microsecond))
	fmt.Printf("magnetar standalone ready service=pulsar://%s http=http://%s\n", s.broker.ServiceAddr(), s.broker.HTTPAddr())
	<-ctx.Done()
	log.Info("stopping")
	t1 := time.Now()
	err = s.close(log)
	log.Info("stopped", "took", time.Since(t1).Round(time.Millisecond))
	return err
}
