package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/entrylog"
	"github.com/magnetar-mq/magnetar/journal"
	"github.com/magnetar-mq/magnetar/tools"
)

// runMagnetar runs `magnetar args...` and returns its stdout, stderr and
// exit code.
func runMagnetar(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := magnetarCommand(t, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("run magnetar %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// toolKey names one entry.
type toolKey struct{ ledger, entry int64 }

// toolFixture is a real bookie directory written through the bookie API.
type toolFixture struct {
	journalDir, ledgerDir string
	entries               map[toolKey]int // payload length of every entry written
	key                   []byte
}

func toolPayload(l, e int64) []byte {
	n := 10 + int((l*131+e*17)%300)
	return bytes.Repeat([]byte{byte(l*7 + e)}, n)
}

// newToolFixture writes ledgers 1..3 (ledger 2 fenced, ledger 3 with an
// explicit LAC) into a fresh bookie in a temp dir, checkpointing midway so
// that some entries are in the entry logs before the journal's mark, and
// closes it (Close checkpoints again).
func newToolFixture(t *testing.T) *toolFixture {
	t.Helper()
	root := t.TempDir()
	f := &toolFixture{
		journalDir: filepath.Join(root, "journal"),
		ledgerDir:  filepath.Join(root, "ledgers"),
		entries:    map[toolKey]int{},
		key:        []byte("secret"),
	}
	b, err := bookie.Open(bookie.Options{
		JournalDir: f.journalDir, LedgerDirs: []string{f.ledgerDir},
		GCInterval: -1, DiskCheckInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	add := func(l, e int64) {
		ch := make(chan error, 1)
		p := toolPayload(l, e)
		b.AddEntry(l, e, f.key, p, false, func(err error) { ch <- err })
		if err := <-ch; err != nil {
			t.Fatalf("add %d/%d: %v", l, e, err)
		}
		f.entries[toolKey{l, e}] = len(p)
	}
	for l := int64(1); l <= 3; l++ {
		for e := int64(0); e < 20; e++ {
			add(l, e)
		}
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for l := int64(1); l <= 3; l++ {
		for e := int64(20); e < 30; e++ {
			add(l, e)
		}
	}
	if err := b.Fence(2, f.key); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteLAC(3, 25, f.key, []byte("lac-body")); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return f
}

// jsonLines splits the tool's JSON output into its objects.
func jsonLines(t *testing.T, out string) []map[string]json.RawMessage {
	t.Helper()
	var objs []map[string]json.RawMessage
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("output line %q is not JSON: %v", sc.Text(), err)
		}
		objs = append(objs, m)
	}
	return objs
}

func TestShellReadJournal(t *testing.T) {
	f := newToolFixture(t)
	out, errOut, code := runMagnetar(t, "shell", "readjournal", "--dir", f.journalDir, "--json", "-q")
	if code != 0 {
		t.Fatalf("readjournal exit %d: %s", code, errOut)
	}
	objs := jsonLines(t, out)
	got := map[toolKey]int{}
	types := map[string]int{}
	var sum tools.JournalSummary
	for _, o := range objs {
		if raw, ok := o["summary"]; ok {
			if err := json.Unmarshal(raw, &sum); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var r tools.JournalRecord
		b, _ := json.Marshal(o)
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if r.Ledger < 0 {
			t.Errorf("barrier record in a new journal: %+v", r)
		}
		if !strings.HasPrefix(r.File, f.journalDir) || r.Offset < journal.FileHeaderSize {
			t.Errorf("record location %s@%d", r.File, r.Offset)
		}
		types[r.Type]++
		if r.Type == journal.Entry.String() {
			got[toolKey{r.Ledger, r.Entry}] = r.Length
		}
	}
	// The journal keeps everything here (one file, nothing rolled): every
	// entry with its length, one master-key record per ledger, the fence,
	// the explicit LAC.
	if len(got) != len(f.entries) {
		t.Fatalf("journal lists %d entries, wrote %d", len(got), len(f.entries))
	}
	for k, n := range f.entries {
		if got[k] != n {
			t.Fatalf("entry %v: journal length %d, wrote %d", k, got[k], n)
		}
	}
	if types[journal.MasterKey.String()] != 3 || types[journal.Fence.String()] != 1 || types[journal.ExplicitLAC.String()] != 1 {
		t.Fatalf("record types %v", types)
	}
	if sum.Records != int64(len(objs)-1) || sum.Files < 1 {
		t.Fatalf("summary %+v for %d records", sum, len(objs)-1)
	}

	// Corrupt the payload of the first record: a bad checksum followed by
	// valid records is corruption, reported with the path and offset.
	path := filepath.Join(f.journalDir, filepath.Base(firstJournalFile(t, f.journalDir)))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := journal.FileHeaderSize + journal.RecordHeaderSize // first record's payload
	data[off] ^= 0xff
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runMagnetar(t, "shell", "readjournal", "--dir", f.journalDir, "-q")
	if code == 0 {
		t.Fatal("readjournal of a corrupt journal exited 0")
	}
	want := fmt.Sprintf("offset %d", journal.FileHeaderSize)
	if !strings.Contains(errOut, path) || !strings.Contains(errOut, want) || !strings.Contains(errOut, "corrupt") {
		t.Fatalf("readjournal error %q does not name %s and %q", errOut, path, want)
	}
}

func firstJournalFile(t *testing.T, dir string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.txn"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no journal files in %s: %v", dir, err)
	}
	return m[0]
}

func TestShellReadEntryLog(t *testing.T) {
	f := newToolFixture(t)
	out, errOut, code := runMagnetar(t, "shell", "readentrylog", "--dir", f.ledgerDir, "--json", "-q")
	if code != 0 {
		t.Fatalf("readentrylog exit %d: %s", code, errOut)
	}
	objs := jsonLines(t, out)
	got := map[toolKey]int{}
	var firstLoc tools.EntryLogRecord
	type total struct{ Entries, Bytes int64 }
	var summary struct {
		Files   int              `json:"files"`
		Ledgers map[string]total `json:"ledgers"`
	}
	for i, o := range objs {
		if raw, ok := o["summary"]; ok {
			if err := json.Unmarshal(raw, &summary); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var r tools.EntryLogRecord
		b, _ := json.Marshal(o)
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			firstLoc = r
		}
		if _, dup := got[toolKey{r.Ledger, r.Entry}]; dup {
			t.Fatalf("entry %d/%d listed twice", r.Ledger, r.Entry)
		}
		got[toolKey{r.Ledger, r.Entry}] = r.Length
	}
	if len(got) != len(f.entries) {
		t.Fatalf("entry logs list %d entries, wrote %d", len(got), len(f.entries))
	}
	want := map[string]total{}
	for k, n := range f.entries {
		if got[k] != n {
			t.Fatalf("entry %v: length %d in the entry log, wrote %d", k, got[k], n)
		}
		w := want[fmt.Sprint(k.ledger)]
		w.Entries++
		w.Bytes += int64(n)
		want[fmt.Sprint(k.ledger)] = w
	}
	if fmt.Sprint(summary.Ledgers) != fmt.Sprint(want) || summary.Files < 1 {
		t.Fatalf("summary %+v, want ledgers %v", summary, want)
	}

	// Corrupt the first entry's payload: later records are valid, so this
	// is mid-file corruption, reported with the path and offset.
	path := filepath.Join(f.ledgerDir, firstLoc.File)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[int(firstLoc.Offset)+entrylog.RecordHeaderSize] ^= 0xff
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runMagnetar(t, "shell", "readentrylog", "--file", path, "-q")
	if code == 0 {
		t.Fatal("readentrylog of a corrupt log exited 0")
	}
	if wantOff := fmt.Sprintf("off %d", firstLoc.Offset); !strings.Contains(errOut, path) || !strings.Contains(errOut, wantOff) {
		t.Fatalf("readentrylog error %q does not name %s and %q", errOut, path, wantOff)
	}
}

func TestShellLedgerStats(t *testing.T) {
	f := newToolFixture(t)
	dirs := []string{"--journal-dir", f.journalDir, "--ledger-dirs", f.ledgerDir, "--json", "-q"}
	for l := int64(1); l <= 3; l++ {
		out, errOut, code := runMagnetar(t, append([]string{"shell", "ledgerstats", "--ledger", fmt.Sprint(l)}, dirs...)...)
		if code != 0 {
			t.Fatalf("ledgerstats %d exit %d: %s", l, code, errOut)
		}
		var s bookie.LedgerStats
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("ledgerstats output %q: %v", out, err)
		}
		var bytes int64
		for e := int64(0); e < 30; e++ {
			bytes += int64(f.entries[toolKey{l, e}])
		}
		if s.Ledger != l || s.FirstEntry != 0 || s.LastEntry != 29 || s.Entries != 30 || s.Bytes != bytes || s.Missing != 0 {
			t.Fatalf("ledger %d stats %+v, want entries 0..29, 30 present, %d bytes", l, s, bytes)
		}
		if s.MasterKey != fmt.Sprintf("%x", f.key) || s.Fenced != (l == 2) {
			t.Fatalf("ledger %d: master key %q fenced %v", l, s.MasterKey, s.Fenced)
		}
		if (l == 3) != (s.ExplicitLAC != nil) || (s.ExplicitLAC != nil && *s.ExplicitLAC != 25) {
			t.Fatalf("ledger %d explicit LAC %v", l, s.ExplicitLAC)
		}
		var inLogs, logBytes int64
		for _, ls := range s.Logs {
			inLogs += ls.Entries
			logBytes += ls.Bytes
		}
		if inLogs+s.InWriteCache != 30 || len(s.Logs) == 0 {
			t.Fatalf("ledger %d: %d entries in logs %+v, %d in the write cache", l, inLogs, s.Logs, s.InWriteCache)
		}
	}
	_, errOut, code := runMagnetar(t, append([]string{"shell", "ledgerstats", "--ledger", "99"}, dirs...)...)
	if code == 0 {
		t.Fatalf("ledgerstats of an unknown ledger exited 0")
	}
	if !strings.Contains(errOut, "99") {
		t.Fatalf("ledgerstats of an unknown ledger: %q", errOut)
	}
}

func TestShellRebuildIndex(t *testing.T) {
	f := newToolFixture(t)
	if err := os.RemoveAll(filepath.Join(f.ledgerDir, bookie.IndexDir)); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runMagnetar(t, "shell", "rebuildindex", "--ledger-dirs", f.ledgerDir, "--json", "-q")
	if code != 0 {
		t.Fatalf("rebuildindex exit %d: %s", code, errOut)
	}
	var res struct{ Entries int64 }
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("rebuildindex output %q: %v", out, err)
	}
	if res.Entries != int64(len(f.entries)) {
		t.Fatalf("rebuilt %d entries, wrote %d", res.Entries, len(f.entries))
	}
	// The rebuilt index serves every entry byte for byte (metadata comes
	// back from journal replay).
	b, err := bookie.Open(bookie.Options{JournalDir: f.journalDir, LedgerDirs: []string{f.ledgerDir}, GCInterval: -1, DiskCheckInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for k := range f.entries {
		got, err := b.ReadEntry(k.ledger, k.entry)
		if err != nil || !bytes.Equal(got, toolPayload(k.ledger, k.entry)) {
			t.Fatalf("entry %v after rebuild: %d bytes, %v", k, len(got), err)
		}
	}
	// A corrupt entry log fails the rebuild with its path and offset.
	b.Close()
	logs, _ := filepath.Glob(filepath.Join(f.ledgerDir, "*.log"))
	var corrupted string
	for _, p := range logs {
		data, _ := os.ReadFile(p)
		if len(data) > entrylog.HeaderSize+2*entrylog.RecordHeaderSize {
			data[entrylog.HeaderSize+entrylog.RecordHeaderSize] ^= 0xff // first record's payload
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			corrupted = p
			break
		}
	}
	if corrupted == "" {
		t.Fatal("no entry log with records")
	}
	_, errOut, code = runMagnetar(t, "shell", "rebuildindex", "--ledger-dirs", f.ledgerDir, "-q")
	if code == 0 {
		t.Fatal("rebuildindex over a corrupt log exited 0")
	}
	if want := fmt.Sprintf("off %d", entrylog.HeaderSize); !strings.Contains(errOut, corrupted) || !strings.Contains(errOut, want) {
		t.Fatalf("rebuildindex error %q does not name %s and %q", errOut, corrupted, want)
	}
}

// TestShellReadJournalOldBarrier: a journal written by an older bookie,
// with a fence record of ledger -1 as its checkpoint barrier, still reads
// and the barrier is labelled.
func TestShellReadJournalOldBarrier(t *testing.T) {
	f := newToolFixture(t)
	j, err := journal.Open(journal.Options{Dir: f.journalDir})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	j.AppendFunc(journal.Record{Type: journal.Fence, LedgerID: -1, EntryID: -1}, func(_ journal.Position, err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runMagnetar(t, "shell", "readjournal", "--dir", f.journalDir, "--json", "-q")
	if code != 0 {
		t.Fatalf("readjournal exit %d: %s", code, errOut)
	}
	barriers := 0
	for _, o := range jsonLines(t, out) {
		if _, ok := o["summary"]; ok {
			continue
		}
		var r tools.JournalRecord
		b, _ := json.Marshal(o)
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if r.Ledger == -1 {
			barriers++
			if r.Type != journal.Fence.String() || !strings.Contains(r.Note, "barrier") {
				t.Fatalf("old barrier record printed as %+v", r)
			}
		}
	}
	if barriers != 1 {
		t.Fatalf("%d barrier records listed, want 1", barriers)
	}
	// The bookie still opens over it.
	b, err := bookie.Open(bookie.Options{JournalDir: f.journalDir, LedgerDirs: []string{f.ledgerDir}, GCInterval: -1, DiskCheckInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}
