package bookie

import (
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestCheckpointRunsAndBatches: one checkpoint of a cache half holding a
// long dense ledger (runs longer than ckptRun, many entry-log batches), a
// ledger with a gap after every entry (runs of one) and one added in
// reverse order (the write cache's sparse path) writes every entry to the
// entry log and the index: each reads back from the entry log after the
// checkpoint and after a reopen, which replays nothing the checkpoint
// covered.
func TestCheckpointRunsAndBatches(t *testing.T) {
	fs := vfs.NewMem()
	opts := Options{
		FS:                   fs,
		JournalDir:           "/bk/journal",
		LedgerDirs:           []string{"/bk/ledgers"},
		WriteCacheSize:       64 << 20,
		CheckpointInterval:   time.Hour,
		DiskCheckInterval:    -1,
		GCInterval:           -1,
		IndexSlotsPerPage:    64,
		IndexPagesPerSegment: 256,
	}
	b, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct{ ledger, entry int64 }
	var added []entry
	for e := range int64(2*ckptRun + 1000) {
		added = append(added, entry{1, e})
	}
	for e := int64(0); e < 3000; e += 3 {
		added = append(added, entry{2, e})
	}
	for e := int64(700); e >= 0; e-- {
		added = append(added, entry{3, e})
	}
	size := func(e entry) int { return 20 + int(e.entry%50) }
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for _, e := range added {
		wg.Add(1)
		b.AddEntry(e.ledger, e.entry, mk, payloadFor(e.ledger, e.entry, size(e)), false, func(err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
		})
	}
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if a, f := b.wc.size(); a != 0 || f != 0 {
		t.Fatalf("write cache after the checkpoint: active %d, frozen %d bytes", a, f)
	}
	check := func(b *Bookie) {
		t.Helper()
		for _, e := range added {
			mustRead(t, b, e.ledger, e.entry, payloadFor(e.ledger, e.entry, size(e)))
		}
		for l, last := range map[int64]int64{1: 2*ckptRun + 999, 2: 2997, 3: 700} {
			got, ok, err := b.idx.LastEntry(l)
			if err != nil || !ok || got != last {
				t.Fatalf("index LastEntry(%d) = %d, %v, %v, want %d", l, got, ok, err, last)
			}
		}
	}
	check(b)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if a, f := b.wc.size(); a != 0 || f != 0 {
		t.Fatalf("write cache after reopen: active %d, frozen %d bytes (replayed what the checkpoint covered)", a, f)
	}
	check(b)
}
