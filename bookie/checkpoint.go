package bookie

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/journal"
)

// Checkpoint flushes the write cache into the entry log and the index and
// then lets the journal drop what that covers. The background loop runs it
// every CheckpointInterval and whenever the active write-cache half fills;
// callers may force one.
func (b *Bookie) Checkpoint() error {
	if b.closed.Load() {
		return ErrClosed
	}
	b.ckptMu.Lock()
	defer b.ckptMu.Unlock()
	return b.checkpointLocked(true)
}

// checkpointLocked runs one checkpoint; ckptMu is held. Steps:
//
//  1. swap the write-cache halves and take the journal mark under the cache
//     lock (a frozen half left by a failed flush is retried with its mark);
//  2. append the frozen half, sorted by (ledger, entry), to the entry log;
//     Flush and Sync it;
//  3. set the index locations and Flush the index (metadata changes since
//     the mark ride along);
//  4. release the frozen half (reads now go to the entry log);
//  5. journal Checkpoint(mark), unless journalCkpt is false (during replay).
//
// Entry-log data is durable before the index points at it, and both before
// the journal forgets the records.
func (b *Bookie) checkpointLocked(journalCkpt bool) error {
	start := time.Now()
	var markWait func() (journal.Position, error)
	swapped := false
	if b.wc.hasFrozen() {
		markWait, swapped = b.frozenMark, true
	} else {
		swapped = b.wc.swap(func() { markWait = b.j.Mark() })
		if swapped {
			b.frozenMark = markWait
		}
	}
	dirty := b.metaDirty.Swap(false)
	if !swapped && !dirty {
		// No flush half-done (no frozen half): logs sealed meanwhile, by
		// compaction say, are safe to compact.
		b.compactHorizon.Store(b.el.ActiveLogID())
		return nil
	}
	fail := func(step string, err error) error {
		b.metaDirty.Store(true)
		err = fmt.Errorf("bookie: checkpoint %s: %w", step, err)
		b.storageErr(err)
		if !isCorrupt(err) && b.ro.set(roStorage, err.Error()) {
			b.log.Error("checkpoint failed, bookie is read-only until one succeeds", "err", err)
		}
		return err
	}
	if swapped {
		// Two passes over the frozen half in the same sorted order: append
		// to the entry log (collecting locations), then, once the log is
		// durable, set the index. No list of the entries is built.
		if err := b.appendFrozen(); err != nil {
			return fail("entry log add", err)
		}
		if err := b.el.Flush(); err != nil {
			return fail("entry log flush", err)
		}
		if err := b.el.Sync(); err != nil {
			return fail("entry log sync", err)
		}
		if h := b.hooks.afterFlushSync; h != nil {
			h()
		}
		if err := b.indexFrozen(); err != nil {
			return fail("index put", err)
		}
	}
	if err := b.idx.Flush(); err != nil {
		return fail("index flush", err)
	}
	// Every entry added to the entry log so far has its index location:
	// logs below the active one are safe to compact from now on.
	b.compactHorizon.Store(b.el.ActiveLogID())
	if swapped {
		b.wc.release()
		b.frozenMark = nil
	}
	if journalCkpt && markWait != nil {
		mark, err := markWait()
		if err != nil {
			return fail("journal mark", err)
		}
		b.pendingMark, b.hasPendingMark = mark, true
	}
	if b.hasPendingMark {
		switch err := b.j.Checkpoint(b.pendingMark); {
		case err == nil:
			b.hasPendingMark = false
		case errors.Is(err, journal.ErrMarkNotFound):
			// Not expected (the journal publishes its durable end before
			// completing a Sync); the checkpoint only trims the journal, so
			// retry it next round rather than fail.
		default:
			return fail("journal", err)
		}
	}
	if b.ro.clear(roStorage) {
		b.log.Info("checkpoint succeeded again, storage failure cleared")
	}
	b.stats.checkpoints.Add(1)
	b.m.checkpointLatency.ObserveDuration(time.Since(start))
	return nil
}

// ckptBatch is how many records the checkpoint hands the entry log per
// call, and how many index runs it sets, between yields of its goroutine.
const ckptBatch = 256

// appendFrozen appends the frozen half's records to the entry log in
// (ledger, entry) order, ckptBatch per call, collecting their locations in
// b.locBuf. The cached bytes are the entry-log records already (small ones
// get their checksum here). After each batch the goroutine yields: a
// checkpoint of a full cache half is tens of milliseconds of CPU, and
// without the yields it holds a processor until the scheduler preempts it
// (10 ms) while the journal's committer, woken meanwhile, waits to run.
func (b *Bookie) appendFrozen() error {
	b.locBuf = b.locBuf[:0]
	recs := b.recBuf[:0]
	defer func() { clear(recs); b.recBuf = recs[:0] }()
	add := func() error {
		var err error
		b.locBuf, err = b.el.AddRecords(recs, b.locBuf)
		clear(recs)
		recs = recs[:0]
		runtime.Gosched()
		return err
	}
	err := b.wc.frozenEach(func(_ key, rec []byte) error {
		recs = append(recs, sealRecord(rec))
		if len(recs) == ckptBatch {
			return add()
		}
		return nil
	})
	if err == nil && len(recs) > 0 {
		err = add()
	}
	return err
}

