package bookie

import (
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestGCDuringCheckpointFlush reproduces the compaction/flush race
// deterministically: a checkpoint's flush seals entry log A (it rolls
// while the frozen half is appended) and is paused, by a hook, after the
// entry log is synced but before the index holds the new locations. A GC
// pass runs in that window. Compacting A then would copy the entries,
// find no index location to repoint (or be overwritten by the flush's
// update to the old location) and remove A: the entries would be gone.
// GC must leave A alone until the flush has finished, and compact it on a
// later pass; every entry reads back before and after a restart.
func TestGCDuringCheckpointFlush(t *testing.T) {
	mem := vfs.NewMem()
	o := faultOptions(mem)
	o.WriteCacheSize = 8 << 20 // no size-triggered checkpoints
	o.EntryLogMaxSize = 64 << 10
	o.CompactionThreshold = 0.9
	b, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { b.Close() }()
	// Ledger 1 fills half of log A, then is deleted: A is mostly dead.
	for e := int64(0); e < 40; e++ {
		if err := addSync(b, 1, e, mk, entryPayload(1, e), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteLedger(1); err != nil {
		t.Fatal(err)
	}
	// Ledger 2's flush fills A past its limit: A is sealed mid-flush.
	const n2 = 80
	for e := int64(0); e < n2; e++ {
		if err := addSync(b, 2, e, mk, entryPayload(2, e), false); err != nil {
			t.Fatal(err)
		}
	}
	inFlush, release := make(chan struct{}), make(chan struct{})
	b.hooks.afterFlushSync = func() {
		b.hooks.afterFlushSync = nil // once; only this goroutine reads it
		close(inFlush)
		<-release
	}
	ckptDone := make(chan error, 1)
	go func() { ckptDone <- b.Checkpoint() }()
	<-inFlush

	atRelocate := make(chan struct{}, 1)
	b.hooks.beforeRelocate = func() {
		select {
		case atRelocate <- struct{}{}:
		default:
		}
	}
	gcDone := make(chan error, 1)
	go func() { gcDone <- b.GC() }()
	// Let the flush go on once GC either finished or is about to repoint
	// the index (the buggy order: its copies were made before the flush's
	// index updates).
	compactedDuringFlush := false
	select {
	case err := <-gcDone:
		if err != nil {
			t.Fatalf("GC during flush: %v", err)
		}
		gcDone <- nil
	case <-atRelocate:
		compactedDuringFlush = true
	}
	close(release)
	if err := <-ckptDone; err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	if err := <-gcDone; err != nil {
		t.Fatalf("GC: %v", err)
	}
	if compactedDuringFlush {
		t.Errorf("GC compacted a log sealed by a checkpoint still setting index locations")
	}
	check := func(b *Bookie) {
		t.Helper()
		for e := int64(0); e < n2; e++ {
			mustRead(t, b, 2, e, entryPayload(2, e))
		}
	}
	check(b)
	// A later pass, with no flush running, compacts A.
	before := logFiles(t, mem, "/bk/ledgers")
	b.hooks.beforeRelocate = nil
	if err := b.GC(); err != nil {
		t.Fatal(err)
	}
	after := logFiles(t, mem, "/bk/ledgers")
	if len(after) >= len(before) {
		t.Fatalf("GC after the flush reclaimed nothing: logs before %v, after %v", before, after)
	}
	check(b)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err = Open(o); err != nil {
		t.Fatal(err)
	}
	check(b)
}
