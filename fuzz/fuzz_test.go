package fuzz

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/internal/fuzzpatch"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// Cross-package fuzz targets: a whole bookie opened over arbitrary journal
// or entry-log bytes. Seeds: the golden files of journal/testdata and
// entrylog/testdata (copied into testdata/fuzz/<target>/) and the files of
// a real bookie built in f's setup.

const (
	fzJournalDir = "/bk/journal"
	fzLedgerDir  = "/bk/ledgers"
	fzJournal    = "0000000000000001.txn"
	fzEntryLog   = "00000001.log"
)

func fuzzOptions(fs vfs.FS) bookie.Options {
	return bookie.Options{
		FS:                   fs,
		JournalDir:           fzJournalDir,
		LedgerDirs:           []string{fzLedgerDir},
		JournalMaxGroupWait:  -1,
		WriteCacheSize:       256 << 10,
		CheckpointInterval:   time.Hour,
		DiskCheckInterval:    -1,
		GCInterval:           -1,
		IndexSlotsPerPage:    16,
		IndexPagesPerSegment: 16,
	}
}

func writeMemFile(tb testing.TB, fs vfs.FS, name string, b []byte) {
	tb.Helper()
	if err := fs.MkdirAll(path.Dir(name), 0o755); err != nil {
		tb.Fatal(err)
	}
	f, err := fs.Create(name)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		tb.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

func readMemFile(tb testing.TB, fs vfs.FS, name string) []byte {
	tb.Helper()
	f, err := fs.Open(name)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		tb.Fatal(err)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		tb.Fatal(err)
	}
	return b
}

