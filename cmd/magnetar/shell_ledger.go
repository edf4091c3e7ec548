package main

// Ops tools over a running cluster (magnetar shell listbookies,
// listledgers, ledgermetadata, readledger, listunderreplicated, recover,
// decommission, bookiesanity, simpletest). Each takes --metadata-url and
// reaches bookies over the network. --json (or -o json) prints JSON on
// stdout; long runs draw a progress bar on stderr (-q: none).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/autorecovery"
	"github.com/magnetar-mq/magnetar/ledger"
)

// clusterToolFlags are shared by the cluster tools.
type clusterToolFlags struct {
	meta    metadataFlags
	out     outputFlags
	timeout time.Duration
}

func (f *clusterToolFlags) register(c *cobra.Command) {
	f.meta.register(c)
	f.out.register(c)
	c.Flags().DurationVar(&f.timeout, "timeout", 10*time.Minute, "give up after this long")
}

// run opens the cluster node, runs fn with a context bounded by --timeout
// (and cancelled by SIGINT through cobra's context) and closes the node.
func (f *clusterToolFlags) run(cmd *cobra.Command, fn func(ctx context.Context, n *clusterNode, w io.Writer) error) error {
	n, err := openClusterNode(f.meta, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer n.close()
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	return fn(ctx, n, cmd.OutOrStdout())
}

func (f *clusterToolFlags) print(w io.Writer, v any, text func() string) error {
	if f.out.isJSON() {
		return json.NewEncoder(w).Encode(v)
	}
	_, err := io.WriteString(w, text())
	return err
}

func init() {
	shellCmd.AddCommand(listBookiesCmd(), listLedgersCmd(), ledgerMetadataCmd(), readLedgerCmd(),
		listUnderReplicatedCmd(), recoverCmd(), decommissionCmd(), bookieSanityCmd(), simpleTestCmd())
}

type bookieOut struct {
	ID    string `json:"id"`
	State string `json:"state"` // writable, readonly, decommissioning (with either)
}

func listBookiesCmd() *cobra.Command {
	var f clusterToolFlags
	c := &cobra.Command{
		Use:   "listbookies",
		Short: "List the registered bookies (writable and read-only) and decommission requests",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(ctx context.Context, n *clusterNode, w io.Writer) error {
				s, err := autorecovery.ListBookies(ctx, n.store)
				if err != nil {
					return err
				}
				out := []bookieOut{}
				add := func(ids []string, state string) {
					for _, id := range ids {
						if slices.Contains(s.Decommissioned, id) {
							state += ",decommissioning"
						}
						out = append(out, bookieOut{id, state})
					}
				}
				add(s.Writable, "writable")
				add(s.ReadOnly, "readonly")
				for _, id := range s.Decommissioned {
					if !slices.Contains(s.Writable, id) && !slices.Contains(s.ReadOnly, id) {
						out = append(out, bookieOut{id, "down,decommissioning"})
					}
				}
				return f.print(w, out, func() string {
					var b strings.Builder
					for _, o := range out {
						fmt.Fprintf(&b, "%s\t%s\n", o.ID, o.State)
					}
					return b.String()
				})
			})
		},
	}
	f.register(c)
	return c
}

type ledgerOut struct {
	ID          int64    `json:"id"`
	State       string   `json:"state,omitempty"`
	Ensemble    int      `json:"ensembleSize,omitempty"`
	WriteQuorum int      `json:"writeQuorumSize,omitempty"`
	AckQuorum   int      `json:"ackQuorumSize,omitempty"`
	LastEntryID *int64   `json:"lastEntryId,omitempty"`
	Length      int64    `json:"length,omitempty"`
	Bookies     []string `json:"bookies,omitempty"`
}

