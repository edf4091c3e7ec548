package main

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/internal/cliflags"
	"github.com/magnetar-mq/magnetar/internal/stack"
	"github.com/magnetar-mq/magnetar/internal/uring"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

type standaloneFlags struct {
	dataDir        string
	journalDir     string
	ledgerDirs     []string
	serviceAddr    string
	httpAddr       string
	advertisedHost string
	maxMessageSize int
	svc            serviceFlags
	noFunctions    bool
	fnProc         cliflags.Functions
	noSync         bool
	writeMode      string
	bookie         cliflags.BookieTuning
	run            runFlags
	sec            cliflags.Security
	http           cliflags.HTTP
}

func newStandaloneCmd() *cobra.Command {
	cmd, _ := standaloneCommand()
	return cmd
}

// standaloneCommand returns the command and the flags it fills.
func standaloneCommand() (*cobra.Command, *standaloneFlags) {
	f := &standaloneFlags{}
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
			f.svc.runtime = runtimeConfig("standalone", cmd.Flags())
			f.svc.internal = internalData("embedded:"+filepath.Join(f.dataDir, "metadata.db"), f.svc.configURL)
			return runServer(cmd.Context(), "standalone", f.run, func(ctx context.Context, log *slog.Logger) (*stack.Stack, func() error, error) {
				s, err := openStandalone(ctx, *f, log)
				if err != nil {
					return nil, nil, err
				}
				return s.Stack(), s.Close, nil
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
	fl.BoolVar(&f.noSync, "journal-no-sync", false, "skip fdatasync in the journal (NOT DURABLE; benchmarks only)")
	fl.StringVar(&f.writeMode, "journal-write-mode", "auto", "journal write path: auto (io_uring for groups of 64 KiB and more, pwrite for smaller ones), uring or pwrite")
	fl.BoolVar(&f.noFunctions, "no-functions-worker", false, "do not run the in-process function worker (/admin/v3/functions, sources, sinks)")
	f.fnProc.Register(fl)
	f.bookie.Register(fl)
	f.svc.register(fl, "standalone")
	addRunFlags(fl, &f.run)
	f.sec.Register(fl)
	f.http.Register(fl)
	addConfigFlag(cmd)
	return cmd, f
}

// brokerConfig is the broker configuration the flags ask for.
func (f *standaloneFlags) brokerConfig(log *slog.Logger) (brokerconf.Config, error) {
	bcfg := brokerconf.Config{
		ServiceAddr:    f.serviceAddr,
		HTTPAddr:       f.httpAddr,
		AdvertisedHost: f.advertisedHost,
		MaxMessageSize: f.maxMessageSize,
	}
	f.svc.apply(&bcfg)
	var err error
	if bcfg.HTTPLimits, err = f.http.Limits(); err != nil {
		return bcfg, err
	}
	err = f.sec.Apply(&bcfg, log)
	return bcfg, err
}

// options turns the flags into the standalone's options.
func (f *standaloneFlags) options(log *slog.Logger) (stack.StandaloneOptions, error) {
	mode, err := uring.ParseMode(f.writeMode)
	if err != nil {
		return stack.StandaloneOptions{}, err
	}
	o := stack.StandaloneOptions{
		DataDir: f.dataDir,
		Bookie: bookie.Options{
			FS:               vfs.Default,
			JournalDir:       f.journalDir,
			LedgerDirs:       f.ledgerDirs,
			JournalNoSync:    f.noSync,
			JournalWriteMode: mode,
		},
		Logger: log,
	}
	f.bookie.Apply(&o.Bookie)
	bcfg, err := f.brokerConfig(log)
	if err != nil {
		return o, err
	}
	if o.Service, err = f.svc.service(bcfg); err != nil {
		return o, err
	}
	if !f.noFunctions {
		fo, err := f.fnProc.Options()
		if err != nil {
			return o, err
		}
		o.Functions = &fo
	}
	return o, nil
}

func openStandalone(ctx context.Context, f standaloneFlags, log *slog.Logger) (*stack.Standalone, error) {
	o, err := f.options(log)
	if err != nil {
		return nil, err
	}
	return stack.OpenStandalone(ctx, o)
}
