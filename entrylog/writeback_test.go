package entrylog

import (
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
