package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/bookie/server"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/functions"
	"github.com/magnetar-mq/magnetar/internal/uring"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
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
	svc            serviceFlags
	noFunctions    bool
	noSync         bool
	writeMode      string
	bookie         bookieTuning
	run            runFlags
	sec            securityFlags
}

func init() { rootCmd.AddCommand(newStandaloneCmd()) }

func newStandaloneCmd() *cobra.Command {
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
			if err := applyConfig(cmd, "standalone"); err != nil {
				return err
			}
			return runServer(cmd.Context(), "standalone", f.run, func(ctx context.Context, log *slog.Logger) (*serviceStack, func() error, error) {
				s, err := openStandalone(ctx, f, log)
				if err != nil {
					return nil, nil, err
				}
				return s.stack, func() error { return s.close(log) }, nil
			})
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
	fl.StringVar(&f.writeMode, "journal-write-mode", "auto", "journal write path: auto (io_uring for groups of 64 KiB and more, pwrite for smaller ones), uring or pwrite")
	fl.BoolVar(&f.noFunctions, "no-functions-worker", false, "do not run the in-process function worker (/admin/v3/functions, sources, sinks)")
	addBookieTuningFlags(cmd, &f.bookie)
	f.svc.register(fl, "standalone")
	addRunFlags(fl, &f.run)
	f.sec.register(fl)
	addConfigFlag(cmd)
	return cmd
}

// standalone is a running single-process deployment.
type standalone struct {
	store *embedded.Store
	bk    *bookie.Bookie
	lc    *ledger.Client
	stack *serviceStack
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
	bo := bookie.Options{
		FS:               vfs.Default,
		JournalDir:       f.journalDir,
		LedgerDirs:       f.ledgerDirs,
		JournalNoSync:    f.noSync,
		JournalWriteMode: mode,
		Logger:           log.With("component", "bookie"),
	}
	f.bookie.apply(&bo)
	s.bk, err = bookie.Open(bo)
	if err != nil {
		return nil, fmt.Errorf("bookie: %w", err)
	}
	log.Info("bookie open", "journal", f.journalDir, "ledgers", f.ledgerDirs, "took", time.Since(t0).Round(time.Millisecond), "durable", !f.noSync)
	resolver := ledger.NewStaticResolver(map[string]ledger.BookieClient{standaloneBookieID: server.NewLocal(s.bk)})
	s.lc, err = ledger.NewClient(s.store, resolver, ledger.Options{
		Bookies: []string{standaloneBookieID},
		// A read-only bookie (full disk) gets no new ledgers: the broker
		// stops rolling instead of creating one per failed add.
		ReadOnly: func(string) bool { return s.bk.IsReadOnly() },
		Logger:   log.With("component", "ledger"),
	})
	if err != nil {
		return nil, fmt.Errorf("ledger client: %w", err)
	}
	bcfg := broker.Config{
		ServiceAddr:    f.serviceAddr,
		HTTPAddr:       f.httpAddr,
		AdvertisedHost: f.advertisedHost,
		MaxMessageSize: f.maxMessageSize,
		Deduplication:  f.dedup,
	}
	f.svc.apply(&bcfg)
	if err := f.sec.apply(&bcfg, log); err != nil {
		return s, err
	}
	var fw *functions.Worker
	if !f.noFunctions {
		if fw, err = newFunctionWorker(s.store, "standalone", filepath.Join(f.dataDir, "functions"), log); err != nil {
			return s, err
		}
	}
	s.stack, err = openServiceStack(ctx, s.store, f.svc.configURL, s.lc, ledger.CreateOptions{Ensemble: 1, WriteQuorum: 1, AckQuorum: 1},
		bcfg, &f.svc.storage, f.svc.console, broker.LocalBookie{ID: standaloneBookieID, ReadOnly: s.bk.IsReadOnly, Stats: s.bookieStats(&f)}, fw, log, s.bk.Collector())
	return s, err
}

// close stops everything in reverse order of opening; each step runs even
// if an earlier one failed.
func (s *standalone) close(log *slog.Logger) error {
	var c closeSteps
	if s.stack != nil {
		s.stack.close(&c, log)
	}
	if s.lc != nil {
		c.run(log, "ledger client", s.lc.Close)
	}
	if s.bk != nil {
		c.run(log, "bookie", s.bk.Close)
	}
	if s.store != nil {
		c.run(log, "metadata store", s.store.Close)
	}
	return c.err()
}
