package journal

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
	"golang.org/x/sys/unix"
)

// TestFsyncEIOSticky: a failed fdatasync fails its group and everything
// after it, nothing is acknowledged after it, and it is never retried.
func TestFsyncEIOSticky(t *testing.T) {
	mem := vfs.NewMem()
	syncs := vfs.FailAfter(vfs.OpSync, 1, unix.EIO) // also counts syncs once enabled
	toggle := vfs.NewToggle(vfs.PathMatch("*.txn", syncs))
	fs := vfs.NewErrorFS(mem, toggle)
	j := mustOpen(t, testOptions(fs))
	good := makeRecords(20, 100, 1)
	appendAll(t, j, good)

	toggle.Enable()
	var (
		mu       sync.Mutex
		acked    int
		failed   int
		lastOK   = true
		badOrder bool
	)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				j.AppendFunc(makeRecords(1, 50, int64(w*100+i))[0], func(_ Position, err error) {
					mu.Lock()
					defer mu.Unlock()
					if err == nil {
						acked++
						if !lastOK {
							badOrder = true
						}
						return
					}
					lastOK = false
					failed++
					if !errors.Is(err, ErrFailed) || !errors.Is(err, unix.EIO) {
						t.Errorf("completion error %v, want ErrFailed wrapping EIO", err)
					}
				})
			}
		})
	}
	wg.Wait()
	closeErr := j.Close()
	if !errors.Is(closeErr, unix.EIO) {
		t.Fatalf("Close = %v, want EIO", closeErr)
	}
	if acked != 0 || failed != 200 || badOrder {
		t.Fatalf("acked %d failed %d badOrder %v; want 0 acked, 200 failed", acked, failed, badOrder)
	}
	if n := syncs.Seen(); n != 1 {
		t.Fatalf("%d journal syncs after the failure began, want exactly 1 (no retry)", n)
	}
	if !errors.Is(j.Err(), ErrFailed) {
		t.Fatalf("Err() = %v", j.Err())
	}

	// What was acknowledged survives a crash; the rest replays or not, but
	// nothing is corrupt.
	toggle.Disable()
	j = mustOpen(t, testOptions(mem.CrashClone()))
	got, _ := replayAll(t, j, Position{})
	if len(got) < len(good) {
		t.Fatalf("replayed %d records, want at least the %d acknowledged", len(got), len(good))
	}
	sameRecords(t, got[:len(good)], good)
	j.Close()
}

// TestShortWriteTornTail: a torn write fails the journal; the torn tail is
// truncated on reopen and the journal works again.
func TestShortWriteTornTail(t *testing.T) {
	mem := vfs.NewMem()
	toggle := vfs.NewToggle(vfs.PathMatch("*.txn", vfs.Error(vfs.ShortWrite(unix.EIO), vfs.OpWrite)))
	fs := vfs.NewErrorFS(mem, toggle)
	j := mustOpen(t, testOptions(fs))
	good := makeRecords(10, 100, 1)
	appendAll(t, j, good)
	toggle.Enable()
	var gotErr error
	done := make(chan struct{})
	j.AppendFunc(makeRecords(1, 1000, 9)[0], func(_ Position, err error) { gotErr = err; close(done) })
	<-done
	if !errors.Is(gotErr, ErrFailed) {
		t.Fatalf("torn write completion = %v, want ErrFailed", gotErr)
	}
	toggle.Disable()
	j.Close()

	// The half-written record is in the page cache (and on disk after a
	// crash that kept it): either way reopen truncates it.
	for _, fsys := range []vfs.FS{mem, mem.CrashCloneRandom(rand.New(rand.NewPCG(1, 2)))} {
		j = mustOpen(t, testOptions(fsys))
		got, _ := replayAll(t, j, Position{})
		sameRecords(t, got, good)
		more := makeRecords(3, 10, 5)
		appendAll(t, j, more)
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		j = mustOpen(t, testOptions(fsys))
		got, _ = replayAll(t, j, Position{})
		sameRecords(t, got, append(good, more...))
		j.Close()
	}
}

