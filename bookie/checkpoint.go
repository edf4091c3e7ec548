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
	b.lockCheckpoint()
	defer b.ckptMu.Unlock()
	return b.checkpointLocked(true, false)
}

// lockCheckpoint takes ckptMu for a caller that should not wait for a
// paced checkpoint's sleeps: the pacer sees it waiting and finishes at
// full speed.
func (b *Bookie) lockCheckpoint() {
	b.ckptWaiting.Add(1)
	b.ckptMu.Lock()
	b.ckptWaiting.Add(-1)
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
//
// With paced (the background loop's checkpoints), step 2 is spread over
// time (pacer).
func (b *Bookie) checkpointLocked(journalCkpt, paced bool) error {
	start := time.Now()
	ct := startCheckpointTimer()
	var markWait func() (journal.Position, error)
	swapped := false
	filled := time.Duration(0) // how long the frozen half took to fill
	if b.wc.hasFrozen() {
		markWait, swapped = b.frozenMark, true
	} else {
		swapped = b.wc.swap(func() { markWait = b.j.Mark() })
		if swapped {
			b.frozenMark = markWait
			filled = start.Sub(b.lastSwap)
			b.lastSwap = start
		}
	}
	dirty := b.metaDirty.Swap(false)
	if !swapped && !dirty {
		// No flush half-done (no frozen half): logs sealed meanwhile, by
		// compaction say, are safe to compact.
		b.compactHorizon.Store(b.el.ActiveLogID())
		return nil
	}
	if swapped {
		ct.s.Entries, ct.s.Bytes = b.wc.frozenSize()
	}
	fail := func(step string, err error) error {
		b.checkpointDone(&ct, err)
		b.metaDirty.Store(true)
		// A failed checkpoint leaves no index update pending: the next
		// one appends the whole frozen half again and indexes those
		// copies. What this one appended to logs it sealed is garbage,
		// so those logs are safe to compact (without this, a bookie
		// whose checkpoints keep failing on a full disk could never
		// compact the logs sealed since its last success, and GC
		// reclaimed nothing after a restart on a full volume).
		b.compactHorizon.Store(b.el.ActiveLogID())
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
		ct.skip()
		p := &pacer{b: b, total: ct.s.Bytes + int64(ct.s.Entries)*entrylogRecordOverhead}
		if paced && b.opts.CheckpointSpread > 0 && filled > 0 {
			p.spread, p.start = min(b.opts.CheckpointSpread, filled/2), start
		}
		if err := b.appendFrozen(p); err != nil {
			return fail("entry log add", err)
		}
		ct.s.Paced = int64(p.slept)
		ct.step(CkptAppend)
		if err := b.el.Flush(); err != nil {
			return fail("entry log flush", err)
		}
		if err := b.el.Sync(); err != nil {
			return fail("entry log sync", err)
		}
		ct.step(CkptLogSync)
		if h := b.hooks.afterFlushSync; h != nil {
			h()
		}
		ct.skip()
		if err := b.indexFrozen(); err != nil {
			return fail("index put", err)
		}
		ct.step(CkptIndex)
	}
	ct.skip()
	if err := b.idx.Flush(); err != nil {
		return fail("index flush", err)
	}
	ct.step(CkptIndexFlush)
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
	ct.step(CkptJournal)
	if b.ro.clear(roStorage) {
		b.log.Info("checkpoint succeeded again, storage failure cleared")
	}
	b.stats.checkpoints.Add(1)
	b.m.checkpointLatency.ObserveDuration(time.Since(start))
	b.checkpointDone(&ct, nil)
	return nil
}

// checkpointDone records the steps of a checkpoint that flushed
// something (Stats.CheckpointStages, Options.OnCheckpoint).
func (b *Bookie) checkpointDone(ct *checkpointTimer, err error) {
	s := ct.done(err)
	if err == nil {
		for i, d := range s.D {
			b.m.checkpointStages[i].Observe(d)
		}
	}
	if h := b.opts.OnCheckpoint; h != nil {
		h(s)
	}
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
func (b *Bookie) appendFrozen(p *pacer) error {
	b.locBuf = b.locBuf[:0]
	recs := b.recBuf[:0]
	defer func() { clear(recs); b.recBuf = recs[:0] }()
	add := func() error {
		var err error
		n := 0
		for _, r := range recs {
			n += len(r)
		}
		b.locBuf, err = b.el.AddRecords(recs, b.locBuf)
		clear(recs)
		recs = recs[:0]
		if err == nil {
			err = p.step(n)
		}
		return err
	}
	spans := b.spanBuf[:0]
	err := b.wc.frozenEach(func(k key, rec []byte) error {
		if n := len(spans); n > 0 && spans[n-1].ledger == k.ledger && spans[n-1].first+int64(spans[n-1].n) == k.entry && spans[n-1].n < ckptRun {
			spans[n-1].n++
		} else {
			spans = append(spans, ckptSpan{ledger: k.ledger, first: k.entry, n: 1})
		}
		recs = append(recs, sealRecord(rec))
		if len(recs) == ckptBatch {
			return add()
		}
		return nil
	})
	if err == nil && len(recs) > 0 {
		err = add()
	}
	b.spanBuf = spans
	return err
}

// ckptSpan is a run of consecutive entries of a ledger in the order
// appendFrozen appended them (at most ckptRun): one index call each.
type ckptSpan struct {
	ledger, first int64
	n             int
}

// entrylogRecordOverhead is an entry-log record's header.
const entrylogRecordOverhead = 24

// pacer spreads a checkpoint's entry-log appends over time (Options.
// CheckpointSpread; doc.go, "Paced checkpoints"). Between batches it
// yields the processor; when paced it sleeps so that the bytes appended
// follow a straight line from start to start+spread, and before each
// sleep it hands what it appended to the device (entrylog Writeback), so
// the device writes a step while the checkpoint sleeps. Once the active
// half is half full it stops sleeping: the next checkpoint is near.
type pacer struct {
	b      *Bookie
	total  int64         // bytes the checkpoint will append (about)
	spread time.Duration // 0: not paced
	start  time.Time
	done   int64 // bytes appended so far
	slept  time.Duration
}

// pacerNap is the longest the pacer sleeps before it looks again at
// whether it should stop pacing.
const pacerNap = 10 * time.Millisecond

// step counts n bytes appended and yields or sleeps.
func (p *pacer) step(n int) error {
	p.done += int64(n)
	wroteBack := false
	for p.spread > 0 && p.total > 0 && p.done < p.total {
		if p.hurry() {
			p.spread = 0
			break
		}
		due := time.Duration(float64(p.spread) * float64(p.done) / float64(p.total))
		ahead := due - time.Since(p.start)
		if ahead < time.Millisecond { // sleeps shorter than that last a millisecond here
			break
		}
		if !wroteBack {
			if err := p.b.el.Writeback(); err != nil {
				return err
			}
			wroteBack = true
			continue // the writeback may have waited: look again
		}
		nap := min(ahead, pacerNap)
		time.Sleep(nap)
		p.slept += nap
	}
	runtime.Gosched()
	return nil
}

// hurry reports whether the checkpoint must finish at full speed: the
// active half is half full (the next checkpoint is near), someone waits
// for the checkpoint lock, or the bookie is closing.
func (p *pacer) hurry() bool {
	if active, _ := p.b.wc.size(); active >= p.b.wc.halfSize/2 {
		return true
	}
	return p.b.ckptWaiting.Load() > 0 || p.b.closed.Load()
}

// indexFrozen sets the index locations of the frozen half's entries:
// one index call per span appendFrozen recorded (b.spanBuf, locations in
// b.locBuf in the same order), yielding after about ckptBatch calls' or
// ckptRun entries' worth of work.
func (b *Bookie) indexFrozen() error {
	total := 0
	for _, sp := range b.spanBuf {
		total += sp.n
	}
	if total != len(b.locBuf) {
		// DeleteLedger holds ckptMu, so the half cannot change between
		// the append and here; if it did, locations would be misassigned.
		return fmt.Errorf("BUG: frozen half has %d entries in spans, %d were appended", total, len(b.locBuf))
	}
	at, work := 0, 0
	for _, sp := range b.spanBuf {
		if err := b.idx.PutRun(sp.ledger, sp.first, b.locBuf[at:at+sp.n]); err != nil {
			return err
		}
		at += sp.n
		if work += 1 + sp.n*ckptBatch/ckptRun; work >= ckptBatch {
			work = 0
			runtime.Gosched()
		}
	}
	return nil
}

// ckptRun bounds the entries set by one index call in indexFrozen.
const ckptRun = 4096

// checkpointTick is the checkpoint loop's work (open.go starts it with
// every).
func (b *Bookie) checkpointTick() {
	b.ckptMu.Lock()
	if err := b.checkpointLocked(true, true); err != nil {
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
	if b.rm != nil {
		// A full disk wants the space of what GC deletes at once.
		b.rm.Hurry(full)
	}
	switch {
	case full:
		if b.ro.set(roDiskFull, msg) {
			b.log.Warn("bookie is read-only", "reason", msg)
			b.kickGC()
		}
	case wasFull:
		b.ro.clear(roDiskFull)
		b.log.Info("disk usage below low-water mark, bookie is writable again")
		b.ensureReserves()
	}
	return nil
}

// diskTick is the disk loop's work.
func (b *Bookie) diskTick() {
	if err := b.CheckDisks(); err != nil {
		b.log.Warn("disk check failed", "err", err)
	}
}
