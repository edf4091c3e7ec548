package mledger

import (
	"context"
	"slices"
	"time"
)

// Trim deletes the ledgers that every durable cursor has consumed (its
// mark-delete is at or past the ledger's last entry) and that retention no
// longer protects. Rules, oldest ledger first, stopping at the first ledger
// that is kept:
//
//   - the last ledger of the list (the current one) is never deleted;
//   - a ledger not yet consumed by the slowest durable cursor is kept (with
//     no durable cursor every ledger counts as consumed); the mark-delete
//     used is the one last persisted, so that a crash, which reverts a
//     cursor to its persisted state, never leaves it inside a deleted
//     ledger;
//   - a consumed ledger is deleted when it violates either retention
//     limit: closed more than RetentionTime ago (0: always; -1: never), or
//     the managed ledger's size without it still exceeds RetentionSize
//     (0: always; -1: never).
//
// The info is updated first (compare-and-set), then the ledgers are deleted
// from the ledger store; a crash in between leaks ledgers, never loses
// listed ones.
func (ml *ManagedLedger) Trim(ctx context.Context) error {
	ml.infoMu.Lock()
	defer ml.infoMu.Unlock()
	ml.mu.RLock()
	if ml.state == stateClosed {
		ml.mu.RUnlock()
		return ErrClosed
	}
	ml.mu.RUnlock()
	if err := ml.deleteBookieCopiesLocked(ctx, ml.f.opts.Now()); err != nil {
		return err
	}
	ml.mu.RLock()
	ls := slices.Clone(ml.ledgers)
	cursors := ml.cursorListLocked()
	ml.mu.RUnlock()
	if len(ls) < 2 {
		return nil
	}
	var slowest *Position
	for _, c := range cursors {
		if !c.durable {
			continue
		}
		md := c.persistedMarkDelete()
		if slowest == nil || md.Less(*slowest) {
			slowest = &md
		}
	}
	var total int64
	for _, l := range ls {
		total += l.Size
	}
	now := ml.f.opts.Now()
	var victims []int64
	var offloaded []LedgerInfo
	var deleted int64
	for _, l := range ls[:len(ls)-1] {
		if slowest != nil && slowest.LedgerID <= l.LedgerID &&
			!(slowest.LedgerID == l.LedgerID && slowest.EntryID >= l.Entries-1) {
			break
		}
		rt, rs := ml.cfg.RetentionTime, ml.cfg.RetentionSize
		expired := rt == 0 || (rt > 0 && now.Sub(time.UnixMilli(l.Timestamp)) > rt)
		overSize := rs == 0 || (rs > 0 && total-deleted > rs)
		if !expired && !overSize {
			break
		}
		victims = append(victims, l.LedgerID)
		if l.Offload != nil {
			offloaded = append(offloaded, l)
		}
		deleted += l.Size
	}
	if len(victims) == 0 {
		return nil
	}
	err := ml.updateInfo(ctx, func(in *mlInfo) error {
		in.ledgers = slices.DeleteFunc(in.ledgers, func(l LedgerInfo) bool {
			_, found := slices.BinarySearch(victims, l.LedgerID)
			return found
		})
		return nil
	})
	if err != nil {
		return err
	}
	ml.mu.Lock()
	ml.removeLedgersLocked(victims)
	ml.mu.Unlock()
	if err := deleteOffloaded(ctx, ml.offloader(), offloaded); err != nil {
		ml.log.Warn("delete offloaded objects of trimmed ledgers (leaked)", "err", err)
	}
	for _, id := range victims {
		if err := ml.store.Delete(ctx, id); err != nil {
			ml.log.Warn("delete trimmed ledger (leaked)", "ledger", id, "err", err)
		}
	}
	ml.log.Debug("trimmed ledgers", "ledgers", victims)
	return nil
}