func listLedgersCmd() *cobra.Command {
	var f clusterToolFlags
	var meta bool
	var bookie string
	c := &cobra.Command{
		Use:   "listledgers",
		Short: "List ledger ids (--meta: with state, quorums and bookies; --bookie: only ledgers on it)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(ctx context.Context, n *clusterNode, w io.Writer) error {
				ids, err := n.lc.Ledgers(ctx)
				if err != nil {
					return err
				}
				out := []ledgerOut{}
				var bar interface{ Add(int) error }
				if meta || bookie != "" {
					bar = f.out.bar(int64(len(ids)), "reading metadata", false)
				}
				for _, id := range ids {
					if !meta && bookie == "" {
						out = append(out, ledgerOut{ID: id})
						continue
					}
					m, _, err := n.lc.Metadata(ctx, id)
					bar.Add(1)
					if errors.Is(err, ledger.ErrNoSuchLedger) {
						continue
					}
					if err != nil {
						return err
					}
					o := describeLedger(id, &m)
					if bookie != "" && !slices.Contains(o.Bookies, bookie) {
						continue
					}
					if !meta {
						o = ledgerOut{ID: id}
					}
					out = append(out, o)
				}
				return f.print(w, out, func() string {
					var b strings.Builder
					for _, o := range out {
						if !meta {
							fmt.Fprintf(&b, "%d\n", o.ID)
							continue
						}
						fmt.Fprintf(&b, "%d\t%s\tE=%d Qw=%d Qa=%d\tlast=%d\tlength=%d\t%s\n", o.ID, o.State,
							o.Ensemble, o.WriteQuorum, o.AckQuorum, *o.LastEntryID, o.Length, strings.Join(o.Bookies, ","))
					}
					return b.String()
				})
			})
		},
	}
	f.register(c)
	c.Flags().BoolVarP(&meta, "meta", "m", false, "print each ledger's state, quorums and bookies")
	c.Flags().StringVar(&bookie, "bookie", "", "only ledgers with a segment on this bookie")
	return c
}

// describeLedger summarizes m; Bookies lists every bookie of any segment.
func describeLedger(id int64, m *ledger.Metadata) ledgerOut {
	o := ledgerOut{ID: id, State: string(m.State), Ensemble: m.EnsembleSize, WriteQuorum: m.WriteQuorum,
		AckQuorum: m.AckQuorum, LastEntryID: &m.LastEntryID, Length: m.Length}
	for _, s := range m.Ensembles {
		for _, b := range s.Bookies {
			if !slices.Contains(o.Bookies, b) {
				o.Bookies = append(o.Bookies, b)
			}
		}
	}
	slices.Sort(o.Bookies)
	return o
}

func parseLedgerID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("ledger id %q: want a non-negative integer", s)
	}
	return id, nil
}

func ledgerMetadataCmd() *cobra.Command {
	var f clusterToolFlags
	c := &cobra.Command{
		Use:   "ledgermetadata LEDGER_ID",
		Short: "Print a ledger's metadata record",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseLedgerID(args[0])
			if err != nil {
				return err
			}
			return f.run(cmd, func(ctx context.Context, n *clusterNode, w io.Writer) error {
				m, v, err := n.lc.Metadata(ctx, id)
				if err != nil {
					return err
				}
				m.Password = nil // a secret; never printed
				out := struct {
					ID       int64           `json:"id"`
					Version  int64           `json:"version"`
					Metadata ledger.Metadata `json:"metadata"`
				}{id, int64(v), m}
				return f.print(w, out, func() string {
					var b strings.Builder
					fmt.Fprintf(&b, "ledger %d (version %d): %s E=%d Qw=%d Qa=%d lastEntryId=%d length=%d ctime=%s\n",
						id, v, m.State, m.EnsembleSize, m.WriteQuorum, m.AckQuorum, m.LastEntryID, m.Length,
						time.UnixMilli(m.CTime).UTC().Format(time.RFC3339))
					for _, s := range m.Ensembles {
						fmt.Fprintf(&b, "  from entry %d: %s\n", s.FirstEntry, strings.Join(s.Bookies, ", "))
					}
					for _, k := range slices.Sorted(maps.Keys(m.Custom)) {
						fmt.Fprintf(&b, "  custom %s=%q\n", k, m.Custom[k])
					}
					return b.String()
				})
			})
		},
	}
	f.register(c)
	return c
}

