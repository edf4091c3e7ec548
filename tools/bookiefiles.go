package tools

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/entrylog"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/journal"
)

// JournalRecord is one journal record as ReadJournal lists it.
type JournalRecord struct {
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

// Text is the record's listing line.
func (r JournalRecord) Text() string {
	return fmt.Sprintf("%s off=%d seq=%d lag=%d %-12s ledger=%d entry=%d len=%d %s\n",
		filepath.Base(r.File), r.Offset, r.Seq, r.GroupLag, r.Type, r.Ledger, r.Entry, r.Length, r.Note)
}

// JournalSummary totals a journal directory.
type JournalSummary struct {
	Files   int            `json:"files"`
	Records int64          `json:"records"`
	Bytes   int64          `json:"payload_bytes"`
	ByType  map[string]int `json:"by_type"`
	Ends    []string       `json:"ends"` // where and why each file's records end
}

// Text is the summary's lines.
func (s JournalSummary) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d files, %d records, %d payload bytes, by type %v\n", s.Files, s.Records, s.Bytes, s.ByType)
	for _, e := range s.Ends {
		fmt.Fprintln(&b, "  end of", e)
	}
	return b.String()
}

// ReadJournal lists the records of the journal files (*.txn) in dir,
// handing each to fn, and totals them. Each file's listing stops at its
// first invalid record (the summary says where and why); then the
// journal's own reader checks the directory, telling a torn tail (fine)
// from corruption: that error is returned with the summary.
func ReadJournal(fs vfs.FS, dir string, fn func(JournalRecord) error, p Progress) (JournalSummary, error) {
	names, err := fs.List(dir)
	if err != nil {
		return JournalSummary{}, err
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
	sum := JournalSummary{Files: len(files), ByType: map[string]int{}}
	p = orNone(p)
	p.Start(total, "journal", true)
	var done int64
	for _, path := range files {
		end, err := scanJournalFile(fs, path, func(r JournalRecord, size int64) error {
			sum.Records++
			sum.Bytes += int64(r.Length)
			sum.ByType[r.Type]++
			p.Set(done + r.Offset + size)
			return fn(r)
		})
		if err != nil {
			p.Finish()
			return sum, err
		}
		sum.Ends = append(sum.Ends, filepath.Base(path)+": "+end)
		if fi, err := fs.Stat(path); err == nil {
			done += fi.Size()
		}
	}
	p.Finish()
	check := journal.ReplayDir(fs, dir, journal.Position{}, func(journal.Record, journal.Position) error { return nil })
	return sum, check
}

// scanJournalFile decodes the records of one journal file with
// journal.DecodeRecord until the data ends; it returns why it ended.
func scanJournalFile(fs vfs.FS, path string, fn func(JournalRecord, int64) error) (string, error) {
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
		r := JournalRecord{File: path, Offset: off, Seq: seq, GroupLag: lag, Type: rec.Type.String(),
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

// EntryLogFiles lists the entry-log files in a ledger directory.
func EntryLogFiles(fs vfs.FS, dir string) ([]string, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, n := range names {
		if _, ok := entrylog.ParseFileName(n); ok {
			files = append(files, filepath.Join(dir, n))
		}
	}
	return files, nil
}

// EntryLogRecord is one entry of an entry-log file.
type EntryLogRecord struct {
	File     string `json:"file"`
	Location string `json:"location"`
	Offset   uint32 `json:"offset"`
	Ledger   int64  `json:"ledger"`
	Entry    int64  `json:"entry"`
	Length   int    `json:"length"`
}

// Text is the record's listing line.
func (o EntryLogRecord) Text() string {
	return fmt.Sprintf("%s loc=%s ledger=%d entry=%d len=%d\n", o.File, o.Location, o.Ledger, o.Entry, o.Length)
}

// LedgerTotal is one ledger's total in entry logs.
type LedgerTotal struct {
	Entries int64 `json:"entries"`
	Bytes   int64 `json:"bytes"`
}

// EntryLogSummary totals entry-log files per ledger.
type EntryLogSummary struct {
	Files   int                    `json:"files"`
	Ledgers map[int64]*LedgerTotal `json:"ledgers"`
}

// Text is the summary's lines, ledgers in id order.
func (s EntryLogSummary) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d files, %d ledgers\n", s.Files, len(s.Ledgers))
	for _, l := range slices.Sorted(maps.Keys(s.Ledgers)) {
		fmt.Fprintf(&b, "  ledger %d: %d entries, %d bytes\n", l, s.Ledgers[l].Entries, s.Ledgers[l].Bytes)
	}
	return b.String()
}

// ReadEntryLogs scans entry-log files with the entry log's own reader,
// handing each entry (of ledger only, when ledger >= 0) to fn (nil: none)
// and totalling them per ledger.
func ReadEntryLogs(fs vfs.FS, files []string, ledger int64, fn func(EntryLogRecord) error, p Progress) (EntryLogSummary, error) {
	var total int64
	for _, f := range files {
		if fi, err := fs.Stat(f); err == nil {
			total += fi.Size()
		}
	}
	sum := EntryLogSummary{Files: len(files), Ledgers: map[int64]*LedgerTotal{}}
	p = orNone(p)
	p.Start(total, "entry logs", true)
	defer p.Finish()
	var done int64
	for _, path := range files {
		err := entrylog.ScanFile(fs, path, func(r entrylog.Record) error {
			_, off := entrylog.SplitLocation(r.Loc)
			p.Set(done + int64(off))
			if ledger >= 0 && r.Ledger != ledger {
				return nil
			}
			t := sum.Ledgers[r.Ledger]
			if t == nil {
				t = &LedgerTotal{}
				sum.Ledgers[r.Ledger] = t
			}
			t.Entries++
			t.Bytes += int64(len(r.Payload))
			if fn == nil {
				return nil
			}
			return fn(EntryLogRecord{File: filepath.Base(path), Location: fmt.Sprintf("%#x", r.Loc), Offset: off,
				Ledger: r.Ledger, Entry: r.Entry, Length: len(r.Payload)})
		})
		if err != nil {
			return sum, fmt.Errorf("%s: %w", path, err)
		}
		if fi, err := fs.Stat(path); err == nil {
			done += fi.Size()
		}
	}
	return sum, nil
}

// BookieDirs are a stopped bookie's directories.
type BookieDirs struct {
	JournalDir string
	LedgerDirs []string
}

func (d BookieDirs) options() bookie.Options {
	o := bookie.Options{JournalDir: d.JournalDir, LedgerDirs: d.LedgerDirs, GCInterval: -1, DiskCheckInterval: -1}
	if o.JournalDir == "" {
		o.JournalDir = filepath.Join(os.TempDir(), "magnetar-unused-journal")
	}
	return o
}

// RebuildIndex rebuilds a stopped bookie's index from its entry logs and
// returns the number of entries indexed.
func RebuildIndex(d BookieDirs, p Progress) (int64, error) {
	p = orNone(p)
	p.Start(-1, "rebuilding index", false)
	defer p.Finish()
	return bookie.RebuildIndex(d.options(), p.Set)
}

// LedgerStats opens a stopped bookie offline (as a restart does) and
// reports what it holds of ledger id and where.
func LedgerStats(d BookieDirs, id int64, p Progress) (s bookie.LedgerStats, err error) {
	b, err := bookie.Open(d.options())
	if err != nil {
		return s, err
	}
	defer func() {
		if cerr := b.Close(); err == nil {
			err = cerr
		}
	}()
	p = orNone(p)
	started := false
	s, err = b.LedgerStats(id, func(done, total int64) {
		if !started {
			p.Start(total, fmt.Sprintf("ledger %d", id), false)
			started = true
		}
		p.Set(done)
	})
	if started {
		p.Finish()
	}
	if err != nil {
		err = fmt.Errorf("ledger %d: %w", id, err)
	}
	return s, err
}

// LedgerStatsText describes s.
func LedgerStatsText(s bookie.LedgerStats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ledger %d: fenced=%v master key %s\n", s.Ledger, s.Fenced, s.MasterKey)
	if s.ExplicitLAC != nil {
		fmt.Fprintf(&b, "  explicit LAC %d\n", *s.ExplicitLAC)
	}
	fmt.Fprintf(&b, "  entries %d..%d: %d present (%d bytes), %d missing, %d still in the write cache\n",
		s.FirstEntry, s.LastEntry, s.Entries, s.Bytes, s.Missing, s.InWriteCache)
	for _, l := range s.Logs {
		fmt.Fprintf(&b, "  %s: %d entries, %d bytes\n", l.File, l.Entries, l.Bytes)
	}
	return b.String()
}
