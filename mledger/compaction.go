package mledger

import (
	"context"
	"errors"
	"fmt"
)

// Compaction is the topic-compaction state recorded in the managed
// ledger's info node (docs/compaction.md). The compacted ledger is a
// plain ledger of the LedgerStore, outside the ledger list (never
// trimmed, never read by cursors); its format is its writer's business.
//
// A compaction runs as BeginCompaction (a fresh ledger, recorded as
// Pending before anything is written to it), writes, then
// CommitCompaction (the ledger becomes the compacted ledger, with its
// horizon, in one compare-and-set of the info). A crash before the commit
// leaves the previous compacted ledger in place and the pending one
// recorded, so the next BeginCompaction deletes it: nothing half-written
// is ever read, and nothing leaks.
type Compaction struct {
	// Ledger is the compacted ledger (-1: none yet).
	Ledger int64
	// Horizon is the last entry of the managed ledger the compacted
	// ledger covers.
	Horizon Position
	// Pending is the ledger of a compaction begun and not committed (-1:
	// none).
	Pending int64
}

func (c *Compaction) ledgerIDs() []int64 {
	if c == nil {
		return nil
	}
	var out []int64
	for _, id := range []int64{c.Ledger, c.Pending} {
		if id >= 0 {
			out = append(out, id)
		}
	}
	return out
}

// ErrCompactionConflict: another compaction of the same managed ledger
// committed or began since this one began.
var ErrCompactionConflict = errors.New("mledger: concurrent compaction")

// CompactionState returns the compaction state; ok is false if no
// compaction was ever committed (Pending may still be set).
func (ml *ManagedLedger) CompactionState() (Compaction, bool) {
	ml.infoMu.Lock()
	defer ml.infoMu.Unlock()
	if c := ml.info.compaction; c != nil {
		return *c, c.Ledger >= 0
	}
	return Compaction{Ledger: -1, Pending: -1}, false
}

// BeginCompaction deletes the ledger of an interrupted compaction (if
// any), creates a new ledger and records it as pending.
func (ml *ManagedLedger) BeginCompaction(ctx context.Context) (WriteLedger, error) {
	ml.infoMu.Lock()
	defer ml.infoMu.Unlock()
	if c := ml.info.compaction; c != nil && c.Pending >= 0 {
		if err := ml.store.Delete(ctx, c.Pending); err != nil {
			return nil, fmt.Errorf("mledger: delete the ledger of an interrupted compaction: %w", err)
		}
		if err := ml.updateInfo(ctx, func(in *mlInfo) error { in.compaction.Pending = -1; return nil }); err != nil {
			return nil, err
		}
	}
	w, err := ml.store.Create(ctx)
	if err != nil {
		return nil, err
	}
	err = ml.updateInfo(ctx, func(in *mlInfo) error {
		if in.compaction == nil {
			in.compaction = &Compaction{Ledger: -1, Pending: -1}
		}
		in.compaction.Pending = w.ID()
		return nil
	})
	if err != nil {
		_ = w.Close(ctx)
		_ = ml.store.Delete(ctx, w.ID())
		return nil, err
	}
	return w, nil
}

// CommitCompaction closes w and makes it the compacted ledger covering
// the managed ledger up to horizon. It returns the previous compacted
// ledger (-1: none), which the caller deletes once no reader uses it
// (DeleteCompactedLedger).
func (ml *ManagedLedger) CommitCompaction(ctx context.Context, w WriteLedger, horizon Position) (prev int64, err error) {
	if err := w.Close(ctx); err != nil {
		return -1, err
	}
	ml.infoMu.Lock()
	defer ml.infoMu.Unlock()
	prev = -1
	err = ml.updateInfo(ctx, func(in *mlInfo) error {
		if in.compaction == nil || in.compaction.Pending != w.ID() {
			return ErrCompactionConflict
		}
		prev = in.compaction.Ledger
		in.compaction = &Compaction{Ledger: w.ID(), Horizon: horizon, Pending: -1}
		return nil
	})
	return prev, err
}

// AbortCompaction drops a compaction begun with BeginCompaction.
func (ml *ManagedLedger) AbortCompaction(ctx context.Context, w WriteLedger) error {
	_ = w.Close(ctx)
	ml.infoMu.Lock()
	defer ml.infoMu.Unlock()
	err := ml.updateInfo(ctx, func(in *mlInfo) error {
		if in.compaction == nil || in.compaction.Pending != w.ID() {
			return ErrCompactionConflict
		}
		in.compaction.Pending = -1
		return nil
	})
	if err != nil {
		return err
	}
	return ml.store.Delete(ctx, w.ID())
}

// DeleteCompactedLedger deletes a compacted ledger CommitCompaction
// replaced. It refuses the current one.
func (ml *ManagedLedger) DeleteCompactedLedger(ctx context.Context, id int64) error {
	ml.infoMu.Lock()
	c := ml.info.compaction
	cur := c != nil && (c.Ledger == id || c.Pending == id)
	ml.infoMu.Unlock()
	if cur {
		return fmt.Errorf("mledger: ledger %d is in use by compaction", id)
	}
	return ml.store.Delete(ctx, id)
}

// OpenCompactedLedger opens the current compacted ledger for reading.
func (ml *ManagedLedger) OpenCompactedLedger(ctx context.Context) (ReadLedger, Compaction, error) {
	c, ok := ml.CompactionState()
	if !ok {
		return nil, c, ErrNoEntries
	}
	r, err := ml.store.Open(ctx, c.Ledger)
	return r, c, err
}
