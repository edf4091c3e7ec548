package main

// Ops tools over a bookie's directories (magnetar shell readjournal,
// readentrylog, rebuildindex, ledgerstats). They use the storage packages'
// own decoders and readers. Long scans draw a progress bar on stderr;
// --json (or -o json) prints JSON on stdout.

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/entrylog"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/journal"
)

// outputFlags are shared by the bookie tools.
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

func (o *outputFlags) bar(total int64, desc string, bytes bool) *progressbar.ProgressBar {
	if o.quiet {
		return progressbar.DefaultSilent(total)
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionThrottle(100_000_000),
		progressbar.OptionClearOnFinish(),
	}
	if bytes {
		opts = append(opts, progressbar.OptionShowBytes(true))
	} else {
		opts = append(opts, progressbar.OptionShowCount())
	}
	return progressbar.NewOptions64(total, opts...)
}

func init() {
	shellCmd.AddCommand(readJournalCmd(), readEntryLogCmd(), rebuildIndexCmd(), ledgerStatsCmd())
}

// journalRecordOut is one journal record as printed.
type journalRecordOut struct {
	File     string `json:"file"`
	Offset   int64  `json:"offset"`
	Seq      uint64 `json:"seq"`
	GroupLag uint32 `json:"group_lag"`
	Type     string `json:"type"`
	Ledger   int64  `json:"ledger"`
	Entry    int64  `json:"entry"`
	Length   int    `json:"length"`
	Note     string `json:"note,omitempty"`
}

type journalSummary struct {
	Files   int            `json:"files"`
	Records int64          `json:"records"`
	Bytes   int64          `json:"payload_bytes"`
	ByType  map[string]int `json:"by_type"`
	Ends    []string       `json:"ends"` // where and why each file's records end
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
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	var files []string
	var total int64
	for _, n := range names {
		if strings.HasSuffix(n, ".txn") {
			files = append(files, filepath.Join(dir, n))
			if fi, err := fs.Stat(filepath.Join(dir, n)); err == nil {
				total += fi.Size()
			}
		}
	}
	sum := journalSummary{Files: len(files), ByType: map[string]int{}}
	bar := out.bar(total, "journal", true)
	enc := json.NewEncoder(w)
	printed := int64(0)
	var done int64
	for _, path := range files {
		end, err := scanJournalFile(fs, path, func(r journalRecordOut, size int64) error {
			sum.Records++
			sum.Bytes += int64(r.Length)
			sum.ByType[r.Type]++
			bar.Set64(done + r.Offset + size)
			if limit >= 0 && printed >= limit {
				return nil
			}
			printed++
			if out.isJSON() {
				return enc.Encode(r)
			}
			_, err := fmt.Fprintf(w, "%s off=%d seq=%d lag=%d %-12s ledger=%d entry=%d len=%d %s\n",
				filepath.Base(r.File), r.Offset, r.Seq, r.GroupLag, r.Type, r.Ledger, r.Entry, r.Length, r.Note)
			return err
		})
		if err != nil {
			return err
		}
		sum.Ends = append(sum.Ends, filepath.Base(path)+": "+end)
		if fi, err := fs.Stat(path); err == nil {
			done += fi.Size()
		}
	}
	bar.Finish()
	// The listing stops each file at its first invalid record; the
	// journal's own reader tells a torn tail (fine) from corruption (an
	// error naming the file and offset).
	check := journal.ReplayDir(fs, dir, journal.Position{}, func(journal.Record, journal.Position) error { return nil })
	if out.isJSON() {
		if err := json.NewEncoder(w).Encode(map[string]any{"summary": sum}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "%d files, %d records, %d payload bytes, by type %v\n", sum.Files, sum.Records, sum.Bytes, sum.ByType)
		for _, e := range sum.Ends {
			fmt.Fprintln(w, "  end of", e)
		}
	}
	return check
}