type entryOut struct {
	Entry   int64  `json:"entry"`
	Size    int    `json:"size"`
	Payload []byte `json:"payload,omitempty"` // base64 in JSON
}

func readLedgerCmd() *cobra.Command {
	var f clusterToolFlags
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
			return f.run(cmd, func(ctx context.Context, n *clusterNode, w io.Writer) error {
				var r *ledger.ReadHandle
				if recover {
					r, err = n.lc.Open(ctx, id)
				} else {
					r, err = n.lc.OpenNoRecovery(ctx, id)
				}
				if err != nil {
					return err
				}
				hi := r.LastAddConfirmed()
				if last >= 0 && last < hi {
					hi = last
				}
				if first > hi {
					return nil
				}
				bar := f.out.bar(hi-first+1, "reading", false)
				defer bar.Finish()
				enc := json.NewEncoder(w)
				for lo := first; lo <= hi; lo += 256 {
					got, err := r.Read(ctx, lo, min(lo+255, hi))
					if err != nil {
						return err
					}
					for i, p := range got {
						o := entryOut{Entry: lo + int64(i), Size: len(p)}
						if !noPayload {
							o.Payload = p
						}
						if f.out.isJSON() {
							err = enc.Encode(o)
						} else if noPayload {
							_, err = fmt.Fprintf(w, "%d\t%d\n", o.Entry, o.Size)
						} else {
							_, err = fmt.Fprintf(w, "%d\t%d\t%q\n", o.Entry, o.Size, p)
						}
						if err != nil {
							return err
						}
					}
					bar.Add(len(got))
				}
				return nil
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

type markOut struct {
	Ledger  int64     `json:"ledger"`
	Bookies []string  `json:"bookies"`
	Since   time.Time `json:"since"`
}

func listUnderReplicatedCmd() *cobra.Command {
	var f clusterToolFlags
	c := &cobra.Command{
		Use:   "listunderreplicated",
		Short: "List the ledgers marked under-replicated by the auditor",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(ctx context.Context, n *clusterNode, w io.Writer) error {
				marks, err := autorecovery.UnderReplicated(ctx, n.store)
				if err != nil {
					return err
				}
				out := []markOut{}
				for _, id := range slices.Sorted(maps.Keys(marks)) {
					out = append(out, markOut{id, marks[id].Bookies, marks[id].SinceTime().UTC()})
				}
				return f.print(w, out, func() string {
					var b strings.Builder
					for _, o := range out {
						fmt.Fprintf(&b, "%d\t%s\tsince %s\n", o.Ledger, strings.Join(o.Bookies, ","), o.Since.Format(time.RFC3339))
					}
					return b.String()
				})
			})
		},
	}
	f.register(c)
	return c
}

// repairOut summarizes recover and decommission.
type repairOut struct {
	Bookie    string   `json:"bookie"`
	Ledgers   int      `json:"ledgers"`
	Repaired  []int64  `json:"repaired"`
	Recovered []int64  `json:"recovered,omitempty"` // open ledgers fenced and closed first
	Copied    int      `json:"copied"`
	Failed    []int64  `json:"failed,omitempty"`
	Errors    []string `json:"errors,omitempty"`
}

// repairBookie re-replicates every ledger with a segment on bookie (which
// must not count as available) from this process, fencing open ledgers at
// once, with a progress bar over the ledgers.
func repairBookie(ctx context.Context, n *clusterNode, f *clusterToolFlags, bookie string, rate int) (repairOut, error) {
	out := repairOut{Bookie: bookie, Repaired: []int64{}}
	rep, err := autorecovery.NewReplicator(n.store, n.lc, n.resolver, autorecovery.Options{
		OpenLedgerGrace: time.Nanosecond, EntriesPerSecond: rate})
	if err != nil {
		return out, err
	}
	ids, err := n.lc.Ledgers(ctx)
	if err != nil {
		return out, err
	}
	var todo []int64
	for _, id := range ids {
		m, _, err := n.lc.Metadata(ctx, id)
		if errors.Is(err, ledger.ErrNoSuchLedger) {
			continue
		}
		if err != nil {
			return out, err
		}
		if slices.Contains(describeLedger(id, &m).Bookies, bookie) {
			todo = append(todo, id)
		}
	}
	out.Ledgers = len(todo)
	bar := f.out.bar(int64(len(todo)), "re-replicating "+bookie, false)
	defer bar.Finish()
	for _, id := range todo {
		var res autorecovery.Result
		var err error
		for attempt := 0; attempt < 3; attempt++ { // a racing worker may change a segment under us
			if res, err = rep.ReplicateLedger(ctx, id, time.Time{}, nil); err == nil || ctx.Err() != nil {
				break
			}
		}
		bar.Add(1)
		out.Copied += res.Copied
		if res.Recovered {
			out.Recovered = append(out.Recovered, id)
		}
		if err != nil {
			out.Failed = append(out.Failed, id)
			out.Errors = append(out.Errors, err.Error())
			continue
		}
		if err := autorecovery.Unmark(ctx, n.store, id); err != nil {
			return out, err
		}
		out.Repaired = append(out.Repaired, id)
	}
	if len(out.Failed) > 0 {
		return out, fmt.Errorf("%d of %d ledgers not repaired (first: %s)", len(out.Failed), len(todo), out.Errors[0])
	}
	return out, nil
}

func (o repairOut) text() string {
	s := fmt.Sprintf("bookie %s: %d ledgers, %d repaired, %d entries copied", o.Bookie, o.Ledgers, len(o.Repaired), o.Copied)
	if len(o.Recovered) > 0 {
		s += fmt.Sprintf(", %d open ledgers fenced", len(o.Recovered))
	}
	if len(o.Failed) > 0 {
		s += fmt.Sprintf(", %d failed: %s", len(o.Failed), strings.Join(o.Errors, "; "))
	}
	return s + "\n"
}

func recoverCmd() *cobra.Command {
	var f clusterToolFlags
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
			return f.run(cmd, func(ctx context.Context, n *clusterNode, w io.Writer) error {
				s, err := autorecovery.ListBookies(ctx, n.store)
				if err != nil {
					return err
				}
				if s.Available(args[0]) {
					return fmt.Errorf("bookie %s is registered and serving: nothing is lost (stop it first, or use decommission)", args[0])
				}
				out, err := repairBookie(ctx, n, &f, args[0], rate)
				if perr := f.print(w, out, out.text); perr != nil {
					return perr
				}
				return err
			})
		},
	}
	f.register(c)
	c.Flags().IntVar(&rate, "rate", 0, "copy at most this many entries per second (0: no limit)")
	return c
}

