package journal

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

const testDir = "/j"

func testOptions(fs vfs.FS) Options {
	o := DefaultOptions(testDir)
	o.FS = fs
	o.MaxGroupWait = 0
	o.PreallocSize = 64 << 10
	return o
}

func mustOpen(t testing.TB, o Options) *Journal {
	t.Helper()
	j, err := Open(o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return j
}

// appendAll appends recs (without waiting in between) and waits for all
// completions, which must succeed in order.
func appendAll(t testing.TB, j *Journal, recs []Record) []Position {
	t.Helper()
	type res struct {
		i   int
		pos Position
		err error
	}
	ch := make(chan res, len(recs))
	for i, r := range recs {
		j.AppendFunc(r, func(p Position, err error) { ch <- res{i, p, err} })
	}
	pos := make([]Position, len(recs))
	for k := range recs {
		r := <-ch
		if r.err != nil || r.i != k {
			t.Fatalf("completion %d: record %d err %v", k, r.i, r.err)
		}
		pos[k] = r.pos
	}
	return pos
}

// replayAll returns what Replay yields from from.
func replayAll(t testing.TB, j *Journal, from Position) ([]Record, []Position) {
	t.Helper()
	var recs []Record
	var pos []Position
	err := j.Replay(from, func(r Record, p Position) error {
		r.Payload = bytes.Clone(r.Payload)
		recs, pos = append(recs, r), append(pos, p)
		return nil
	})
	if err != nil {
		t.Fatalf("Replay(%v): %v", from, err)
	}
	return recs, pos
}

func makeRecords(n, size int, salt int64) []Record {
	types := []RecordType{Entry, Entry, Entry, MasterKey, Fence, ExplicitLAC}
	recs := make([]Record, n)
	for i := range recs {
		p := make([]byte, size+i%7)
		for k := range p {
			p[k] = byte(int64(i*31+k) + salt)
		}
		recs[i] = Record{Type: types[i%len(types)], LedgerID: salt + int64(i%3), EntryID: int64(i), Payload: p}
	}
	return recs
}

func sameRecords(t testing.TB, got, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Type != w.Type || g.LedgerID != w.LedgerID || g.EntryID != w.EntryID || !bytes.Equal(g.Payload, w.Payload) {
			t.Fatalf("record %d = %v/%d/%d/%d bytes, want %v/%d/%d/%d bytes", i,
				g.Type, g.LedgerID, g.EntryID, len(g.Payload), w.Type, w.LedgerID, w.EntryID, len(w.Payload))
		}
	}
}

func TestAppendReplayReopen(t *testing.T) {
	fs := vfs.NewMem()
	j := mustOpen(t, testOptions(fs))
	if !j.Durable() {
		t.Fatal("Durable() = false by default")
	}
	recs := makeRecords(200, 50, 1)
	pos := appendAll(t, j, recs)
	got, gpos := replayAll(t, j, Position{})
	sameRecords(t, got, recs)
	if !slices.Equal(gpos, pos) {
		t.Fatalf("replay positions differ from completion positions")
	}
	// Replay from a position yields exactly the records after it.
	got, _ = replayAll(t, j, pos[99])
	sameRecords(t, got, recs[100:])
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopen: a new file, old records still replay; appends continue.
	j = mustOpen(t, testOptions(fs))
	got, _ = replayAll(t, j, Position{})
	sameRecords(t, got, recs)
	more := makeRecords(10, 3000, 2)
	pos2 := appendAll(t, j, more)
	if pos2[0].FileID != pos[0].FileID+1 {
		t.Fatalf("reopened journal appends to file %x, want %x", pos2[0].FileID, pos[0].FileID+1)
	}
	got, _ = replayAll(t, j, Position{})
	sameRecords(t, got, append(slices.Clone(recs), more...))
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j.AppendFunc(recs[0], func(_ Position, err error) {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("append after close: %v, want ErrClosed", err)
		}
	})
}

