package bookie

import (
	"sync"
	"sync/atomic"
	"time"
)

// ledgerState caches one ledger's metadata and highest entry id. It is
// a copy of what the index and the write cache hold: every change to
// meta is written to the index (Index.SetMeta) before mu is released, and
// every entry counted in lastEntry is in the write cache or the index.
// So an idle state can be dropped (evictIdleLedgers) and loaded again
// from them (ledgerFor) without losing anything.
type ledgerState struct {
	mu        sync.Mutex
	known     bool // exists in the index (false: created by this call, not yet set)
	deleted   bool
	evicted   bool // dropped from Bookie.ledgers: holders load the ledger again
	used      bool // locked since the last eviction sweep
	meta      ledgerMeta
	lastEntry int64 // -1: none
	// readRecord is the mean entry-log record size of the last read-cache
	// miss's run (sizes the next miss's read; 0: none yet).
	readRecord atomic.Int64
}

// ledgerFor returns the state of ledger, loading it from the index. With
// create it makes a new, unknown state for a ledger the index lacks;
// otherwise it returns nil for one. The state may be evicted before the
// caller locks it: callers that read or change it use lockLedger.
//
// A load holds its ledger's loadMu from the lookup that missed to the
// store: a state built from what the index said earlier must not be
// stored after another state of the ledger came, changed the ledger (a
// fence, entries) and was evicted meanwhile. Under loadMu no other state
// of the ledger can come into being, and one evicted before the lookup
// had written everything it changed.
func (b *Bookie) ledgerFor(ledger int64, create bool) (*ledgerState, error) {
	if v, ok := b.ledgers.Load(ledger); ok {
		return v.(*ledgerState), nil
	}
	mu := &b.loadMu[uint64(ledger)%uint64(len(b.loadMu))]
	mu.Lock()
	defer mu.Unlock()
	if v, ok := b.ledgers.Load(ledger); ok {
		return v.(*ledgerState), nil
	}
	// The write cache before the index: a checkpoint sets the index before
	// it drops the write cache's frozen half, so an entry moving between
	// them is seen in one or the other.
	wcLast, wcHas := b.wc.lastEntry(ledger)
	if h := b.hooks.ledgerLoad; h != nil {
		h()
	}
	m, ok, err := b.idx.Meta(ledger)
	if err != nil {
		return nil, b.storageErr(err)
	}
	if !ok && !create {
		return nil, nil
	}
	st := &ledgerState{known: ok, meta: m, lastEntry: -1, used: true}
	if ok {
		last, has, err := b.idx.LastEntry(ledger)
		if err != nil {
			return nil, b.storageErr(err)
		}
		if has {
			st.lastEntry = last
		}
	}
	if wcHas && wcLast > st.lastEntry {
		st.lastEntry = wcLast
	}
	if h := b.hooks.ledgerLoaded; h != nil {
		h()
	}
	b.ledgers.Store(ledger, st) // only loads store, each under loadMu
	return st, nil
}

// lockLedger is ledgerFor with the state's mutex held (nil, unlocked,
// for an unknown ledger without create). A state evicted between the
// lookup and the lock is looked up again: only the state in
// Bookie.ledgers may be read or changed.
func (b *Bookie) lockLedger(ledger int64, create bool) (*ledgerState, error) {
	for {
		st, err := b.ledgerFor(ledger, create)
		if err != nil || st == nil {
			return nil, err
		}
		if st.lock() {
			return st, nil
		}
	}
}

// lock locks st and marks it used, unless it was evicted (then it stays
// unlocked and lock reports false).
func (st *ledgerState) lock() bool {
	st.mu.Lock()
	if st.evicted {
		st.mu.Unlock()
		return false
	}
	st.used = true
	return true
}

// evictIdleLedgers drops the states of ledgers not locked since the
// previous sweep (a clock: a sweep clears the used mark, the next one
// evicts what is still unmarked), so that a bookie holding a million
// idle ledgers keeps in memory only the index's part of each. A state
// busy at the sweep is left alone. It returns the number evicted.
func (b *Bookie) evictIdleLedgers() int {
	n := 0
	b.ledgers.Range(func(k, v any) bool {
		st := v.(*ledgerState)
		if !st.mu.TryLock() {
			return true
		}
		switch {
		case st.used:
			st.used = false
		case !st.deleted:
			st.evicted = true
			if b.ledgers.CompareAndDelete(k, st) {
				n++
			}
		}
		st.mu.Unlock()
		return !b.closed.Load()
	})
	return n
}

// sweepTick is the ledger-state loop's work: run every LedgerStateIdle,
// a ledger idle for one to two periods loses its cached state.
func (b *Bookie) sweepTick() {
	if n := b.evictIdleLedgers(); n > 0 {
		b.log.Debug("idle ledger states dropped", "ledgers", n)
	}
}

// every runs fn every interval, and at once when kick fires (a nil kick
// never does), until Close, which waits for it (b.wg).
func (b *Bookie) every(interval time.Duration, kick <-chan struct{}, fn func()) {
	defer b.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-b.closing:
			return
		case <-t.C:
		case <-kick:
		}
		fn()
	}
}