func decommissionCmd() *cobra.Command {
	var f clusterToolFlags
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
			b := args[0]
			return f.run(cmd, func(ctx context.Context, n *clusterNode, w io.Writer) error {
				if err := autorecovery.RequestDecommission(ctx, n.store, b); err != nil {
					return err
				}
				out, err := repairBookie(ctx, n, &f, b, rate)
				if err == nil {
					err = checkNoLedgerOn(ctx, n, b)
				}
				if err == nil {
					err = autorecovery.FinishDecommission(ctx, n.store, b)
				}
				if perr := f.print(w, out, out.text); perr != nil {
					return perr
				}
				return err
			})
		},
	}
	f.register(c)
	c.Flags().IntVar(&rate, "rate", 0, "copy at most this many entries per second (0: no limit)")
	return c
}

func checkNoLedgerOn(ctx context.Context, n *clusterNode, b string) error {
	ids, err := n.lc.Ledgers(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		m, _, err := n.lc.Metadata(ctx, id)
		if errors.Is(err, ledger.ErrNoSuchLedger) {
			continue
		}
		if err != nil {
			return err
		}
		if slices.Contains(describeLedger(id, &m).Bookies, b) {
			return fmt.Errorf("ledger %d still has a segment on %s", id, b)
		}
	}
	return nil
}

