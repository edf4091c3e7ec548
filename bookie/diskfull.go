package bookie

import "github.com/magnetar-mq/magnetar/entrylog"

// Disk-full handling beyond the threshold check in CheckDisks:
//
//   - the disk check is not only periodic: every add spends its payload
//     twice (journal and entry log) from a budget of a quarter of the
//     headroom left below DiskUsageThreshold at the last check; once it is
//     spent the disk loop checks at once, so a fast producer cannot fill
//     the headroom between two periodic checks;
//   - a ledger directory's usage counts the write cache's bytes as used:
//     those entries are on disk in the journal only, and the checkpoints
//     that put them in an entry log need that space; without it a fast
//     producer could take the volume to 100% after the check, and a
//     checkpoint (which GC needs before it can reclaim anything) would
//     then never find room;
//   - while the bookie is read-only for disk usage or a failed checkpoint,
//     GC first rolls the active entry log when part of it belongs to
//     deleted ledgers (otherwise a log that never reaches LogSizeLimit is
//     never eligible for removal or compaction), and it runs at once when
//     the bookie turns read-only and after a ledger is deleted;
//   - after GC reclaimed space the disks are checked again, so writes
//     resume as soon as usage is below DiskUsageLWM;
//   - ENOSPC from the entry log is not sticky (entrylog.IsNoSpace): the
//     failed checkpoint keeps the frozen half, and the next checkpoint
//     retries it; Open and Close treat such a checkpoint failure as a
//     reason for read-only mode, not as an error (the journal keeps the
//     data).

// isNoSpace reports whether err is a write that found no space.
func isNoSpace(err error) bool {
	return entrylog.IsNoSpace(err)
}

// spaceReclaimer is what rollForSpace needs from the entry store
// (*entrylog.Log has it; test fakes need not).
type spaceReclaimer interface {
	ActiveUsage(isLive func(ledger int64) bool) entrylog.Usage
	Roll() error
}

// kickGC asks the GC loop for a pass now (no-op if one is already asked).
func (b *Bookie) kickGC() {
	select {
	case b.gcKick <- struct{}{}:
	default:
	}
}

// kickDiskCheck asks the disk loop for a check now.
func (b *Bookie) kickDiskCheck() {
	select {
	case b.diskKick <- struct{}{}:
	default:
	}
}

// spendDiskBudget accounts n bytes about to be written twice (journal and
// entry log) and asks for a disk check once the budget is spent.
func (b *Bookie) spendDiskBudget(n int) {
	if b.diskBudget.Add(-2*int64(n)-2*journalRecordOverhead) <= 0 {
		b.kickDiskCheck()
	}
}

// journalRecordOverhead approximates the per-record bytes besides the
// payload in the journal and the entry log.
const journalRecordOverhead = 64

// setDiskBudget sets the bytes adds may write before the next check: a
// quarter of the smallest headroom below the threshold over all
// directories.
func (b *Bookie) setDiskBudget(usages []dirUsage) {
	budget := int64(-1)
	for _, u := range usages {
		limit := float64(u.total) * (1 - b.opts.DiskUsageThreshold)
		head := int64(float64(u.free)-limit) / 4
		if budget < 0 || head < budget {
			budget = head
		}
	}
	if budget < 0 {
		budget = 0
	}
	b.diskBudget.Store(budget)
}

// rollForSpace rolls the active entry log when the bookie is read-only
// for lack of space and part of that log belongs to deleted ledgers, so
// that this GC pass may remove or compact it. The roll follows a
// successful checkpoint under ckptMu: every entry added to the log has its
// index location, so the compaction horizon may move past the rolled log.
// It reports false when a roll was wanted and failed for lack of space
// (the caller may free some and try again).
func (b *Bookie) rollForSpace() bool {
	if b.ro.reasons()&(roDiskFull|roStorage) == 0 {
		return true
	}
	sr, ok := b.el.(spaceReclaimer)
	if !ok {
		return true
	}
	u := sr.ActiveUsage(b.isLiveLedger)
	if u.ID == 0 || u.Live == u.Total {
		return true
	}
	b.ckptMu.Lock()
	defer b.ckptMu.Unlock()
	if err := b.checkpointLocked(true, false); err != nil {
		return !isNoSpace(err) // logged by the checkpoint; retried at the next pass
	}
	if err := sr.Roll(); err != nil {
		b.log.Warn("rolling the active entry log to reclaim space failed", "log", u.ID, "err", err)
		return !isNoSpace(err)
	}
	b.compactHorizon.Store(b.el.ActiveLogID())
	b.log.Info("rolled the active entry log to reclaim the space of deleted ledgers", "log", u.ID, "deadBytes", u.Total-u.Live)
	return true
}

// checkpointNoSpace handles a checkpoint that failed at Open or Close:
// for lack of space it is only logged (the journal keeps the data, the
// bookie is read-only until a checkpoint succeeds) and nil is returned.
func (b *Bookie) checkpointNoSpace(err error, when string) error {
	if err == nil || !isNoSpace(err) {
		return err
	}
	b.log.Warn("checkpoint at "+when+" found no space; the entries stay in the journal", "err", err)
	return nil
}