func TestAppendInvalid(t *testing.T) {
	j := mustOpen(t, testOptions(vfs.NewMem()))
	defer j.Close()
	var errs []error
	j.AppendFunc(Record{Type: 0}, func(_ Position, err error) { errs = append(errs, err) })
	j.AppendFunc(Record{Type: typeMark}, func(_ Position, err error) { errs = append(errs, err) })
	j.AppendFunc(Record{Type: Entry, Payload: make([]byte, MaxPayloadSize+1)}, func(_ Position, err error) { errs = append(errs, err) })
	if len(errs) != 3 || !errors.Is(errs[0], ErrInvalidType) || !errors.Is(errs[1], ErrInvalidType) || !errors.Is(errs[2], ErrTooLarge) {
		t.Fatalf("errors = %v", errs)
	}
}

func TestRollAndCheckpoint(t *testing.T) {
	fs := vfs.NewMem()
	o := testOptions(fs)
	o.MaxFileSize = 4 << 10
	o.MaxBackups = 2
	j := mustOpen(t, o)
	var recs []Record
	var pos []Position
	for i := range 40 {
		r := makeRecords(3, 300, int64(i))
		recs = append(recs, r...)
		pos = append(pos, appendAll(t, j, r)...)
	}
	ids, _ := listFiles(fs, testDir)
	if len(ids) < 8 {
		t.Fatalf("%d files after 40 groups with MaxFileSize 4 KiB", len(ids))
	}
	for _, id := range ids {
		fi, _ := fs.Stat(path.Join(testDir, fileName(id)))
		if fi.Size() > o.MaxFileSize+2000 {
			t.Fatalf("file %x is %d bytes", id, fi.Size())
		}
	}
	got, _ := replayAll(t, j, Position{})
	sameRecords(t, got, recs)

	mark := pos[80]
	if err := j.Checkpoint(mark); err != nil {
		t.Fatal(err)
	}
	if j.LastMark() != mark {
		t.Fatalf("LastMark = %v, want %v", j.LastMark(), mark)
	}
	left, _ := listFiles(fs, testDir)
	var before int
	for _, id := range left {
		if id < mark.FileID {
			before++
		}
	}
	if before != 2 {
		t.Fatalf("%d files before the mark kept, want MaxBackups=2 (files %v, mark %v)", before, left, mark)
	}
	got, _ = replayAll(t, j, mark)
	sameRecords(t, got, recs[81:])
	// An older mark is ignored; a mark past the end is refused.
	if err := j.Checkpoint(pos[3]); err != nil || j.LastMark() != mark {
		t.Fatalf("older checkpoint: %v, mark %v", err, j.LastMark())
	}
	if err := j.Checkpoint(Position{FileID: 1 << 40}); err == nil {
		t.Fatal("checkpoint past the end succeeded")
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopen reads the mark and scans only from it.
	j = mustOpen(t, o)
	defer j.Close()
	if j.LastMark() != mark {
		t.Fatalf("reopened LastMark = %v, want %v", j.LastMark(), mark)
	}
	got, _ = replayAll(t, j, j.LastMark())
	sameRecords(t, got, recs[81:])
	if err := j.Replay(Position{FileID: 1, Offset: FileHeaderSize}, func(Record, Position) error { return nil }); !errors.Is(err, ErrMarkNotFound) {
		t.Fatalf("Replay from a removed file = %v, want ErrMarkNotFound", err)
	}
}

// journalFile returns the path and content of the only/first journal file.
func journalFile(t testing.TB, fs vfs.FS, idx int) (string, []byte) {
	t.Helper()
	ids, err := listFiles(fs, testDir)
	if err != nil || len(ids) <= idx {
		t.Fatalf("listFiles = %v, %v", ids, err)
	}
	p := path.Join(testDir, fileName(ids[idx]))
	return p, readFile(t, fs, p)
}

func readFile(t testing.TB, fs vfs.FS, p string) []byte {
	t.Helper()
	f, err := fs.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil && len(b) > 0 {
		t.Fatal(err)
	}
	return b
}

func writeFile(t testing.TB, fs vfs.FS, p string, b []byte) {
	t.Helper()
	f, err := fs.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// writeGroups writes a journal file by hand from groups of records:
// header (id 1, base seq 1) then each group's records with their lags.
func writeGroups(groups ...[]Record) (b []byte, offs []int64) {
	b = appendFileHeader(nil, fileHeader{FileID: 1, BaseSeq: 1})
	seq := uint64(1)
	for _, g := range groups {
		for i, r := range g {
			offs = append(offs, int64(len(b)))
			b = AppendRecord(b, seq, uint32(i), r)
			seq++
		}
	}
	return b, offs
}

func TestTornTailAndCorruption(t *testing.T) {
	rec := func(i int) Record {
		return Record{Type: Entry, LedgerID: 1, EntryID: int64(i), Payload: bytes.Repeat([]byte{byte(i)}, 100)}
	}
	g1 := []Record{rec(1), rec(2), rec(3)}
	g2 := []Record{rec(4), rec(5), rec(6)}
	base, offs := writeGroups(g1, g2)
	recLen := int64(RecordHeaderSize + 100)
	for _, tc := range []struct {
		name    string
		mutate  func(b []byte) []byte
		want    int   // records replayed after a successful open
		wantOff int64 // -1: open succeeds; else ErrCorrupt at this offset
	}{
		{"clean", func(b []byte) []byte { return b }, 6, -1},
		{"short last record", func(b []byte) []byte { return b[:len(b)-30] }, 5, -1},
		{"short last header", func(b []byte) []byte { return b[:offs[5]+10] }, 5, -1},
		{"zeros after", func(b []byte) []byte { return append(b, make([]byte, 5000)...) }, 6, -1},
		{"garbage after", func(b []byte) []byte { return append(b, bytes.Repeat([]byte{0xa5}, 5000)...) }, 6, -1},
		{"bad crc last record", func(b []byte) []byte { b[offs[5]+60] ^= 1; return b }, 5, -1},
		{"zeroed last record then zeros", func(b []byte) []byte {
			clear(b[offs[5]:])
			return append(b, make([]byte, 1000)...)
		}, 5, -1},
		// Same group, out-of-order persistence: record 5 torn, 6 intact.
		{"torn inside last group", func(b []byte) []byte { b[offs[4]+50] ^= 0xff; return b }, 4, -1},
		// Damage in group 1 while group 2 is intact: group 1 was synced.
		{"bad crc before later group", func(b []byte) []byte { b[offs[1]+50] ^= 0xff; return b }, 0, offs[1]},
		{"zeroed record before later group", func(b []byte) []byte { clear(b[offs[2] : offs[2]+recLen]); return b }, 0, offs[2]},
		{"bad length before later group", func(b []byte) []byte { b[offs[0]+5] = 0x7f; return b }, 0, offs[0]},
		{"wrong sequence", func(b []byte) []byte {
			// A valid record whose sequence number skips one.
			n := offs[5]
			return AppendRecord(b[:n], 7, 2, rec(6))
		}, 0, offs[5]},
		{"bad header magic", func(b []byte) []byte { b[0] = 'X'; return b }, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			if err := fs.MkdirAll(testDir, 0o755); err != nil {
				t.Fatal(err)
			}
			p := path.Join(testDir, fileName(1))
			b := tc.mutate(bytes.Clone(base))
			writeFile(t, fs, p, b)
			j, err := Open(testOptions(fs))
			if tc.wantOff >= 0 {
				want := fmt.Sprintf("%s offset %d:", p, tc.wantOff)
				if !errors.Is(err, ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte(want)) {
					t.Fatalf("Open = %v, want ErrCorrupt naming %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open = %v", err)
			}
			got, _ := replayAll(t, j, Position{})
			sameRecords(t, got, append(slices.Clone(g1), g2...)[:tc.want])
			// The tail was truncated: the file ends after the last good record.
			if fb := readFile(t, fs, p); int64(len(fb)) != offs[0]+int64(tc.want)*recLen {
				t.Fatalf("file is %d bytes after open, want %d", len(fb), offs[0]+int64(tc.want)*recLen)
			}
			// Appends continue the sequence; a second reopen is clean.
			more := []Record{rec(100)}
			appendAll(t, j, more)
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			j = mustOpen(t, testOptions(fs))
			got, _ = replayAll(t, j, Position{})
			sameRecords(t, got, append(append(slices.Clone(g1), g2...)[:tc.want], more...))
			j.Close()
		})
	}
}

func TestUnwrittenLastHeader(t *testing.T) {
	fs := vfs.NewMem()
	j := mustOpen(t, testOptions(fs))
	recs := makeRecords(5, 10, 0)
	appendAll(t, j, recs)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	// A crash right after creating file 2: empty or zero-filled.
	torn := appendFileHeader(nil, fileHeader{FileID: 2, BaseSeq: 6})[:20]
	for _, content := range [][]byte{nil, make([]byte, 10), make([]byte, 100), torn} {
		writeFile(t, fs, path.Join(testDir, fileName(2)), content)
		j = mustOpen(t, testOptions(fs))
		got, _ := replayAll(t, j, Position{})
		sameRecords(t, got, recs)
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		// Remove the file the reopen created so file 2 is last again.
		ids, _ := listFiles(fs, testDir)
		for _, id := range ids[1:] {
			fs.Remove(path.Join(testDir, fileName(id)))
		}
	}
	// A damaged header of a file followed by another is corruption.
	writeFile(t, fs, path.Join(testDir, fileName(2)), make([]byte, 100))
	j = mustOpen(t, testOptions(fs)) // removes 2, creates 2
	j.Close()
	p, b := journalFile(t, fs, 0)
	b[3] ^= 1
	writeFile(t, fs, p, b)
	if _, err := Open(testOptions(fs)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open with a bad first header = %v, want ErrCorrupt", err)
	}
}

func TestSequenceGapBetweenFiles(t *testing.T) {
	fs := vfs.NewMem()
	o := testOptions(fs)
	o.MaxFileSize = 1 << 10
	j := mustOpen(t, o)
	for i := range 10 {
		appendAll(t, j, makeRecords(2, 200, int64(i)))
	}
	j.Close()
	ids, _ := listFiles(fs, testDir)
	if len(ids) < 4 {
		t.Fatalf("only %d files", len(ids))
	}
	fs.Remove(path.Join(testDir, fileName(ids[1])))
	_, err := Open(o)
	if !errors.Is(err, ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte(fileName(ids[2]))) {
		t.Fatalf("Open with a missing middle file = %v, want ErrCorrupt naming %s", err, fileName(ids[2]))
	}
}

func TestNoSync(t *testing.T) {
	fs := vfs.NewMem()
	o := testOptions(fs)
	o.NoSync = true
	o.Logger = slog.New(slog.DiscardHandler)
	j := mustOpen(t, o)
	if j.Durable() {
		t.Fatal("Durable() = true with NoSync")
	}
	recs := makeRecords(20, 10, 0)
	appendAll(t, j, recs)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	// Close syncs the file even without per-group syncs.
	j = mustOpen(t, testOptions(fs.CrashClone()))
	got, _ := replayAll(t, j, Position{})
	sameRecords(t, got, recs)
	j.Close()
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Options)
	}{
		{"no dir", func(o *Options) { o.Dir = "" }},
		{"negative wait", func(o *Options) { o.MaxGroupWait = -1 }},
		{"negative entries", func(o *Options) { o.MaxGroupEntries = -1 }},
		{"tiny file", func(o *Options) { o.MaxFileSize = 8 }},
		{"bad mode", func(o *Options) { o.WriterMode = 99 }},
		{"huge queue", func(o *Options) { o.MaxQueuedBytes = 4 << 30 }},
	} {
		o := testOptions(vfs.NewMem())
		tc.mod(&o)
		if _, err := Open(o); !errors.Is(err, ErrBadOptions) {
			t.Errorf("%s: Open = %v, want ErrBadOptions", tc.name, err)
		}
	}
}

