package bookie

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestLargeEntryFaultsKeepAckedData: with entries large enough for every
// new path (journal writes from the write cache, entry-log records
// written straight from it), an entry-log write error at a checkpoint and
// then a journal fsync error each turn the bookie read-only without losing
// an acknowledged entry: all read back before and after a restart from a
// crash clone. The failed checkpoint keeps the frozen half, and release
// does not wait forever for journal references after the journal failed.
func TestLargeEntryFaultsKeepAckedData(t *testing.T) {
	opts := func(fs vfs.FS) Options {
		o := faultOptions(fs)
		o.WriteCacheSize = 64 << 20 // only the test's Checkpoint calls flush
		return o
	}
	mem := vfs.NewMem()
	logEIO := vfs.NewToggle(vfs.PathMatch("*.log", vfs.IOError(vfs.OpWrite)))
	txnEIO := vfs.NewToggle(vfs.PathMatch("*.txn", vfs.IOError(vfs.OpSync)))
	fs := vfs.NewErrorFS(mem, vfs.Or(logEIO, txnEIO))
	b, err := Open(opts(fs))
	if err != nil {
		t.Fatal(err)
	}
	acked := map[key]bool{}
	add := func(e int64) error {
		err := addSync(b, 1, e, mk, largePayload(1, e), false)
		if err == nil {
			acked[key{1, e}] = true
		}
		return err
	}
	for e := int64(0); e < 8; e++ {
		if err := add(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for e := int64(8); e < 16; e++ {
		if err := add(e); err != nil {
			t.Fatal(err)
		}
	}
	logEIO.Enable()
	if err := b.Checkpoint(); !errors.Is(err, unix.EIO) {
		t.Fatalf("checkpoint with failing entry-log writes = %v, want EIO", err)
	}
	logEIO.Disable()
	if err := add(16); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("add after a failed checkpoint = %v, want ErrReadOnly", err)
	}
	verifyWith(t, b, acked, []int64{1}, nil, largePayload)
	if err := b.Close(); err == nil {
		t.Fatal("Close after a sticky entry-log failure reported no error")
	}
	mem = mem.CrashClone() // the restart: what the first bookie made durable
	b, err = Open(opts(vfs.NewErrorFS(mem, vfs.Or(logEIO, txnEIO))))
	if err != nil {
		t.Fatal(err)
	}
	verifyWith(t, b, acked, []int64{1}, nil, largePayload)
	// Now the journal's fsync fails under large adds (written from the
	// write cache): nothing more is acked, the bookie turns read-only.
	for e := int64(16); e < 20; e++ {
		if err := add(e); err != nil {
			t.Fatal(err)
		}
	}
	txnEIO.Enable()
	if err := add(20); err == nil {
		t.Fatal("add with a failing journal fsync was acked")
	}
	txnEIO.Disable()
	if err := add(21); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("add after the journal failed = %v, want ErrReadOnly", err)
	}
	verifyWith(t, b, acked, []int64{1}, nil, largePayload)
	// The checkpoint writes the entry log and the index but cannot take a
	// journal mark; it returns (release got the failed adds' references
	// back through their error completions).
	if err := b.Checkpoint(); err == nil {
		t.Fatal("checkpoint after the journal failed reported no error")
	}
	b.Close()
	b, err = Open(opts(mem.CrashClone()))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	verifyWith(t, b, acked, []int64{1}, nil, largePayload)
}
