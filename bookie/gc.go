package bookie

import "fmt"

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
	b.rollForSpace()
	horizon := b.compactHorizon.Load()
	st, err := b.el.GC(b.ctx, b.isLiveLedger, b.opts.CompactionThreshold, horizon, b.relocate)
	b.stats.gcRuns.Add(1)
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