// realBookieFiles runs a small bookie (adds to three ledgers, a fence, an
// explicit LAC, a checkpoint half way) and returns a crash clone's first
// journal file, its lastMark and its first entry log.
func realBookieFiles(tb testing.TB) (journal, mark, entryLog []byte) {
	tb.Helper()
	fs := vfs.NewMem()
	b, err := bookie.Open(fuzzOptions(fs))
	if err != nil {
		tb.Fatal(err)
	}
	add := func(l, e int64) {
		ch := make(chan error, 1)
		b.AddEntry(l, e, masterKey(l), payloadFor(7, l, e)[:min(200, len(payloadFor(7, l, e)))], false, func(err error) { ch <- err })
		if err := <-ch; err != nil {
			tb.Fatal(err)
		}
	}
	for e := range int64(4) {
		add(1, e)
		add(2, e)
	}
	if err := b.Checkpoint(); err != nil {
		tb.Fatal(err)
	}
	for e := range int64(3) {
		add(3, e)
		add(1, 4+e)
	}
	if err := b.Fence(2, masterKey(2)); err != nil {
		tb.Fatal(err)
	}
	if err := b.WriteLAC(3, 1, masterKey(3), []byte("lac body")); err != nil {
		tb.Fatal(err)
	}
	clone := fs.CrashClone()
	if err := b.Close(); err != nil {
		tb.Fatal(err)
	}
	jf, err := clone.List(fzJournalDir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, n := range jf {
		if strings.HasSuffix(n, ".txn") && journal == nil {
			journal = readMemFile(tb, clone, path.Join(fzJournalDir, n))
		}
		if n == "lastMark" {
			mark = readMemFile(tb, clone, path.Join(fzJournalDir, n))
		}
	}
	lf, err := clone.List(fzLedgerDir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, n := range lf {
		if strings.HasSuffix(n, ".log") && entryLog == nil {
			entryLog = readMemFile(tb, clone, path.Join(fzLedgerDir, n))
		}
	}
	if journal == nil || entryLog == nil {
		tb.Fatalf("real bookie left journal files %v and ledger files %v", jf, lf)
	}
	return journal, mark, entryLog
}

// withDeadline runs fn and fails the test if it has not returned in 20 s
// (fuzzing has no per-input timeout of its own).
func withDeadline(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s hangs (20 s)", what)
	}
}

// bookieState describes what an open bookie serves: ledgers, fenced flags,
// explicit LACs and up to 64 entries per ledger (as lengths and a few
// bytes). Read errors other than no-entry are reported by name.
func bookieState(b *bookie.Bookie) string {
	var s strings.Builder
	ls, err := b.ListLedgers()
	fmt.Fprintf(&s, "ledgers %v %v\n", ls, err)
	for i, l := range ls {
		if i == 16 {
			break
		}
		fenced, err := b.IsFenced(l)
		lac, body, lerr := b.ReadLAC(l)
		last, lastErr := b.LastEntry(l)
		fmt.Fprintf(&s, "%d: fenced %v %v lac %d %q %s last %d %s:", l, fenced, errName(err), lac, body, errName(lerr), last, errName(lastErr))
		if lastErr != nil {
			last = -1
		}
		for e := int64(0); e <= min(last, 63); e++ {
			p, err := b.ReadEntry(l, e)
			if err != nil {
				fmt.Fprintf(&s, " %d:%s", e, errName(err))
				continue
			}
			fmt.Fprintf(&s, " %d:%d/%x", e, len(p), p[:min(4, len(p))])
		}
		s.WriteByte('\n')
	}
	return s.String()
}

// FuzzBookieJournalReplay writes arbitrary bytes as the journal file (and
// optionally a lastMark) of an otherwise empty bookie: Open returns an
// error or opens, never panics or hangs; a bookie that opened serves its
// reads, checkpoints, closes, and reopens serving the same state.
func FuzzBookieJournalReplay(f *testing.F) {
	j, mark, _ := realBookieFiles(f)
	f.Add(j, mark)
	f.Add(j, []byte(nil))
	f.Add(j[:len(j)*2/3], mark)
	flipped := bytes.Clone(j)
	flipped[len(flipped)/2] ^= 0x10
	f.Add(flipped, []byte(nil))
	f.Fuzz(func(t *testing.T, journal, mark []byte) {
		fs := vfs.NewMem()
		writeMemFile(t, fs, path.Join(fzJournalDir, fzJournal), journal)
		if len(mark) > 0 {
			writeMemFile(t, fs, path.Join(fzJournalDir, "lastMark"), mark)
		}
		var b *bookie.Bookie
		var err error
		withDeadline(t, "Open", func() { b, err = bookie.Open(fuzzOptions(fs)) })
		if err != nil {
			return
		}
		var first, second string
		withDeadline(t, "reads, checkpoint and close", func() {
			first = bookieState(b)
			if err := b.Checkpoint(); err != nil {
				t.Errorf("Checkpoint after a successful Open = %v", err)
			}
			if err := b.Close(); err != nil {
				t.Errorf("Close = %v", err)
			}
		})
		withDeadline(t, "reopen", func() {
			b, err = bookie.Open(fuzzOptions(fs))
			if err != nil {
				t.Fatalf("reopen after a successful open and close = %v", err)
			}
			second = bookieState(b)
			b.Close()
		})
		if first != second {
			t.Fatalf("state changed across a clean reopen:\nfirst:\n%s\nsecond:\n%s", first, second)
		}
	})
}

// FuzzEntryLogDirOpen puts a variant of a real entry log in the ledger
// directory: RebuildIndex (if rebuild) and Open return errors or succeed,
// never panic or hang; an opened bookie serves every entry its rebuilt
// index points at (the scan verified their checksums), GC runs, and
// LedgerStats describes each ledger.
//
// The input is a short patch program (internal/fuzzpatch: truncation, XOR
// patches at any offset, a raw tail) applied to the entry log of a small
// real bookie or to the golden v1 log: whole-file inputs made every new
// input cost a minute of minimization (25 execs in 3 minutes at the
// default settings).
func FuzzEntryLogDirOpen(f *testing.F) {
	_, _, real := realBookieFiles(f)
	golden, err := os.ReadFile("../entrylog/testdata/00000001.log")
	if err != nil {
		f.Fatal(err)
	}
	bases := [][]byte{real, golden}
	f.Add(byte(0), []byte(nil), true)
	f.Add(byte(0), []byte(nil), false)
	f.Add(byte(1), []byte(nil), true)
	f.Add(byte(0), []byte{fuzzpatch.Truncate | 64}, true)
	f.Add(byte(0), fuzzpatch.Program(0, fuzzpatch.Patch(uint16(len(real)*3/4), 0x01)), true)
	f.Add(byte(1), fuzzpatch.Program(0, fuzzpatch.Patch(40, 0x80)), false)
	f.Fuzz(func(t *testing.T, which byte, prog []byte, rebuild bool) {
		log := fuzzpatch.Apply(bases[int(which)%len(bases)], prog)
		fs := vfs.NewMem()
		writeMemFile(t, fs, path.Join(fzLedgerDir, fzEntryLog), log)
		rebuilt := false
		if rebuild {
			withDeadline(t, "RebuildIndex", func() {
				_, err := bookie.RebuildIndex(fuzzOptions(fs), nil)
				rebuilt = err == nil
			})
		}
		var b *bookie.Bookie
		var err error
		withDeadline(t, "Open", func() { b, err = bookie.Open(fuzzOptions(fs)) })
		if err != nil {
			return
		}
		withDeadline(t, "reads, GC, stats and close", func() {
			defer b.Close()
			ls, _ := b.ListLedgers()
			for i, l := range ls {
				if i == 16 {
					break
				}
				last, err := b.LastEntry(l)
				if err != nil {
					continue
				}
				for e := int64(0); e <= min(last, 63); e++ {
					_, err := b.ReadEntry(l, e)
					if rebuilt && err != nil && !errors.Is(err, bookie.ErrNoEntry) {
						t.Errorf("entry %d/%d of a rebuilt index: ReadEntry = %v", l, e, err)
					}
				}
				_, _ = b.LedgerStats(l, nil)
			}
			_ = b.GC()
		})
	})
}

// The journal golden file seeds FuzzBookieJournalReplay's corpus as a
// copy in testdata/fuzz (see FUZZ_NOTES.md). This checks the copy still
// matches the original, so a format change updates both.
// (FuzzEntryLogDirOpen reads its golden file directly.)
func TestSeedCorporaMatchGoldenFiles(t *testing.T) {
	for _, c := range []struct{ golden, corpus string }{
		{"../journal/testdata/journal-v1.golden", "testdata/fuzz/FuzzBookieJournalReplay/golden-journal-v1"},
	} {
		g, err := os.ReadFile(c.golden)
		if err != nil {
			t.Fatal(err)
		}
		corpus, err := os.ReadFile(c.corpus)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(corpus, []byte(fmt.Sprintf("[]byte(%q)", g))) {
			t.Errorf("%s does not hold %s: regenerate it (FUZZ_NOTES.md)", c.corpus, c.golden)
		}
	}
}
