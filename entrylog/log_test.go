package entrylog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

type added struct {
	ledger, entry int64
	payload       []byte
	loc           uint64
}

func payloadFor(ledger, entry int64, size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(int64(i)*7 + ledger*13 + entry)
	}
	return b
}

func mustOpen(t testing.TB, fs vfs.FS, mutate func(*Options)) *Log {
	t.Helper()
	o := Options{FS: fs, Dirs: []string{"/a", "/b"}, LogSizeLimit: 16 << 10, WriteBufferSize: 1024, PreallocateSize: 4096}
	if mutate != nil {
		mutate(&o)
	}
	l, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func addMany(t testing.TB, l *Log, rng *rand.Rand, n, ledgers int, next map[int64]int64) []added {
	t.Helper()
	var out []added
	for range n {
		ledger := int64(rng.IntN(ledgers))
		entry := next[ledger]
		next[ledger]++
		p := payloadFor(ledger, entry, rng.IntN(1500))
		loc, err := l.Add(ledger, entry, p)
		if err != nil {
			t.Fatalf("Add(%d, %d) = %v", ledger, entry, err)
		}
		out = append(out, added{ledger, entry, p, loc})
	}
	return out
}

func checkAll(t testing.TB, l *Log, entries []added) {
	t.Helper()
	for _, e := range entries {
		got, err := l.Read(e.loc, e.ledger, e.entry)
		if err != nil {
			t.Fatalf("Read(%x, %d, %d) = %v", e.loc, e.ledger, e.entry, err)
		}
		if !bytes.Equal(got, e.payload) {
			t.Fatalf("Read(%x, %d, %d) = %d bytes, want %d", e.loc, e.ledger, e.entry, len(got), len(e.payload))
		}
	}
}

func TestAddReadRollReopen(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, fs, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	next := map[int64]int64{}
	entries := addMany(t, l, rng, 400, 5, next)
	checkAll(t, l, entries) // partly from the append buffer
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	checkAll(t, l, entries)
	// A payload larger than the write buffer goes straight to the file.
	big := payloadFor(9, 0, 5000)
	loc, err := l.Add(9, 0, big)
	if err != nil {
		t.Fatal(err)
	}
	entries = append(entries, added{9, 0, big, loc})
	checkAll(t, l, entries)
	if _, err := l.Add(1, 99, make([]byte, 16<<10)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Add(too large) = %v, want ErrTooLarge", err)
	}
	logs := l.Logs()
	if len(logs) < 10 {
		t.Fatalf("%d logs after 400 adds with a 16 KiB limit, want >= 10", len(logs))
	}
	dirs := map[string]int{}
	for i, info := range logs {
		dirs[info.Path[:2]]++
		if info.Active != (i == len(logs)-1) {
			t.Fatalf("log %d active = %v", info.ID, info.Active)
		}
		if info.Size > 16<<10+1024 {
			t.Fatalf("log %d size %d above limit plus map", info.ID, info.Size)
		}
	}
	if dirs["/a"] == 0 || dirs["/b"] == 0 {
		t.Fatalf("logs per dir = %v, want both dirs used", dirs)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Add(1, 1, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close = %v, want ErrClosed", err)
	}

	l = mustOpen(t, fs, nil)
	defer l.Close()
	checkAll(t, l, entries)
	want := map[int64]uint64{}
	for _, e := range entries {
		want[e.ledger] += uint64(RecordHeaderSize + len(e.payload))
	}
	got := map[int64]uint64{}
	for _, info := range l.Logs() {
		if info.Active {
			t.Fatalf("log %d active after reopen", info.ID)
		}
		m, err := l.LedgerBytes(info.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m {
			got[p.Ledger] += p.Bytes
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sum of ledgers maps = %v, want %v", got, want)
	}
	// New adds go to a new log after the old ones.
	loc, err = l.Add(1, 1000, []byte("new"))
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := SplitLocation(loc); id != logs[len(logs)-1].ID+1 {
		t.Fatalf("new log id %d, want %d", id, logs[len(logs)-1].ID+1)
	}
}

func TestReadErrors(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, fs, nil)
	locA, _ := l.Add(1, 0, []byte("aaaa"))
	locB, _ := l.Add(1, 1, []byte("bbbb"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Flip a payload byte of the second record.
	id, off := SplitLocation(locB)
	f, err := fs.OpenReadWrite("/a/" + FileName(id))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{'X'}, int64(off)+RecordHeaderSize); err != nil {
		t.Fatal(err)
	}
	f.Close()

	l = mustOpen(t, fs, nil)
	defer l.Close()
	locC, err := l.Add(2, 0, []byte("buffered"))
	if err != nil {
		t.Fatal(err)
	}
	activeID, activeOff := SplitLocation(locC)
	cases := []struct {
		name          string
		loc           uint64
		ledger, entry int64
		want          error
		wantMsg       string
	}{
		{"ok", locA, 1, 0, nil, ""},
		{"checksum", locB, 1, 1, ErrCorrupt, fmt.Sprintf("/a/00000001.log off %d", off)},
		{"wrong entry", locA, 1, 5, ErrCorrupt, "holds 1:0, want 1:5"},
		{"wrong ledger", locA, 2, 0, ErrCorrupt, "holds 1:0, want 2:0"},
		{"in header", Location(id, 10), 1, 0, ErrCorrupt, "inside header"},
		{"past end of sealed log", Location(id, 60000), 1, 0, ErrCorrupt, "past end"},
		{"no such log", Location(77, 2000), 1, 0, ErrNotFound, "log 77"},
		{"buffered", locC, 2, 0, nil, ""},
		{"buffered wrong entry", locC, 2, 1, ErrCorrupt, "holds 2:0, want 2:1"},
		{"past end of active log", Location(activeID, activeOff+100), 2, 0, ErrCorrupt, "past end"},
		{"far past end of active log", Location(activeID, 1<<20), 2, 0, ErrCorrupt, "past end"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := l.Read(tc.loc, tc.ledger, tc.entry)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Read = %v, want %v", err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("Read = %q, want it to mention %q", err, tc.wantMsg)
			}
		})
	}
}

// crashedLog writes entries, syncs, and returns a crash clone in which the
// single log has no ledgers map, plus the path and the entries.
func crashedLog(t *testing.T, n int) (*vfs.MemFS, string, []added) {
	fs := vfs.NewMem()
	l := mustOpen(t, fs, func(o *Options) { o.Dirs = []string{"/a"}; o.LogSizeLimit = 1 << 20 })
	entries := addMany(t, l, rand.New(rand.NewPCG(3, 4)), n, 3, map[int64]int64{})
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	clone := fs.CrashClone()
	l.Close()
	return clone, "/a/00000001.log", entries
}

func TestScanTornAndCorrupt(t *testing.T) {
	cases := []struct {
		name    string
		corrupt func(b []byte, e []added) []byte
		want    int // records yielded
		wantErr string
	}{
		{name: "intact", corrupt: func(b []byte, e []added) []byte { return b }, want: 20},
		{name: "truncated last payload", corrupt: func(b []byte, e []added) []byte { return b[:len(b)-1] }, want: 19},
		{name: "truncated last header", corrupt: func(b []byte, e []added) []byte { return b[:lo(e[19])+10] }, want: 19},
		{name: "zero tail", corrupt: func(b []byte, e []added) []byte { return append(b, make([]byte, 5000)...) }, want: 20},
		{name: "garbage tail", corrupt: func(b []byte, e []added) []byte { return append(b, "garbage that is no record at all...."...) }, want: 20},
		{name: "last record crc", corrupt: func(b []byte, e []added) []byte { b[lo(e[19])+4] ^= 1; return b }, want: 19},
		{name: "mid-file crc", corrupt: func(b []byte, e []added) []byte { b[lo(e[5])+4] ^= 1; return b }, want: 5, wantErr: "off %d: invalid record"},
		{name: "mid-file zeroed", corrupt: func(b []byte, e []added) []byte {
			clear(b[lo(e[7]):lo(e[8])])
			return b
		}, want: 7, wantErr: "off %d: invalid record"},
		{name: "mid-file length", corrupt: func(b []byte, e []added) []byte { b[lo(e[3])+1] ^= 0x40; return b }, want: 3, wantErr: "off %d: invalid record"},
		// Out-of-order loss of unsynced pages in a never-sealed log.
		{name: "lost page before surviving ones", corrupt: func(b []byte, e []added) []byte {
			if lo(e[19]) < 12288 {
				panic("test log too short: no record after the lost page")
			}
			clear(b[8192:12288])
			return b
		}, want: -1},
		{name: "bad magic", corrupt: func(b []byte, e []added) []byte { b[1] = 'X'; return b }, wantErr: "off 0: bad magic"},
		{name: "short header", corrupt: func(b []byte, e []added) []byte { return b[:100] }, wantErr: "off 0: short header"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs, path, entries := crashedLog(t, 20)
			b := tc.corrupt(readMem(t, fs, path), entries)
			writeMem(t, fs, path, b)
			var got int
			err := ScanFile(fs, path, func(r Record) error {
				e := entries[got]
				if r.Ledger != e.ledger || r.Entry != e.entry || r.Loc != e.loc || !bytes.Equal(r.Payload, e.payload) {
					return fmt.Errorf("record %d = %d:%d@%x, want %d:%d@%x", got, r.Ledger, r.Entry, r.Loc, e.ledger, e.entry, e.loc)
				}
				got++
				return nil
			})
			if tc.wantErr == "" && err != nil {
				t.Fatalf("ScanFile = %v, want nil", err)
			}
			if tc.wantErr != "" {
				want := tc.wantErr
				if strings.Contains(want, "%d") {
					want = fmt.Sprintf(want, lo(entries[tc.want]))
				}
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
					t.Fatalf("ScanFile = %v, want ErrCorrupt mentioning %s and %q", err, path, want)
				}
			}
			want := tc.want
			if want < 0 { // up to the record holding offset 8192
				for want = 0; lo(entries[want+1]) <= 8192; want++ {
				}
			}
			if got != want {
				t.Fatalf("ScanFile yielded %d records, want %d", got, want)
			}
		})
	}
}