// TestReplayWhileAppending: Replay during appends sees a prefix of the
// records, each intact, and never a record that was not yet durable.
func TestReplayWhileAppending(t *testing.T) {
	fs := vfs.NewMem()
	o := testOptions(fs)
	o.MaxFileSize = 32 << 10
	j := mustOpen(t, o)
	defer j.Close()
	recs := makeRecords(400, 100, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < len(recs); i += 20 {
			appendAll(t, j, recs[i:i+20])
		}
	}()
	for {
		got, pos := replayAll(t, j, Position{})
		end := j.End()
		sameRecords(t, got, recs[:len(got)])
		if len(pos) > 0 && end.Less(pos[len(pos)-1]) {
			t.Fatalf("replay returned %v, past the durable end %v seen after it", pos[len(pos)-1], end)
		}
		select {
		case <-done:
			got, _ = replayAll(t, j, Position{})
			sameRecords(t, got, recs)
			return
		default:
		}
	}
}

func TestReplayDir(t *testing.T) {
	fs := vfs.NewMem()
	j := mustOpen(t, testOptions(fs))
	recs := makeRecords(30, 64, 8)
	pos := appendAll(t, j, recs)
	j.Close()
	p, b := journalFile(t, fs, 0)
	writeFile(t, fs, p, b[:len(b)-RecordHeaderSize+3]) // tear the close mark
	var got []Record
	err := ReplayDir(fs, testDir, pos[9], func(r Record, _ Position) error {
		r.Payload = bytes.Clone(r.Payload)
		got = append(got, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sameRecords(t, got, recs[10:])
	if nb := readFile(t, fs, p); len(nb) != len(b)-RecordHeaderSize+3 {
		t.Fatalf("ReplayDir changed the file: %d bytes, want %d", len(nb), len(b)-RecordHeaderSize+3)
	}
	stop := errors.New("stop")
	if err := ReplayDir(fs, testDir, Position{}, func(Record, Position) error { return stop }); err != stop {
		t.Fatalf("ReplayDir = %v, want the callback's error", err)
	}
}

// TestCloseWhileAppending: every completion fires exactly once, either
// success (and then the record replays) or ErrClosed.
func TestCloseWhileAppending(t *testing.T) {
	fs := vfs.NewMem()
	j := mustOpen(t, testOptions(fs))
	const writers, per = 4, 300
	var (
		mu     sync.Mutex
		ok     = map[int64]bool{}
		closed int
		calls  int
	)
	var wg sync.WaitGroup
	started := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			for i := range per {
				if w == 0 && i == per/3 {
					close(started)
				}
				id := int64(w*per + i)
				j.AppendFunc(Record{Type: Entry, EntryID: id, Payload: []byte{byte(id)}}, func(_ Position, err error) {
					mu.Lock()
					defer mu.Unlock()
					calls++
					switch {
					case err == nil:
						ok[id] = true
					case errors.Is(err, ErrClosed):
						closed++
					default:
						t.Errorf("completion %d: %v", id, err)
					}
				})
			}
		})
	}
	<-started
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if calls != writers*per || len(ok)+closed != calls {
		t.Fatalf("%d completions (%d ok, %d closed), want %d", calls, len(ok), closed, writers*per)
	}
	j = mustOpen(t, testOptions(fs.CrashClone()))
	defer j.Close()
	got, _ := replayAll(t, j, Position{})
	if len(got) != len(ok) {
		t.Fatalf("replayed %d records, %d were acknowledged", len(got), len(ok))
	}
	for _, r := range got {
		if !ok[r.EntryID] {
			t.Fatalf("replayed entry %d that was not acknowledged", r.EntryID)
		}
	}
}
