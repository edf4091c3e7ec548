package entrylog

import (
	"errors"

	"golang.org/x/sys/unix"
	"math/rand/v2"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestWritebackPacing runs the write, roll, reopen and read path on the
// OS file system with FlushBytes smaller than a log, so that writeback is
// started and waited for in steps (sync_file_range) many times per log;
// every record reads back before and after a reopen, and the pacing state
// followed the writes.
func TestWritebackPacing(t *testing.T) {
	dir := t.TempDir()
	opts := func(o *Options) {
		o.Dirs = []string{dir + "/a"}
		o.FlushBytes = 4096
	}
	l := mustOpen(t, vfs.NewOS(), opts)
	entries := addMany(t, l, rand.New(rand.NewPCG(21, 22)), 100, 3, map[int64]int64{})
	l.mu.Lock()
	wb := l.mu.wb
	cur := l.mu.cur
	l.mu.Unlock()
	if wb.file != cur || wb.waited < HeaderSize+4096 || wb.started <= wb.waited {
		t.Fatalf("pacing state %+v: no step was waited for", wb)
	}
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
}

// TestWritebackPacingOptions: a negative FlushBytes is refused; MemFS
// files (no descriptor) are written unpaced.
func TestWritebackPacingOptions(t *testing.T) {
	if _, err := Open(Options{FS: vfs.NewMem(), Dirs: []string{"/a"}, FlushBytes: -1}); err == nil {
		t.Fatal("Open with FlushBytes -1 succeeded")
	}
	l := mustOpen(t, vfs.NewMem(), func(o *Options) { o.FlushBytes = 1024 })
	defer l.Close()
	entries := addMany(t, l, rand.New(rand.NewPCG(1, 2)), 50, 2, map[int64]int64{})
	checkAll(t, l, entries)
}

// TestWriteback: on the OS file system without FlushBytes, Writeback
// writes the append buffer to the active log (its size moves, the
// records read back) and starts writeback up to there, waiting for the
// previous call's; on a closed log it reports ErrClosed.
func TestWriteback(t *testing.T) {
	dir := t.TempDir()
	opts := func(o *Options) {
		o.Dirs = []string{dir + "/a"}
		o.WriteBufferSize = 1 << 20 // nothing reaches the file before Writeback
		o.LogSizeLimit = 64 << 20
	}
	l := mustOpen(t, vfs.NewOS(), opts)
	size := func() int64 {
		for _, li := range l.Logs() {
			if li.Active {
				return li.Size
			}
		}
		return -1
	}
	next := map[int64]int64{}
	entries := addMany(t, l, rand.New(rand.NewPCG(5, 6)), 40, 2, next)
	before := size()
	if before != HeaderSize {
		t.Fatalf("the active log has %d bytes before Writeback, want its header's %d", before, HeaderSize)
	}
	if err := l.Writeback(); err != nil {
		t.Fatal(err)
	}
	first := size()
	if first <= before {
		t.Fatalf("Writeback left the active log at %d bytes", first)
	}
	entries = append(entries, addMany(t, l, rand.New(rand.NewPCG(7, 8)), 40, 2, next)...)
	if err := l.Writeback(); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	wb := l.mu.wb
	l.mu.Unlock()
	if wb.started != size() || wb.waited != first {
		t.Fatalf("writeback state %+v, want started at %d, waited to %d", wb, size(), first)
	}
	checkAll(t, l, entries)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Writeback(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Writeback after Close = %v, want ErrClosed", err)
	}
}

// TestWritebackChunks: Writeback and a paced log's Sync start writeback
// in requests of at most writebackChunk that cover what was written, in
// order and without gaps, so no request a journal write may queue behind
// is larger (the device would otherwise get the fsync's 4 MiB requests).
func TestWritebackChunks(t *testing.T) {
	type call struct {
		off, n int64
		flags  int
	}
	var calls []call
	old := syncFileRange
	syncFileRange = func(fd int, off, n int64, flags int) error {
		calls = append(calls, call{off, n, flags})
		return old(fd, off, n, flags)
	}
	t.Cleanup(func() { syncFileRange = old })
	dir := t.TempDir()
	l := mustOpen(t, vfs.NewOS(), func(o *Options) {
		o.Dirs = []string{dir + "/a"}
		o.WriteBufferSize = 4 << 20
		o.LogSizeLimit = 64 << 20
	})
	defer l.Close()
	next := map[int64]int64{}
	rng := rand.New(rand.NewPCG(9, 10))
	var entries []added
	activeSize := func() int64 {
		for _, li := range l.Logs() {
			if li.Active {
				return li.Size
			}
		}
		return -1
	}
	// Two Writebacks and a Sync, each with more than a few chunks of
	// new records behind it.
	var ends []int64
	from := int64(0)
	for range 3 {
		// The buffer holds the records until Writeback or Sync writes
		// them: count their bytes.
		for n := int64(0); n < 3*writebackChunk; {
			batch := addMany(t, l, rng, 50, 3, next)
			for _, e := range batch {
				n += int64(len(e.payload))
			}
			entries = append(entries, batch...)
		}
		var err error
		if len(ends) < 2 {
			err = l.Writeback()
		} else {
			err = l.Sync()
		}
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, activeSize())
		if ends[len(ends)-1] < from+3*writebackChunk {
			t.Fatalf("the log grew to %d, want past %d", ends[len(ends)-1], from+3*writebackChunk)
		}
		from = ends[len(ends)-1]
	}
	at := int64(0)
	starts := 0
	for _, c := range calls {
		if c.flags != unix.SYNC_FILE_RANGE_WRITE {
			continue // the wait for the previous step
		}
		starts++
		if c.n > writebackChunk || c.n <= 0 {
			t.Fatalf("a writeback request of %d bytes at %d (most %d)", c.n, c.off, writebackChunk)
		}
		if c.off != at {
			t.Fatalf("writeback started at %d, want %d (a gap or an overlap)", c.off, at)
		}
		at += c.n
	}
	if at != ends[2] || starts < 6 {
		t.Fatalf("writeback started for [0, %d) in %d requests, want [0, %d) in more than 6", at, starts, ends[2])
	}
	checkAll(t, l, entries)
}
