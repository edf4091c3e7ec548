package entrylog

import (
	"errors"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// tornLog writes records into an active log on a MemFS: 20 records, a
// Sync, then 40 more and a Flush (not synced). It returns the clone of the
// file system as it is on disk (everything written kept), the log's path,
// the synced end and the offsets of the records.
func tornLog(t *testing.T) (fs *vfs.MemFS, path string, synced int64, offs []int64) {
	t.Helper()
	mem := vfs.NewMem()
	l := mustOpen(t, mem, func(o *Options) { o.LogSizeLimit = 1 << 20; o.WriteBufferSize = 256 })
	add := func(i int) {
		loc, err := l.Add(1, int64(i), payloadFor(1, int64(i), 150))
		if err != nil {
			t.Fatal(err)
		}
		_, off := SplitLocation(loc)
		offs = append(offs, int64(off))
	}
	for i := range 20 {
		add(i)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	synced = offs[19] + RecordHeaderSize + 150
	for i := 20; i < 60; i++ {
		add(i)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	logs := l.Logs()
	path = logs[len(logs)-1].Path
	fs = mem.CrashCloneAll()
	l.Close()
	return fs, path, synced, offs
}

// zeroRange overwrites [from, to) of path with zeros.
func zeroRange(t *testing.T, fs vfs.FS, path string, from, to int64) {
	t.Helper()
	f, err := fs.OpenReadWrite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, to-from), from); err != nil {
		t.Fatal(err)
	}
}

// A crash that loses the rewrite of a page's end after the last Sync
// (zeros from a record to the page boundary, valid records after it) is a
// torn tail, not corruption: the header's synced end says those records
// were never synced. Before the synced end was recorded, the scan called
// this corruption and the bookie went read-only until an operator came.
func TestTornPageTailAfterSyncedEnd(t *testing.T) {
	fs, path, synced, offs := tornLog(t)
	h, _, err := ReadFileInfo(fs, path)
	if err != nil || int64(h.SyncedEnd) != synced {
		t.Fatalf("header synced end %d (%v), want %d", h.SyncedEnd, err, synced)
	}
	// The first unsynced record that does not start a page: zero from it
	// to the end of its page; records on later pages survive.
	var x int64
	for _, o := range offs[20:] {
		if o%lostPageSize != 0 && o/lostPageSize < offs[len(offs)-1]/lostPageSize {
			x = o
			break
		}
	}
	if x == 0 {
		t.Fatal("no unsynced record inside a page with later pages")
	}
	zeroRange(t, fs, path, x, (x/lostPageSize+1)*lostPageSize)
	n := 0
	if err := ScanFile(fs, path, func(r Record) error { n++; return nil }); err != nil {
		t.Fatalf("scan of a torn unsynced page tail: %v", err)
	}
	want := 0
	for _, o := range offs {
		if o < x {
			want++
		}
	}
	if n != want {
		t.Fatalf("scan yielded %d records, want the %d before the torn stretch", n, want)
	}
	// Reopened, the log reads every synced record and reports usage.
	r := mustOpen(t, fs, nil)
	defer r.Close()
	if _, err := r.Usage(func(int64) bool { return true }); err != nil {
		t.Fatalf("usage after the torn tail: %v", err)
	}
}

// A synced record zeroed (a disk fault, not a crash) is still corruption,
// with path and offset, even when the zeros fill a whole page.
func TestZeroedSyncedRecordIsCorrupt(t *testing.T) {
	fs, path, synced, offs := tornLog(t)
	from := offs[2]
	to := max(offs[2]+RecordHeaderSize+150, (from/lostPageSize+2)*lostPageSize)
	if to > synced {
		to = synced
	}
	zeroRange(t, fs, path, from, to)
	err := ScanFile(fs, path, func(Record) error { return nil })
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("scan of a zeroed synced record = %v, want ErrCorrupt", err)
	}
}

// Without a recorded synced end (a crash before the log's first Sync), a
// stretch with a whole aligned zero page is torn, a sub-page hole is not.
func TestTornRuleWithoutSyncedEnd(t *testing.T) {
	fs, path, _, offs := tornLog(t)
	zeroRange(t, fs, path, syncedEndOffset, syncedEndOffset+syncedEndSize)
	if h, _, _ := ReadFileInfo(fs, path); h.SyncedEnd != 0 {
		t.Fatalf("synced end %d after clearing it", h.SyncedEnd)
	}
	x := offs[30]
	zeroRange(t, fs, path, x, x+RecordHeaderSize)
	if err := ScanFile(fs, path, func(Record) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("sub-page hole without a synced end = %v, want ErrCorrupt", err)
	}
	page := (x/lostPageSize + 1) * lostPageSize
	zeroRange(t, fs, path, x, page+lostPageSize)
	if err := ScanFile(fs, path, func(Record) error { return nil }); err != nil {
		t.Fatalf("a whole zero page without a synced end = %v, want a torn tail", err)
	}
}