// indexFrozen sets the index locations of the frozen half's entries (same
// order as appendFrozen, b.locBuf[i] for the i-th), one call per run of
// consecutive entries of a ledger (at most ckptRun entries), yielding
// after about ckptBatch calls' or ckptRun entries' worth of work.
func (b *Bookie) indexFrozen() error {
	var (
		i, start, work int
		run            key // ledger and first entry of the run at locBuf[start:i]
	)
	flush := func() error {
		err := b.idx.PutRun(run.ledger, run.entry, b.locBuf[start:i])
		if work += 1 + (i-start)*ckptBatch/ckptRun; work >= ckptBatch {
			work = 0
			runtime.Gosched()
		}
		start = i
		return err
	}
	err := b.wc.frozenEach(func(k key, _ []byte) error {
		if i == len(b.locBuf) {
			return fmt.Errorf("BUG: frozen half has more entries than were appended (%d)", len(b.locBuf))
		}
		if i > start && (k.ledger != run.ledger || k.entry != run.entry+int64(i-start) || i-start == ckptRun) {
			if err := flush(); err != nil {
				return err
			}
		}
		if i == start {
			run = k
		}
		i++
		return nil
	})
	if err == nil && i > start {
		err = flush()
	}
	if err == nil && i != len(b.locBuf) {
		// DeleteLedger holds ckptMu, so the half cannot change between
		// the passes; if it did, locations would be misassigned.
		err = fmt.Errorf("BUG: frozen half has %d entries, %d were appended", i, len(b.locBuf))
	}
	return err
}

// ckptRun bounds the entries set by one index call in indexFrozen.
const ckptRun = 4096

// checkpointTick is the checkpoint loop's work (open.go starts it with
// every).
func (b *Bookie) checkpointTick() {
	b.ckptMu.Lock()
	if err := b.checkpointLocked(true); err != nil {
		// The first failure of a kind was logged with the read-only
		// switch; repeating it every interval would flood the log
		// (of a disk that may be full).
		b.log.Debug("checkpoint failed", "err", err)
	}
	b.ckptMu.Unlock()
}

// CheckDisks measures the usage of the journal and every ledger directory
// and updates read-only mode: above DiskUsageThreshold on any directory the
// bookie turns read-only; it turns writable again once every directory is
// below DiskUsageLWM. The background loop calls it every
// DiskCheckInterval. It does nothing when the FS cannot report usage.
func (b *Bookie) CheckDisks() error {
	du, ok := b.opts.FS.(vfs.DiskUsager)
	if !ok {
		return nil
	}
	dirs := append([]string{b.opts.JournalDir}, b.opts.LedgerDirs...)
	usages := make([]dirUsage, 0, len(dirs))
	minFree := ^uint64(0)
	// The write cache's entries are on disk in the journal only; the next
	// checkpoints write them to an entry log as well. A ledger directory
	// counts them as used already: otherwise a fast producer fills the
	// headroom twice over (once in the journal before the check, once in
	// the entry log after it), a checkpoint then finds no space, and GC,
	// which needs one first, cannot reclaim any.
	active, frozen := b.wc.size()
	pending := uint64(max(active+frozen, 0))
	for i, d := range dirs {
		total, free, err := du.DiskUsage(d)
		if err != nil {
			return fmt.Errorf("bookie: disk usage of %s: %w", d, err)
		}
		if i > 0 {
			free -= min(free, pending)
		}
		usages = append(usages, dirUsage{dir: d, total: total, free: free})
		minFree = min(minFree, free)
	}
	b.minFree.Store(minFree)
	b.setDiskBudget(usages)
	wasFull := b.ro.reasons()&roDiskFull != 0
	full, msg := diskFull(wasFull, usages, b.opts.DiskUsageThreshold, b.opts.DiskUsageLWM)
	switch {
	case full:
		if b.ro.set(roDiskFull, msg) {
			b.log.Warn("bookie is read-only", "reason", msg)
			b.kickGC()
		}
	case wasFull:
		b.ro.clear(roDiskFull)
		b.log.Info("disk usage below low-water mark, bookie is writable again")
	}
	return nil
}

// diskTick is the disk loop's work.
func (b *Bookie) diskTick() {
	if err := b.CheckDisks(); err != nil {
		b.log.Warn("disk check failed", "err", err)
	}
}
