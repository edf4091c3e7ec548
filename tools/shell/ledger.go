package shell

// Ops tools over a running cluster (magnetar shell listbookies,
// listledgers, ledgermetadata, readledger, listunderreplicated, recover,
// decommission, bookiesanity, simpletest): flags and output around
// package tools. Each takes --metadata-url and reaches bookies over the
// network, or --data-dir for a stopped standalone (the Opener decides).
// --json (or -o json) prints JSON on stdout; long runs draw a progress
// bar on stderr (-q: none).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/tools"
)

// clusterToolFlags are shared by the cluster tools.
type clusterToolFlags struct {
	open    Opener
	out     outputFlags
	timeout time.Duration
}

func (f *clusterToolFlags) register(c *cobra.Command) {
	f.open.Register(c)
	f.out.register(c)
	c.Flags().DurationVar(&f.timeout, "timeout", 10*time.Minute, "give up after this long")
}

// run opens the cluster, runs fn with a context bounded by --timeout
// (and cancelled by SIGINT through cobra's context) and closes it.
func (f *clusterToolFlags) run(cmd *cobra.Command, fn func(ctx context.Context, c tools.Cluster, w io.Writer) error) error {
	c, closeCluster, err := f.open.Open()
	if err != nil {
		return err
	}
	defer closeCluster()
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	return fn(ctx, c, cmd.OutOrStdout())
}

// print runs get against the cluster and prints what it returns.
func (f *clusterToolFlags) print(cmd *cobra.Command, get func(ctx context.Context, c tools.Cluster) (texter, error)) error {
	return f.run(cmd, func(ctx context.Context, c tools.Cluster, w io.Writer) error {
		out, err := get(ctx, c)
		if err != nil {
			return err
		}
		return f.out.print(w, out, nil)
	})
}

// texter is a tools result with a text form.
type texter interface{ Text() string }

// print writes v as JSON or as its text, then returns err (the tool's
// error comes after its partial result).
func (o *outputFlags) print(w io.Writer, v texter, err error) error {
	var perr error
	if o.isJSON() {
		perr = json.NewEncoder(w).Encode(v)
	} else {
		_, perr = io.WriteString(w, v.Text())
	}
	if err != nil {
		return err
	}
	return perr
}

func listBookiesCmd(o func() Opener) *cobra.Command {
	f := clusterToolFlags{open: o()}
	c := &cobra.Command{
		Use:   "listbookies",
		Short: "List the registered bookies (writable and read-only) and decommission requests",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.print(cmd, func(ctx context.Context, c tools.Cluster) (texter, error) {
				return tools.ListBookies(ctx, c)
			})
		},
	}
	f.register(c)
	return c
}

func listLedgersCmd(o func() Opener) *cobra.Command {
	f := clusterToolFlags{open: o()}
	var meta bool
	var bookie string
	c := &cobra.Command{
		Use:   "listledgers",
		Short: "List ledger ids (--meta: with state, quorums and bookies; --bookie: only ledgers on it)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.print(cmd, func(ctx context.Context, c tools.Cluster) (texter, error) {
				return tools.ListLedgers(ctx, c, meta, bookie, f.out.progress())
			})
		},
	}
	f.register(c)
	c.Flags().BoolVarP(&meta, "meta", "m", false, "print each ledger's state, quorums and bookies")
	c.Flags().StringVar(&bookie, "bookie", "", "only ledgers with a segment on this bookie")
	return c
}

func parseLedgerID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("ledger id %q: want a non-negative integer", s)
	}
	return id, nil
}

func ledgerMetadataCmd(o func() Opener) *cobra.Command {
	f := clusterToolFlags{open: o()}
	c := &cobra.Command{
		Use:   "ledgermetadata LEDGER_ID",
		Short: "Print a ledger's metadata record",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseLedgerID(args[0])
			if err != nil {
				return err
			}
			return f.print(cmd, func(ctx context.Context, c tools.Cluster) (texter, error) {
				return tools.LedgerMetadata(ctx, c, id)
			})
		},
	}
	f.register(c)
	return c
}