func lo(e added) int { _, off := SplitLocation(e.loc); return int(off) }

func TestRecoveredLogUsageByScan(t *testing.T) {
	fs, _, entries := crashedLog(t, 50)
	l := mustOpen(t, fs, func(o *Options) { o.Dirs = []string{"/a"} })
	defer l.Close()
	checkAll(t, l, entries)
	live := func(ledger int64) bool { return ledger != 1 }
	us, err := l.Usage(live)
	if err != nil {
		t.Fatal(err)
	}
	var want Usage
	want.ID = 1
	for _, e := range entries {
		n := uint64(RecordHeaderSize + len(e.payload))
		want.Total += n
		if live(e.ledger) {
			want.Live += n
		}
	}
	// A prepared (empty) next log may have survived the crash too.
	if len(us) < 1 || us[0] != want || (len(us) == 2 && us[1].Total != 0) || len(us) > 2 {
		t.Fatalf("Usage = %+v, want [%+v] and maybe an empty log", us, want)
	}
	// A location past the recovered data is missing, not corrupt.
	if _, err := l.Read(Location(1, uint32(lo(entries[49])+100000)), 0, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Read past recovered data = %v, want ErrNotFound", err)
	}
}

func TestCompact(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, fs, func(o *Options) { o.LogSizeLimit = 1 << 20 })
	defer l.Close()
	entries := addMany(t, l, rand.New(rand.NewPCG(5, 6)), 200, 4, map[int64]int64{})
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	live := func(ledger int64) bool { return ledger%2 == 0 }
	us, err := l.Usage(live)
	if err != nil || len(us) != 1 || us[0].Ratio() <= 0 || us[0].Ratio() >= 1 {
		t.Fatalf("Usage = %+v, %v; want one log partly live", us, err)
	}
	if _, err := l.Compact(context.Background(), 2, live, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Compact(missing log) = %v, want ErrNotFound", err)
	}
	moved := map[uint64]uint64{}
	st, err := l.Compact(context.Background(), 1, live, func(ledger, entry int64, oldLoc, newLoc uint64) error {
		if !live(ledger) {
			t.Errorf("relocate(%d, %d) of a dead ledger", ledger, entry)
		}
		moved[oldLoc] = newLoc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var wantSt CompactStats
	for _, e := range entries {
		if live(e.ledger) {
			wantSt.Entries++
			wantSt.Bytes += int64(len(e.payload))
		} else {
			wantSt.SkippedEntries++
			wantSt.SkippedBytes += int64(len(e.payload))
		}
	}
	if st != wantSt {
		t.Fatalf("Compact stats = %+v, want %+v", st, wantSt)
	}
	if _, err := l.Compact(context.Background(), 2, live, nil); !errors.Is(err, ErrActiveLog) {
		t.Fatalf("Compact(active log) = %v, want ErrActiveLog", err)
	}
	if err := l.RemoveLog(2); !errors.Is(err, ErrActiveLog) {
		t.Fatalf("RemoveLog(active log) = %v, want ErrActiveLog", err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveLog(1); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat("/a/00000001.log"); err == nil {
		t.Fatal("compacted log still on disk after RemoveLog")
	}
	var liveEntries []added
	for _, e := range entries {
		if _, err := l.Read(e.loc, e.ledger, e.entry); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Read(old location) = %v, want ErrNotFound", err)
		}
		if live(e.ledger) {
			e.loc = moved[e.loc]
			liveEntries = append(liveEntries, e)
		}
	}
	checkAll(t, l, liveEntries)
}

func TestCompactRelocateErrorAndCancel(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, fs, func(o *Options) { o.LogSizeLimit = 1 << 20 })
	defer l.Close()
	addMany(t, l, rand.New(rand.NewPCG(5, 6)), 20, 2, map[int64]int64{})
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	st, err := l.Compact(context.Background(), 1, func(int64) bool { return true }, func(_, _ int64, _, _ uint64) error { return boom })
	if !errors.Is(err, boom) || st.Entries != 0 {
		t.Fatalf("Compact with failing relocate = %+v, %v; want boom after 0 entries", st, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Compact(ctx, 1, func(int64) bool { return true }, func(_, _ int64, _, _ uint64) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Compact(cancelled) = %v, want context.Canceled", err)
	}
}

// failFS fails WriteAt or Sync of files once armed.
type failFS struct {
	vfs.FS
	failWrite, failSync atomic.Bool
}

type failFile struct {
	vfs.File
	fs *failFS
}

var errInjected = errors.New("injected")

func (f *failFS) Create(name string) (vfs.File, error) {
	file, err := f.FS.Create(name)
	return &failFile{file, f}, err
}

func (f *failFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.failWrite.Load() {
		return 0, errInjected
	}
	return f.File.WriteAt(p, off)
}

func (f *failFile) Sync() error {
	if f.fs.failSync.Load() {
		return errInjected
	}
	return f.File.Sync()
}

func TestStickyErrors(t *testing.T) {
	for _, mode := range []string{"write", "sync"} {
		t.Run(mode, func(t *testing.T) {
			ffs := &failFS{FS: vfs.NewMem()}
			l := mustOpen(t, ffs, nil)
			loc, err := l.Add(1, 0, []byte("ok"))
			if err != nil {
				t.Fatal(err)
			}
			ffs.failWrite.Store(mode == "write")
			ffs.failSync.Store(mode == "sync")
			loc2, err := l.Add(1, 1, []byte("buffered"))
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Sync(); !errors.Is(err, errInjected) {
				t.Fatalf("Sync = %v, want injected error", err)
			}
			ffs.failWrite.Store(false)
			ffs.failSync.Store(false)
			if _, err := l.Add(1, 2, []byte("x")); !errors.Is(err, errInjected) {
				t.Fatalf("Add after failure = %v, want the sticky error", err)
			}
			if err := l.Sync(); !errors.Is(err, errInjected) {
				t.Fatalf("Sync after failure = %v, want the sticky error", err)
			}
			// Data added before the failure stays readable.
			if _, err := l.Read(loc, 1, 0); err != nil {
				t.Fatalf("Read after failed %s = %v", mode, err)
			}
			if got, err := l.Read(loc2, 1, 1); err != nil || string(got) != "buffered" {
				t.Fatalf("Read of the record whose write failed = %q, %v", got, err)
			}
			if err := l.Close(); !errors.Is(err, errInjected) {
				t.Fatalf("Close = %v, want the sticky error", err)
			}
		})
	}
}

func TestOpenRemovesEmptyLogAndRejectsBadHeader(t *testing.T) {
	fs := vfs.NewMem()
	writeMem(t, fs, "/a/00000005.log", make([]byte, 300))
	l := mustOpen(t, fs, func(o *Options) { o.Dirs = []string{"/a"} })
	if len(l.Logs()) != 0 {
		t.Fatalf("Logs = %v, want the all-zero log dropped", l.Logs())
	}
	loc, err := l.Add(1, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := SplitLocation(loc); id != 6 {
		t.Fatalf("first new log id = %d, want 6", id)
	}
	l.Close()
	writeMem(t, fs, "/a/00000009.log", bytes.Repeat([]byte{1}, HeaderSize))
	if _, err := Open(Options{FS: fs, Dirs: []string{"/a"}}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "00000009.log") {
		t.Fatalf("Open with a bad header = %v, want ErrCorrupt naming the file", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	bad := []Options{
		{Dirs: []string{"/a"}},
		{FS: vfs.NewMem()},
		{FS: vfs.NewMem(), Dirs: []string{"/a"}, LogSizeLimit: 100},
		{FS: vfs.NewMem(), Dirs: []string{"/a"}, LogSizeLimit: 4 << 30},
		{FS: vfs.NewMem(), Dirs: []string{"/a"}, WriteBufferSize: 3},
	}
	for i, o := range bad {
		if _, err := Open(o); err == nil {
			t.Fatalf("Open(bad options %d) succeeded", i)
		}
	}
}

func TestCompactThrottle(t *testing.T) {
	fs := vfs.NewMem()
	const rate = 400 << 10 // bytes/s
	l := mustOpen(t, fs, func(o *Options) { o.LogSizeLimit = 1 << 20; o.CompactionRateBytes = rate })
	defer l.Close()
	for e := range int64(40) {
		if _, err := l.Add(1, e, make([]byte, 1024)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	st, err := l.Compact(context.Background(), 1, func(int64) bool { return true }, func(_, _ int64, _, _ uint64) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	// 40 KiB at 400 KiB/s: the last copy is due 100 ms after the start.
	if elapsed, min := time.Since(start), time.Duration(float64(st.Bytes)/rate*float64(time.Second)); elapsed < min {
		t.Fatalf("Compact of %d bytes took %v, want >= %v at %d B/s", st.Bytes, elapsed, min, rate)
	}
}

// TestCompactCrash: once the copies are synced and the old log removed,
// a crash keeps every relocated entry readable at its new location.
func TestCompactCrash(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, fs, func(o *Options) { o.LogSizeLimit = 1 << 20 })
	entries := addMany(t, l, rand.New(rand.NewPCG(8, 9)), 100, 3, map[int64]int64{})
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	moved := map[uint64]uint64{}
	if _, err := l.Compact(context.Background(), 1, func(int64) bool { return true }, func(_, _ int64, o, n uint64) error {
		moved[o] = n
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	before := fs.CrashClone() // copies not yet synced: the old log still serves
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveLog(1); err != nil {
		t.Fatal(err)
	}
	after := fs.CrashClone()
	l.Close()
	if _, err := after.Stat("/a/00000001.log"); err == nil {
		t.Fatal("removed log back after a crash")
	}

	r := mustOpen(t, before, nil)
	checkAll(t, r, entries)
	r.Close()
	r = mustOpen(t, after, nil)
	defer r.Close()
	for i := range entries {
		entries[i].loc = moved[entries[i].loc]
	}
	checkAll(t, r, entries)
}

// TestOSFileSystem runs the write, roll, reopen and read path on the OS
// file system (fallocate, fdatasync, real directories).
func TestOSFileSystem(t *testing.T) {
	dir := t.TempDir()
	opts := func(o *Options) { o.Dirs = []string{dir + "/a", dir + "/b"} }
	l := mustOpen(t, vfs.NewOS(), opts)
	entries := addMany(t, l, rand.New(rand.NewPCG(11, 12)), 100, 3, map[int64]int64{})
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	checkAll(t, l, entries)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, vfs.NewOS(), opts)
	defer l.Close()
	checkAll(t, l, entries)
	for _, info := range l.Logs() {
		n := 0
		if err := ScanFile(vfs.NewOS(), info.Path, func(Record) error { n++; return nil }); err != nil || n == 0 {
			t.Fatalf("ScanFile(%s) = %d records, %v", info.Path, n, err)
		}
	}
}

// TestLostPageInSealedLogIsCorrupt: the zero-page leniency applies only to
// logs that were never sealed.
func TestLostPageInSealedLogIsCorrupt(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, fs, func(o *Options) { o.Dirs = []string{"/a"}; o.LogSizeLimit = 1 << 20 })
	addMany(t, l, rand.New(rand.NewPCG(3, 4)), 40, 3, map[int64]int64{})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b := readMem(t, fs, "/a/00000001.log")
	clear(b[8192:12288])
	writeMem(t, fs, "/a/00000001.log", b)
	err := ScanFile(fs, "/a/00000001.log", func(Record) error { return nil })
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ScanFile(sealed log with a zeroed page) = %v, want ErrCorrupt", err)
	}
}

// TestReadLostPage: in a recovered log, a record partly on a lost (zero)
// page reads as missing, not corrupt; in a sealed log it is corrupt.
func TestReadLostPage(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		fs := vfs.NewMem()
		l := mustOpen(t, fs, func(o *Options) { o.Dirs = []string{"/a"}; o.LogSizeLimit = 1 << 20 })
		var e added
		for i := int64(0); ; i++ {
			loc, err := l.Add(1, i, payloadFor(1, i, 900))
			if err != nil {
				t.Fatal(err)
			}
			if _, off := SplitLocation(loc); off < 8192 && off+924 > 8192 {
				e = added{1, i, nil, loc} // straddles the page at 8192
			}
			if _, off := SplitLocation(loc); off > 16384 {
				break
			}
		}
		if sealed {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			fs = fs.CrashClone()
			l.Close()
		}
		if e.loc == 0 {
			t.Fatal("no record straddles offset 8192")
		}
		b := readMem(t, fs, "/a/00000001.log")
		clear(b[8192:12288])
		writeMem(t, fs, "/a/00000001.log", b)
		r := mustOpen(t, fs, func(o *Options) { o.Dirs = []string{"/a"} })
		_, err := r.Read(e.loc, e.ledger, e.entry)
		want := ErrNotFound
		if sealed {
			want = ErrCorrupt
		}
		if !errors.Is(err, want) {
			t.Fatalf("sealed=%v: Read of a record on a lost page = %v, want %v", sealed, err, want)
		}
		r.Close()
	}
}