// scanJournalFile decodes the records of one journal file with
// journal.DecodeRecord until the data ends; it returns why it ended.
func scanJournalFile(fs vfs.FS, path string, fn func(journalRecordOut, int64) error) (string, error) {
	f, err := fs.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	off := int64(journal.FileHeaderSize)
	hdr := make([]byte, journal.RecordHeaderSize)
	var buf []byte
	for {
		n, err := f.ReadAt(hdr, off)
		if n < len(hdr) {
			if err != nil && !errors.Is(err, io.EOF) {
				return "", err
			}
			return fmt.Sprintf("end of file at offset %d", off), nil
		}
		if allZero(hdr) {
			return fmt.Sprintf("zeros (preallocated space) at offset %d", off), nil
		}
		length := int64(binary.LittleEndian.Uint32(hdr[4:8]))
		if length > journal.MaxPayloadSize {
			return fmt.Sprintf("invalid record length %d at offset %d", length, off), nil
		}
		size := int64(journal.RecordHeaderSize) + length
		buf = append(buf[:0], make([]byte, size)...)
		if n, err := f.ReadAt(buf, off); int64(n) < size {
			if err != nil && !errors.Is(err, io.EOF) {
				return "", err
			}
			return fmt.Sprintf("short record at offset %d (torn tail)", off), nil
		}
		_, seq, lag, rec, err := journal.DecodeRecord(buf)
		if err != nil {
			return fmt.Sprintf("invalid record at offset %d: %v", off, err), nil
		}
		r := journalRecordOut{File: path, Offset: off, Seq: seq, GroupLag: lag, Type: rec.Type.String(),
			Ledger: rec.LedgerID, Entry: rec.EntryID, Length: len(rec.Payload)}
		if rec.LedgerID < 0 {
			r.Note = "(checkpoint barrier record written by older bookies; skipped by replay)"
		}
		if err := fn(r, size); err != nil {
			return "", err
		}
		off += size
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

type entryLogRecordOut struct {
	File     string `json:"file"`
	Location string `json:"location"`
	Offset   uint32 `json:"offset"`
	Ledger   int64  `json:"ledger"`
	Entry    int64  `json:"entry"`
	Length   int    `json:"length"`
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
				names, err := fs.List(dir)
				if err != nil {
					return err
				}
				for _, n := range names {
					if _, ok := entrylog.ParseFileName(n); ok {
						files = append(files, filepath.Join(dir, n))
					}
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
	var total int64
	for _, f := range files {
		if fi, err := fs.Stat(f); err == nil {
			total += fi.Size()
		}
	}
	type ledgerTotal struct {
		Entries int64 `json:"entries"`
		Bytes   int64 `json:"bytes"`
	}
	totals := map[int64]*ledgerTotal{}
	bar := out.bar(total, "entry logs", true)
	enc := json.NewEncoder(w)
	var done, printed int64
	for _, path := range files {
		err := entrylog.ScanFile(fs, path, func(r entrylog.Record) error {
			_, off := entrylog.SplitLocation(r.Loc)
			bar.Set64(done + int64(off))
			if ledger >= 0 && r.Ledger != ledger {
				return nil
			}
			t := totals[r.Ledger]
			if t == nil {
				t = &ledgerTotal{}
				totals[r.Ledger] = t
			}
			t.Entries++
			t.Bytes += int64(len(r.Payload))
			if summaryOnly || (limit >= 0 && printed >= limit) {
				return nil
			}
			printed++
			o := entryLogRecordOut{File: filepath.Base(path), Location: fmt.Sprintf("%#x", r.Loc), Offset: off,
				Ledger: r.Ledger, Entry: r.Entry, Length: len(r.Payload)}
			if out.isJSON() {
				return enc.Encode(o)
			}
			_, err := fmt.Fprintf(w, "%s loc=%s ledger=%d entry=%d len=%d\n", o.File, o.Location, o.Ledger, o.Entry, o.Length)
			return err
		})
		if err != nil {
			bar.Finish()
			return fmt.Errorf("%s: %w", path, err)
		}
		if fi, err := fs.Stat(path); err == nil {
			done += fi.Size()
		}
	}
	bar.Finish()
	if out.isJSON() {
		m := map[string]*ledgerTotal{}
		for l, t := range totals {
			m[fmt.Sprint(l)] = t
		}
		return enc.Encode(map[string]any{"summary": map[string]any{"files": len(files), "ledgers": m}})
	}
	fmt.Fprintf(w, "%d files, %d ledgers\n", len(files), len(totals))
	for _, l := range slices.Sorted(maps.Keys(totals)) {
		fmt.Fprintf(w, "  ledger %d: %d entries, %d bytes\n", l, totals[l].Entries, totals[l].Bytes)
	}
	return nil
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

func (d *dirFlags) options() bookie.Options {
	o := bookie.Options{JournalDir: d.journalDir, LedgerDirs: d.ledgerDirs, GCInterval: -1, DiskCheckInterval: -1}
	if o.JournalDir == "" {
		o.JournalDir = filepath.Join(os.TempDir(), "magnetar-unused-journal")
	}
	return o
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
			bar := out.bar(-1, "rebuilding index", false)
			n, err := bookie.RebuildIndex(dirs.options(), func(entries int64) { bar.Set64(entries) })
			bar.Finish()
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
			b, err := bookie.Open(dirs.options())
			if err != nil {
				return err
			}
			var bar *progressbar.ProgressBar
			s, err := b.LedgerStats(ledger, func(done, total int64) {
				if bar == nil {
					bar = out.bar(total, fmt.Sprintf("ledger %d", ledger), false)
				}
				bar.Set64(done)
			})
			if bar != nil {
				bar.Finish()
			}
			if err != nil {
				err = fmt.Errorf("ledger %d: %w", ledger, err)
			}
			if cerr := b.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if out.isJSON() {
				return json.NewEncoder(w).Encode(s)
			}
			fmt.Fprintf(w, "ledger %d: fenced=%v master key %s\n", s.Ledger, s.Fenced, s.MasterKey)
			if s.ExplicitLAC != nil {
				fmt.Fprintf(w, "  explicit LAC %d\n", *s.ExplicitLAC)
			}
			fmt.Fprintf(w, "  entries %d..%d: %d present (%d bytes), %d missing, %d still in the write cache\n",
				s.FirstEntry, s.LastEntry, s.Entries, s.Bytes, s.Missing, s.InWriteCache)
			for _, l := range s.Logs {
				fmt.Fprintf(w, "  %s: %d entries, %d bytes\n", l.File, l.Entries, l.Bytes)
			}
			return nil
		},
	}
	c.Flags().Int64Var(&ledger, "ledger", -1, "ledger id (required)")
	c.MarkFlagRequired("ledger")
	dirs.register(c, true)
	out.register(c)
	return c
}