type sanityOut struct {
	Bookie  string  `json:"bookie"`
	OK      bool    `json:"ok"`
	Entries int     `json:"entries"`
	Millis  float64 `json:"millis"`
	Error   string  `json:"error,omitempty"`
}

func bookieSanityCmd() *cobra.Command {
	var f clusterToolFlags
	var bookie string
	var entries int
	c := &cobra.Command{
		Use:   "bookiesanity",
		Short: "Write, read back and delete a small ledger on each writable bookie (or --bookie)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(ctx context.Context, n *clusterNode, w io.Writer) error {
				targets := []string{bookie}
				if bookie == "" {
					s, err := autorecovery.ListBookies(ctx, n.store)
					if err != nil {
						return err
					}
					targets = s.Writable
				}
				if len(targets) == 0 {
					return errors.New("no writable bookie registered")
				}
				out := []sanityOut{}
				failed := 0
				bar := f.out.bar(int64(len(targets)), "checking bookies", false)
				for _, b := range targets {
					t0 := time.Now()
					err := sanityCheck(ctx, n, b, entries)
					o := sanityOut{Bookie: b, OK: err == nil, Entries: entries, Millis: float64(time.Since(t0).Microseconds()) / 1000}
					if err != nil {
						o.Error = err.Error()
						failed++
					}
					out = append(out, o)
					bar.Add(1)
				}
				bar.Finish()
				if err := f.print(w, out, func() string {
					var s strings.Builder
					for _, o := range out {
						status := "ok"
						if !o.OK {
							status = "FAILED: " + o.Error
						}
						fmt.Fprintf(&s, "%s\t%s\t%d entries in %.1f ms\n", o.Bookie, status, o.Entries, o.Millis)
					}
					return s.String()
				}); err != nil {
					return err
				}
				if failed > 0 {
					return fmt.Errorf("%d of %d bookies failed the sanity check", failed, len(targets))
				}
				return nil
			})
		},
	}
	f.register(c)
	c.Flags().StringVar(&bookie, "bookie", "", "check only this bookie")
	c.Flags().IntVar(&entries, "entries", 10, "entries to write and read back")
	return c
}

// sanityCheck writes entries to a ledger placed on bookie b alone, reads
// them back, and deletes the ledger.
func sanityCheck(ctx context.Context, n *clusterNode, b string, entries int) error {
	lc, err := ledger.NewClient(n.store, n.resolver, ledger.Options{Bookies: []string{b}})
	if err != nil {
		return err
	}
	defer lc.Close()
	h, err := lc.Create(ctx, ledger.CreateOptions{Ensemble: 1, WriteQuorum: 1, AckQuorum: 1, Password: []byte("bookiesanity"),
		Custom: map[string][]byte{"application": []byte("bookiesanity")}})
	if err != nil {
		return err
	}
	defer lc.Delete(context.WithoutCancel(ctx), h.ID())
	return writeReadBack(ctx, lc, h, entries, 100, nil)
}

