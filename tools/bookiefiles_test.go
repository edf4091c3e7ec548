package tools

import (
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// recProgress records what a tool reports.
type recProgress struct {
	total, last int64
	started     int
	finished    int
}

func (p *recProgress) Start(total int64, _ string, _ bool) { p.total = total; p.started++ }
func (p *recProgress) Set(done int64)                      { p.last = done }
func (p *recProgress) Finish()                             { p.finished++ }

// TestReadJournalAndEntryLogs writes entries through a bookie on an
// in-memory file system and lists them back with the offline tools.
func TestReadJournalAndEntryLogs(t *testing.T) {
	fs := vfs.NewMem()
	opts := bookie.Options{FS: fs, JournalDir: "/bk/journal", LedgerDirs: []string{"/bk/ledgers"},
		CheckpointInterval: time.Hour, DiskCheckInterval: -1, GCInterval: -1}
	bk, err := bookie.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	payloads := map[int64]int{1: 3, 2: 2} // ledger -> entries
	for l, n := range payloads {
		for e := range int64(n) {
			ch := make(chan error, 1)
			bk.AddEntry(l, e, []byte("key"), []byte("payload"), false, func(err error) { ch <- err })
			if err := <-ch; err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := bk.Close(); err != nil { // flushes the entry logs
		t.Fatal(err)
	}

	var recs []JournalRecord
	p := &recProgress{}
	sum, err := ReadJournal(fs, "/bk/journal", func(r JournalRecord) error { recs = append(recs, r); return nil }, p)
	if err != nil {
		t.Fatal(err)
	}
	adds := 0
	for _, r := range recs {
		if r.Type == "entry" {
			adds++
		}
	}
	if adds != 5 || sum.Records != int64(len(recs)) || sum.Files == 0 || len(sum.Ends) != sum.Files {
		t.Fatalf("journal: %d adds of %d records, summary %+v", adds, len(recs), sum)
	}
	if p.started != 1 || p.finished != 1 || p.last <= 0 || p.last > p.total {
		t.Fatalf("journal progress %+v", p)
	}

	files, err := EntryLogFiles(fs, "/bk/ledgers")
	if err != nil || len(files) == 0 {
		t.Fatalf("entry log files %v %v", files, err)
	}
	var only []EntryLogRecord
	els, err := ReadEntryLogs(fs, files, 2, func(r EntryLogRecord) error { only = append(only, r); return nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(only) != 2 || len(els.Ledgers) != 1 || els.Ledgers[2].Entries != 2 {
		t.Fatalf("ledger 2 in entry logs: %d records, summary %+v", len(only), els.Ledgers)
	}
	all, err := ReadEntryLogs(fs, files, -1, nil, nil)
	if err != nil || all.Ledgers[1].Entries != 3 || all.Ledgers[2].Entries != 2 {
		t.Fatalf("entry-log totals %+v %v", all.Ledgers, err)
	}
}
