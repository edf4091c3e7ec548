package shell

// Ops tools over a bookie's directories (magnetar shell readjournal,
// readentrylog, rebuildindex, ledgerstats): flags and output around
// package tools. Long scans draw a progress bar on stderr; --json (or -o
// json) prints JSON on stdout.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/tools"
)

// outputFlags are shared by the shell tools.
type outputFlags struct {
	json   bool
	output string
	quiet  bool
}

func (o *outputFlags) register(c *cobra.Command) {
	c.Flags().BoolVar(&o.json, "json", false, "print JSON (one object per line for record listings)")
	c.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	c.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "no progress bar")
}

func (o *outputFlags) isJSON() bool { return o.json || o.output == "json" }

// progress is a tools.Progress drawing a bar on stderr (none with -q).
func (o *outputFlags) progress() tools.Progress {
	if o.quiet {
		return nil
	}
	return &barProgress{}
}

type barProgress struct{ bar *progressbar.ProgressBar }

func (p *barProgress) Start(total int64, what string, bytes bool) {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionThrottle(100_000_000),
		progressbar.OptionClearOnFinish(),
	}
	if bytes {
		opts = append(opts, progressbar.OptionShowBytes(true))
	} else {
		opts = append(opts, progressbar.OptionShowCount())
	}
	p.bar = progressbar.NewOptions64(total, opts...)
}

func (p *barProgress) Set(done int64) {
	if p.bar != nil {
		p.bar.Set64(done)
	}
}

func (p *barProgress) Finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}

// lister prints the records of a listing (at most limit; < 0: all), as
// JSON lines or text lines.
type lister struct {
	w       io.Writer
	enc     *json.Encoder
	out     *outputFlags
	limit   int64
	printed int64
}

func newLister(w io.Writer, out *outputFlags, limit int64) *lister {
	return &lister{w: w, enc: json.NewEncoder(w), out: out, limit: limit}
}

func (l *lister) print(r texter) error {
	if l.limit >= 0 && l.printed >= l.limit {
		return nil
	}
	l.printed++
	if l.out.isJSON() {
		return l.enc.Encode(r)
	}
	_, err := io.WriteString(l.w, r.Text())
	return err
}

// summary prints a listing's summary: {"summary": s} or its text.
func (l *lister) summary(s texter) error {
	if l.out.isJSON() {
		return l.enc.Encode(map[string]any{"summary": s})
	}
	_, err := io.WriteString(l.w, s.Text())
	return err
}

func readJournalCmd() *cobra.Command {
	var (
		out   outputFlags
		dir   string
		limit int64
	)
	c := &cobra.Command{
		Use:   "readjournal --dir DIR",
		Short: "List the records of the journal files in a bookie journal directory",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return readJournal(cmd.OutOrStdout(), vfs.NewOS(), dir, limit, &out)
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "journal directory (required)")
	c.Flags().Int64Var(&limit, "limit", -1, "print at most this many records (the scan and summary cover all)")
	c.MarkFlagRequired("dir")
	out.register(c)
	return c
}

func readJournal(w io.Writer, fs vfs.FS, dir string, limit int64, out *outputFlags) error {
	l := newLister(w, out, limit)
	sum, check := tools.ReadJournal(fs, dir, func(r tools.JournalRecord) error { return l.print(r) }, out.progress())
	if sum.ByType == nil {
		return check // the directory could not be listed
	}
	if err := l.summary(sum); err != nil {
		return err
	}
	return check
}

func readEntryLogCmd() *cobra.Command {
	var (
		out         outputFlags
		dir, file   string
		ledger      int64
		limit       int64
		summaryOnly bool
	)
	c := &cobra.Command{
		Use:   "readentrylog (--dir DIR | --file FILE)",
		Short: "List the entries of entry-log files, with per-ledger totals",
		RunE: func(cmd *cobra.Command, _ []string) error {
			fs := vfs.NewOS()
			var files []string
			switch {
			case file != "":
				files = []string{file}
			case dir != "":
				var err error
				if files, err = tools.EntryLogFiles(fs, dir); err != nil {
					return err
				}
			default:
				return errors.New("give --dir or --file")
			}
			return readEntryLogs(cmd.OutOrStdout(), fs, files, ledger, limit, summaryOnly, &out)
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "ledger directory holding *.log files")
	c.Flags().StringVar(&file, "file", "", "one entry-log file")
	c.Flags().Int64Var(&ledger, "ledger", -1, "only this ledger")
	c.Flags().Int64Var(&limit, "limit", -1, "print at most this many entries")
	c.Flags().BoolVar(&summaryOnly, "summary", false, "print only the per-ledger totals")
	out.register(c)
	return c
}

func readEntryLogs(w io.Writer, fs vfs.FS, files []string, ledger, limit int64, summaryOnly bool, out *outputFlags) error {
	l := newLister(w, out, limit)
	var fn func(tools.EntryLogRecord) error
	if !summaryOnly {
		fn = func(r tools.EntryLogRecord) error { return l.print(r) }
	}
	sum, err := tools.ReadEntryLogs(fs, files, ledger, fn, out.progress())
	if err != nil {
		return err
	}
	return l.summary(sum)
}

// dirFlags are the bookie directory flags.
type dirFlags struct {
	journalDir string
	ledgerDirs []string
}

func (d *dirFlags) register(c *cobra.Command, needJournal bool) {
	c.Flags().StringVar(&d.journalDir, "journal-dir", "", "bookie journal directory")
	c.Flags().StringSliceVar(&d.ledgerDirs, "ledger-dirs", nil, "bookie ledger directories (comma separated)")
	c.MarkFlagRequired("ledger-dirs")
	if needJournal {
		c.MarkFlagRequired("journal-dir")
	}
}

func (d *dirFlags) dirs() tools.BookieDirs {
	return tools.BookieDirs{JournalDir: d.journalDir, LedgerDirs: d.ledgerDirs}
}

func rebuildIndexCmd() *cobra.Command {
	var (
		out  outputFlags
		dirs dirFlags
	)
	c := &cobra.Command{
		Use:   "rebuildindex --ledger-dirs DIRS",
		Short: "Rebuild the index from the entry logs (bookie stopped)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := tools.RebuildIndex(dirs.dirs(), out.progress())
			if err != nil {
				return err
			}
			if out.isJSON() {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{"entries": n})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "index rebuilt: %d entries\n", n)
			return nil
		},
	}
	dirs.register(c, false)
	out.register(c)
	return c
}

func ledgerStatsCmd() *cobra.Command {
	var (
		out    outputFlags
		dirs   dirFlags
		ledger int64
	)
	c := &cobra.Command{
		Use:   "ledgerstats --ledger N --journal-dir DIR --ledger-dirs DIRS",
		Short: "Show what a bookie holds of a ledger and where (opens the bookie offline, like a restart)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := tools.LedgerStats(dirs.dirs(), ledger, out.progress())
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if out.isJSON() {
				return json.NewEncoder(w).Encode(s)
			}
			_, err = io.WriteString(w, tools.LedgerStatsText(s))
			return err
		},
	}
	c.Flags().Int64Var(&ledger, "ledger", -1, "ledger id (required)")
	c.MarkFlagRequired("ledger")
	dirs.register(c, true)
	out.register(c)
	return c
}