// writeReadBack adds entries of size bytes, closes the ledger, reopens it
// and checks every entry.
func writeReadBack(ctx context.Context, lc *ledger.Client, h *ledger.WriteHandle, entries, size int, progress func()) error {
	body := func(e int) []byte {
		p := fmt.Appendf(nil, "entry %d of ledger %d ", e, h.ID())
		for len(p) < size {
			p = append(p, byte('a'+e%26))
		}
		return p
	}
	errc := make(chan error, 1)
	sem := make(chan struct{}, 64)
	for e := range entries {
		select {
		case sem <- struct{}{}:
		case err := <-errc:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
		h.AddAsync(body(e), func(id int64, err error) {
			<-sem
			if err == nil && id != int64(e) {
				err = fmt.Errorf("entry %d acked as %d", e, id)
			}
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
			if progress != nil {
				progress()
			}
		})
	}
	if err := h.Close(ctx); err != nil {
		return err
	}
	select {
	case err := <-errc:
		return err
	default:
	}
	r, err := lc.Open(ctx, h.ID())
	if err != nil {
		return err
	}
	if r.LastAddConfirmed() != int64(entries)-1 {
		return fmt.Errorf("ledger %d: last entry %d after close, want %d", h.ID(), r.LastAddConfirmed(), entries-1)
	}
	for lo := 0; lo < entries; lo += 256 {
		hi := min(lo+255, entries-1)
		got, err := r.Read(ctx, int64(lo), int64(hi))
		if err != nil {
			return err
		}
		for i, p := range got {
			if string(p) != string(body(lo+i)) {
				return fmt.Errorf("ledger %d entry %d: read %q", h.ID(), lo+i, p)
			}
		}
	}
	return nil
}

type simpleTestOut struct {
	Ledger        int64    `json:"ledger"`
	Entries       int      `json:"entries"`
	Size          int      `json:"size"`
	Ensemble      []string `json:"ensemble"`
	Seconds       float64  `json:"seconds"`
	EntriesPerSec float64  `json:"entriesPerSec"`
	Deleted       bool     `json:"deleted"`
}

func simpleTestCmd() *cobra.Command {
	var f clusterToolFlags
	var q quorumFlags
	var entries, size int
	var keep bool
	c := &cobra.Command{
		Use:   "simpletest",
		Short: "Create a ledger at E/Qw/Qa, write entries, read them back, delete it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(ctx context.Context, n *clusterNode, w io.Writer) error {
				h, err := n.lc.Create(ctx, ledger.CreateOptions{Ensemble: q.ensemble, WriteQuorum: q.writeQuorum, AckQuorum: q.ackQuorum,
					Password: []byte("simpletest"), Custom: map[string][]byte{"application": []byte("simpletest")}})
				if err != nil {
					return err
				}
				out := simpleTestOut{Ledger: h.ID(), Entries: entries, Size: size, Ensemble: h.Metadata().Ensembles[0].Bookies}
				bar := f.out.bar(int64(entries), fmt.Sprintf("ledger %d", h.ID()), false)
				t0 := time.Now()
				err = writeReadBack(ctx, n.lc, h, entries, size, func() { bar.Add(1) })
				bar.Finish()
				if err != nil {
					return err
				}
				out.Seconds = time.Since(t0).Seconds()
				out.EntriesPerSec = float64(entries) / out.Seconds
				if !keep {
					if err := n.lc.Delete(ctx, h.ID()); err != nil {
						return err
					}
					out.Deleted = true
				}
				return f.print(w, out, func() string {
					return fmt.Sprintf("ledger %d on %s: wrote and read back %d entries of %d B in %.2fs (%.0f entries/s)%s\n",
						out.Ledger, strings.Join(out.Ensemble, ","), entries, size, out.Seconds, out.EntriesPerSec,
						map[bool]string{true: ", deleted", false: ", kept"}[out.Deleted])
				})
			})
		},
	}
	f.register(c)
	q.register(c)
	c.Flags().IntVar(&entries, "entries", 1000, "entries to write")
	c.Flags().IntVar(&size, "size", 100, "entry size in bytes")
	c.Flags().BoolVar(&keep, "keep", false, "keep the ledger instead of deleting it")
	return c
}