// TestMidFileCorruption: a flipped byte in a record that later groups
// follow is reported with the path and offset, and Open refuses.
func TestMidFileCorruption(t *testing.T) {
	fs := vfs.NewMem()
	j := mustOpen(t, testOptions(fs))
	var pos []Position
	for i := range 10 {
		pos = append(pos, appendAll(t, j, makeRecords(5, 200, int64(i)))...)
	}
	j.Close()
	p, b := journalFile(t, fs, 0)
	recStart := pos[20].Offset // start of record 21 (end of record 20)
	b[recStart+RecordHeaderSize+17] ^= 0x04
	writeFile(t, fs, p, b)
	_, err := Open(testOptions(fs))
	want := fmt.Sprintf("%s offset %d:", p, recStart)
	if !errors.Is(err, ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte(want)) {
		t.Fatalf("Open = %v, want ErrCorrupt naming %q", err, want)
	}
	// Even damage in the last data group is caught after a clean Close:
	// the close mark is a later group.
	b[recStart+RecordHeaderSize+17] ^= 0x04
	lastRec := pos[len(pos)-2].Offset
	b[lastRec+RecordHeaderSize] ^= 0x04
	writeFile(t, fs, p, b)
	if _, err := Open(testOptions(fs)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open with damage in the last group = %v, want ErrCorrupt", err)
	}
}

// TestCheckpointFailure: a failed lastMark rename leaves the old mark.
func TestCheckpointFailure(t *testing.T) {
	mem := vfs.NewMem()
	toggle := vfs.NewToggle(vfs.IOError(vfs.OpRename))
	j := mustOpen(t, testOptions(vfs.NewErrorFS(mem, toggle)))
	defer j.Close()
	pos := appendAll(t, j, makeRecords(5, 10, 0))
	if err := j.Checkpoint(pos[1]); err != nil {
		t.Fatal(err)
	}
	toggle.Enable()
	if err := j.Checkpoint(pos[3]); !errors.Is(err, unix.EIO) {
		t.Fatalf("Checkpoint = %v, want EIO", err)
	}
	if j.LastMark() != pos[1] {
		t.Fatalf("LastMark = %v after a failed checkpoint, want %v", j.LastMark(), pos[1])
	}
	m, err := readMark(mem, testDir)
	if err != nil || m != pos[1] {
		t.Fatalf("lastMark file = %v, %v; want %v", m, err, pos[1])
	}
}

// TestRollFailure: a file that cannot be created on roll (disk full)
// fails the journal; what was acknowledged before survives a reopen.
func TestRollFailure(t *testing.T) {
	mem := vfs.NewMem()
	toggle := vfs.NewToggle(vfs.DiskFull())
	o := testOptions(vfs.NewErrorFS(mem, toggle))
	// Three groups of two 540-byte records end at 3272 bytes: the next
	// group rolls.
	o.MaxFileSize = 3500
	j := mustOpen(t, o)
	var good []Record
	for i := range 3 {
		r := makeRecords(2, 500, int64(i))
		appendAll(t, j, r)
		good = append(good, r...)
	}
	toggle.Enable()
	var errs []error
	done := make(chan struct{})
	for i := range 20 {
		j.AppendFunc(makeRecords(1, 500, 50)[0], func(_ Position, err error) {
			errs = append(errs, err) // completions run on one goroutine
			if i == 19 {
				close(done)
			}
		})
	}
	<-done
	for _, err := range errs {
		if !errors.Is(err, ErrFailed) || !errors.Is(err, unix.ENOSPC) {
			t.Fatalf("completion = %v, want ErrFailed wrapping ENOSPC", err)
		}
	}
	if err := j.Close(); !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("Close = %v", err)
	}
	toggle.Disable()
	if ids, _ := listFiles(mem, testDir); len(ids) != 1 {
		t.Fatalf("files %v: the roll did not fail at creation", ids)
	}
	j = mustOpen(t, testOptions(mem.CrashClone()))
	defer j.Close()
	got, _ := replayAll(t, j, Position{})
	sameRecords(t, got, good)
}

// TestOpenNoSpaceLeavesNoFile: an Open whose new file cannot take its
// header (a full disk: the file is created, the write fails) fails with
// ENOSPC and removes that file, so repeated starts on a full disk leave
// no empty journal files; once there is room it opens and replays what
// was appended before.
func TestOpenNoSpaceLeavesNoFile(t *testing.T) {
	mem := vfs.NewMem()
	toggle := vfs.NewToggle(vfs.Error(unix.ENOSPC, vfs.OpWrite))
	o := testOptions(vfs.NewErrorFS(mem, toggle))
	j := mustOpen(t, o)
	good := makeRecords(5, 300, 1)
	appendAll(t, j, good)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	toggle.Enable()
	for range 3 {
		if _, err := Open(o); !errors.Is(err, unix.ENOSPC) {
			t.Fatalf("Open on a full disk = %v, want ENOSPC", err)
		}
	}
	if ids, _ := listFiles(mem, testDir); len(ids) != 1 {
		t.Fatalf("files %v after failed opens, want the first one only", ids)
	}
	toggle.Disable()
	j = mustOpen(t, o)
	defer j.Close()
	got, _ := replayAll(t, j, Position{})
	sameRecords(t, got, good)
}