func readLedgerCmd(o func() Opener) *cobra.Command {
	f := clusterToolFlags{open: o()}
	var first, last int64
	var recover, noPayload bool
	c := &cobra.Command{
		Use:   "readledger LEDGER_ID",
		Short: "Read a ledger's entries (without recovery unless --recover)",
		Long: `Reads entries --first..--last (default: all up to the last confirmed
entry). Without --recover an open ledger is read up to the LAC its bookies
report, without fencing the writer; --recover fences and closes it first.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseLedgerID(args[0])
			if err != nil {
				return err
			}
			return f.run(cmd, func(ctx context.Context, c tools.Cluster, w io.Writer) error {
				enc := json.NewEncoder(w)
				return tools.ReadLedger(ctx, c, id, first, last, recover, func(e tools.Entry) error {
					var err error
					switch {
					case f.out.isJSON():
						if noPayload {
							e.Payload = nil
						}
						err = enc.Encode(e)
					case noPayload:
						_, err = fmt.Fprintf(w, "%d\t%d\n", e.Entry, e.Size)
					default:
						_, err = fmt.Fprintf(w, "%d\t%d\t%q\n", e.Entry, e.Size, e.Payload)
					}
					return err
				}, f.out.progress())
			})
		},
	}
	f.register(c)
	c.Flags().Int64Var(&first, "first", 0, "first entry")
	c.Flags().Int64Var(&last, "last", -1, "last entry (default: the last confirmed one)")
	c.Flags().BoolVar(&recover, "recover", false, "fence and recover an open ledger first (stops its writer)")
	c.Flags().BoolVar(&noPayload, "no-payload", false, "print ids and sizes only")
	return c
}

func listUnderReplicatedCmd(o func() Opener) *cobra.Command {
	f := clusterToolFlags{open: o()}
	c := &cobra.Command{
		Use:   "listunderreplicated",
		Short: "List the ledgers marked under-replicated by the auditor",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.print(cmd, func(ctx context.Context, c tools.Cluster) (texter, error) {
				return tools.UnderReplicated(ctx, c)
			})
		},
	}
	f.register(c)
	return c
}

func recoverCmd(o func() Opener) *cobra.Command {
	f := clusterToolFlags{open: o()}
	var rate int
	c := &cobra.Command{
		Use:   "recover BOOKIE",
		Short: "Re-replicate now, from this process, every ledger with a copy on a lost bookie",
		Long: `Copies the entries BOOKIE held to other bookies and updates the ledgers'
ensembles, ledger by ledger. Open ledgers on it are fenced and closed first
(their writers roll to new ledgers). BOOKIE must be down (not registered);
to move data off a live bookie use decommission.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(ctx context.Context, c tools.Cluster, w io.Writer) error {
				out, err := tools.Recover(ctx, c, args[0], rate, f.out.progress())
				if out.Repaired == nil && err != nil {
					return err // refused before any work
				}
				return f.out.print(w, out, err)
			})
		},
	}
	f.register(c)
	c.Flags().IntVar(&rate, "rate", 0, "copy at most this many entries per second (0: no limit)")
	return c
}

func decommissionCmd(o func() Opener) *cobra.Command {
	f := clusterToolFlags{open: o()}
	var rate int
	c := &cobra.Command{
		Use:   "decommission BOOKIE",
		Short: "Move every copy off a bookie, then delete its cookie",
		Long: `Records a decommission request for BOOKIE (its copies stop counting; the
auditor marks its ledgers), re-replicates each of its ledgers from this
process (reading from BOOKIE itself if it still serves), checks that no
ledger names it any more, and deletes the request and its cookie so the
id may be reused. The bookie may be stopped before or after.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(ctx context.Context, c tools.Cluster, w io.Writer) error {
				out, err := tools.Decommission(ctx, c, args[0], rate, f.out.progress())
				if out.Repaired == nil && err != nil {
					return err
				}
				return f.out.print(w, out, err)
			})
		},
	}
	f.register(c)
	c.Flags().IntVar(&rate, "rate", 0, "copy at most this many entries per second (0: no limit)")
	return c
}

func bookieSanityCmd(o func() Opener) *cobra.Command {
	f := clusterToolFlags{open: o()}
	var bookie string
	var entries int
	c := &cobra.Command{
		Use:   "bookiesanity",
		Short: "Write, read back and delete a small ledger on each writable bookie (or --bookie)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(ctx context.Context, c tools.Cluster, w io.Writer) error {
				out, err := tools.BookieSanity(ctx, c, bookie, entries, f.out.progress())
				if out == nil {
					return err
				}
				return f.out.print(w, out, err)
			})
		},
	}
	f.register(c)
	c.Flags().StringVar(&bookie, "bookie", "", "check only this bookie")
	c.Flags().IntVar(&entries, "entries", 10, "entries to write and read back")
	return c
}

func simpleTestCmd(o func() Opener) *cobra.Command {
	f := clusterToolFlags{open: o()}
	var co ledger.CreateOptions
	var entries, size int
	var keep bool
	c := &cobra.Command{
		Use:   "simpletest",
		Short: "Create a ledger at E/Qw/Qa, write entries, read them back, delete it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.print(cmd, func(ctx context.Context, c tools.Cluster) (texter, error) {
				return tools.SimpleTest(ctx, c, co, entries, size, keep, f.out.progress())
			})
		},
	}
	f.register(c)
	c.Flags().IntVar(&co.Ensemble, "ensemble", 3, "ensemble size E of new ledgers")
	c.Flags().IntVar(&co.WriteQuorum, "write-quorum", 2, "write quorum Qw of new ledgers")
	c.Flags().IntVar(&co.AckQuorum, "ack-quorum", 2, "ack quorum Qa of new ledgers")
	c.Flags().IntVar(&entries, "entries", 1000, "entries to write")
	c.Flags().IntVar(&size, "size", 100, "entry size in bytes")
	c.Flags().BoolVar(&keep, "keep", false, "keep the ledger instead of deleting it")
	return c
}
