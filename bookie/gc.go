package bookie

import (
	"fmt"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// GC runs one garbage-collection pass over the entry logs: logs that hold
// only deleted ledgers are removed, and logs whose live fraction is below
// CompactionThreshold are compacted (live entries re-appended elsewhere,
// the index repointed, the old log removed). Adds never wait for it; reads
// that race a move look the location up again.
func (b *Bookie) GC() error {
	if b.closed.Load() {
		return ErrClosed
	}
	b.gcMu.Lock()
	defer b.gcMu.Unlock()
	// A log sealed during a checkpoint that is still setting index
	// locations must not be compacted: relocating an entry before its first
	// index update would let that update point the index back at the old
	// log, which is then removed. The horizon was read at the end of the
	// last checkpoint, with no flush running.
	//
	// The GC reserve (reserve.go) is spent only when reclaiming needs it
	// and it is enough: a roll whose checkpoint found no space, a
	// compaction postponed for want of room, each needing no more than
	// the free space and the reserve together. Spent earlier (or on a
	// checkpoint of a write cache larger than the reserve, which fails
	// anyway), the ongoing checkpoints would take it and leave nothing
	// for when a ledger is deleted.
	if !b.rollForSpace() && b.reserveHelps(b.checkpointNeed()) && b.releaseReserves() > 0 {
		b.rollForSpace()
	}
	req := gcRequest{
		live: b.isLiveLedger, threshold: b.opts.CompactionThreshold, horizon: b.compactHorizon.Load(),
		relocate: b.relocate, room: b.compactionRoom,
	}
	st, err := b.el.GC(b.ctx, req)
	if err == nil && st.Postponed > 0 && b.reserveHelps(st.Need) && b.releaseReserves() > 0 {
		var more gcStats
		more, err = b.el.GC(b.ctx, req)
		more.LogsDeleted += st.LogsDeleted
		more.LogsCompacted += st.LogsCompacted
		more.BytesReclaimed += st.BytesReclaimed
		st = more
	}
	b.stats.gcRuns.Add(1)
	b.notePostponed(st)
	if err != nil {
		return b.storageErr(fmt.Errorf("bookie: gc: %w", err))
	}
	if st.LogsDeleted+st.LogsCompacted > 0 {
		b.log.Info("entry-log gc", "deleted", st.LogsDeleted, "compacted", st.LogsCompacted, "reclaimed", st.BytesReclaimed)
		if b.ro.reasons()&roDiskFull != 0 {
			// Writable again at once if that was enough.
			if err := b.CheckDisks(); err != nil {
				b.log.Warn("disk check failed", "err", err)
			}
		}
	}
	return nil
}

// notePostponed logs a compaction postponed for want of space when that
// starts or what it needs changes (GC runs every few seconds on a full
// disk: one line per pass would flood the log), and when it ends.
func (b *Bookie) notePostponed(st gcStats) {
	switch {
	case st.Postponed > 0 && st.Need != b.gcPostponedNeed:
		b.log.Warn("entry-log compaction postponed for want of space", "logs", st.Postponed, "needBytes", st.Need, "freeBytes", b.compactionRoom())
	case st.Postponed == 0 && b.gcPostponedNeed != 0:
		b.log.Info("entry-log compaction no longer postponed")
	}
	b.gcPostponedNeed = st.Need
}

// compactionRoom is the free space of the fullest ledger directory
// (compaction copies go to the active log, in any of them); -1 when the
// file system cannot tell.
func (b *Bookie) compactionRoom() int64 {
	du, ok := b.opts.FS.(vfs.DiskUsager)
	if !ok {
		return -1
	}
	room := int64(-1)
	for _, d := range b.opts.LedgerDirs {
		_, free, err := du.DiskUsage(d)
		if err != nil {
			return -1
		}
		if room < 0 || int64(free) < room {
			room = int64(free)
		}
	}
	return room
}

func (b *Bookie) isLiveLedger(ledger int64) bool {
	if v, ok := b.ledgers.Load(ledger); ok {
		st := v.(*ledgerState)
		st.mu.Lock()
		defer st.mu.Unlock()
		return !st.deleted
	}
	_, ok, err := b.idx.Meta(ledger)
	// On an index error keep the data: GC must never lose entries.
	return ok || err != nil
}

// relocate repoints the index at compacted copies and makes it durable.
// An entry whose location changed meanwhile (re-added, deleted) is left
// alone.
func (b *Bookie) relocate(moves []relocation) error {
	if h := b.hooks.beforeRelocate; h != nil {
		h()
	}
	b.ckptMu.Lock()
	defer b.ckptMu.Unlock()
	for _, m := range moves {
		cur, ok, err := b.idx.Get(m.ledger, m.entry)
		if err != nil {
			return err
		}
		if !ok || cur != m.oldLoc {
			continue
		}
		if err := b.idx.Put(m.ledger, m.entry, m.newLoc); err != nil {
			return err
		}
	}
	return b.idx.Flush()
}

// gcTick is the GC loop's work.
func (b *Bookie) gcTick() {
	if err := b.GC(); err != nil {
		b.log.Warn("gc failed", "err", err)
	}
}
