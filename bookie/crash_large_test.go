package bookie

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/entrylog"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// largePayload gives entries of 1 byte to ~300 KiB, derived from their ids:
// most are above entrylog.DirectWriteMin, so checkpoints write them from
// the write cache with vectored writes, and some are above the write
// cache's chunk size/4 and get an arena allocation of their own.
func largePayload(ledger, entry int64) []byte {
	x := uint64(ledger)*0x9E3779B97F4A7C15 + uint64(entry)*0xBF58476D1CE4E5B9
	x ^= x >> 29
	size := 1 + int(x%(300<<10))
	if x%7 == 0 {
		size = 1 + int(x%2048) // some small ones in between (copied into the entry-log buffer)
	}
	return payloadFor(ledger, entry, size)
}

// TestCrashCloneLargeEntries: entries of up to ~300 KiB are added from
// several goroutines while checkpoints run often (a 2 MiB write cache), so
// every checkpoint writes entry-log records straight from the write cache
// (entrylog.AddRecord, vectored writes). The MemFS is crash-cloned right
// after a checkpoint and at random points, with the three crash models
// (synced only, a random prefix of unsynced writes, an arbitrary subset of
// them). Every entry acknowledged before a clone reads back byte for byte
// from it, and nothing reads back corrupt.
func TestCrashCloneLargeEntries(t *testing.T) {
	for seed := uint64(1); seed <= 2; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { crashCloneLarge(t, seed) })
	}
}

func crashCloneLarge(t *testing.T, seed uint64) {
	if largePayload(1, 0) == nil || entrylog.DirectWriteMin > 64<<10 {
		t.Fatal("largePayload must produce entries above the direct-write size")
	}
	rng := rand.New(rand.NewPCG(seed, 5))
	fs := vfs.NewMem()
	opts := func() Options {
		o := memOptions(fs)
		o.WriteCacheSize = 2 << 20
		o.EntryLogMaxSize = 4 << 20
		o.JournalMaxFileSize = 4 << 20
		return o
	}
	b, err := Open(opts())
	if err != nil {
		t.Fatal(err)
	}
	ledgers := []int64{1, 2}
	adders := startCrashAdders(b, ledgers, 8, largePayload)
	var clones []crashClone
	for i := 0; i < 4; i++ {
		adders.waitAcked(adders.acked.len()+10+rng.IntN(30), 200*time.Microsecond)
		snap := adders.acked.snapshot()
		b.ckptMu.Lock()
		if i%2 == 0 {
			// Right after a checkpoint of the new write path.
			if err := b.checkpointLocked(true, false); err != nil {
				b.ckptMu.Unlock()
				t.Fatal(err)
			}
		}
		var cfs *vfs.MemFS
		switch i % 3 {
		case 0:
			cfs = fs.CrashClone()
		case 1:
			cfs = fs.CrashCloneRandom(rng)
		default:
			cfs = fs.CrashCloneSubset(rng)
		}
		b.ckptMu.Unlock()
		clones = append(clones, crashClone{cfs, snap})
	}
	adders.finish(t)
	if n := b.stats.checkpoints.Load(); n < 4 {
		t.Fatalf("%d checkpoints ran, want several with data", n)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for i, c := range clones {
		fs = c.fs
		b, err := Open(opts())
		if err != nil {
			t.Fatalf("clone %d: Open = %v", i, err)
		}
		// Twice: from the write cache (replayed journal) or the entry log,
		// then after a checkpoint, from the entry log only.
		verifyWith(t, b, c.acked, ledgers, nil, largePayload)
		if err := b.Checkpoint(); err != nil {
			t.Fatalf("clone %d: Checkpoint = %v", i, err)
		}
		verifyWith(t, b, c.acked, ledgers, nil, largePayload)
		if err := b.Close(); err != nil {
			t.Fatalf("clone %d: Close = %v", i, err)
		}
		b, err = Open(opts())
		if err != nil {
			t.Fatalf("clone %d: second Open = %v", i, err)
		}
		verifyWith(t, b, c.acked, ledgers, nil, largePayload)
		if err := b.Close(); err != nil {
			t.Fatalf("clone %d: Close = %v", i, err)
		}
		t.Logf("clone %d: %d acked entries verified", i, len(c.acked))
	}
}
