package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/autorecovery"
	"github.com/magnetar-mq/magnetar/internal/cliflags"
)

type autorecoveryFlags struct {
	meta      metadataFlags
	sec       cliflags.Security
	lostDelay time.Duration
	openGrace time.Duration
	rate      int
	noAuditor bool
	logLevel  string
	logFormat string
}

// newAutorecoveryCmd builds `magnetar autorecovery`.
func newAutorecoveryCmd() *cobra.Command {
	var f autorecoveryFlags
	cmd := &cobra.Command{
		Use:   "autorecovery",
		Short: "Run an auditor candidate and a re-replication worker on their own",
		Long: `Joins the auditor election and runs a replication worker against the
cluster named by --metadata-url (brokers do the same unless started with
--autorecovery=false). When running it prints:
  magnetar autorecovery ready id=ID`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAutorecovery(cmd.Context(), f)
		},
	}
	f.meta.register(cmd)
	fl := cmd.Flags()
	fl.DurationVar(&f.lostDelay, "lost-bookie-recovery-delay", 0, "auditor: wait this long after a bookie disappears before marking its ledgers")
	fl.DurationVar(&f.openGrace, "open-ledger-grace", 30*time.Second, "worker: wait this long before fencing an open ledger with a lost bookie in its last ensemble")
	fl.IntVar(&f.rate, "rate", 0, "worker: copy at most this many entries per second (0: no limit)")
	fl.BoolVar(&f.noAuditor, "no-auditor", false, "run the worker only")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	f.sec.Register(fl)
	return cmd
}

func runAutorecovery(ctx context.Context, f autorecoveryFlags) error {
	log, err := newLogger(f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	ctx, stop := signalContext(ctx)
	defer stop()
	bc, err := f.sec.BookieClient(log)
	if err != nil {
		return err
	}
	n, err := openClusterNode(f.meta, log, bc)
	if err != nil {
		return err
	}
	defer n.close()
	opts := autorecovery.Options{LostBookieDelay: f.lostDelay, OpenLedgerGrace: f.openGrace,
		EntriesPerSecond: f.rate, DisableAuditor: f.noAuditor, Logger: log.With("component", "autorecovery")}
	opts.EnsureDefaults()
	s, err := autorecovery.Start(n.store, n.lc, n.resolver, opts)
	if err != nil {
		return err
	}
	fmt.Printf("magnetar autorecovery ready id=%s\n", opts.ID)
	<-ctx.Done()
	log.Info("stopping", "stats", fmt.Sprintf("%+v", s.Stats()))
	return s.Close()
}
