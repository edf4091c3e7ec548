package mledger

import (
	"context"
	"fmt"
)

type entryReader interface {
	Read(ctx context.Context, first, last int64) ([][]byte, error)
}

// handle returns something to read ledger id from: the write handle while
// it is (or was just) the current ledger, else a cached ReadLedger.
func (ml *ManagedLedger) handle(ctx context.Context, id int64) (entryReader, error) {
	ml.mu.RLock()
	switch {
	case ml.current != nil && ml.current.ID() == id:
		r := ml.current
		ml.mu.RUnlock()
		return r, nil
	case ml.closing != nil && ml.closing.ID() == id:
		r := ml.closing
		ml.mu.RUnlock()
		return r, nil
	}
	if r := ml.readers[id]; r != nil {
		ml.mu.RUnlock()
		return r, nil
	}
	var oc *OffloadContext
	if i := ml.ledgers.find(id); i < len(ml.ledgers) && ml.ledgers[i].LedgerID == id {
		oc = ml.ledgers[i].Offload
	}
	ml.mu.RUnlock()
	var r ReadLedger
	var err error
	if oc != nil && oc.Complete && (oc.BookkeeperDeleted || !ml.offloadPolicy().BookkeeperFirst) {
		o := ml.offloader()
		if o == nil {
			return nil, fmt.Errorf("read offloaded ledger %d: %w", id, ErrNoOffloader)
		}
		if r, err = o.Open(ctx, id, oc.UID, oc.DriverMetadata); err != nil {
			return nil, fmt.Errorf("read offloaded ledger %d: %w", id, err)
		}
	} else if r, err = ml.store.Open(ctx, id); err != nil {
		return nil, fmt.Errorf("open ledger %d: %w", id, err)
	}
	ml.mu.Lock()
	defer ml.mu.Unlock()
	if existing := ml.readers[id]; existing != nil {
		_ = r.Close()
		return existing, nil
	}
	if i := ml.ledgers.find(id); i < len(ml.ledgers) && ml.ledgers[i].LedgerID == id && ml.state != stateClosed {
		if ml.readers == nil {
			ml.readers = make(map[int64]ReadLedger, 1)
		}
		ml.readers[id] = r
	}
	return r, nil
}

// readPositions reads the given positions (ascending, all confirmed),
// from the entry cache where possible and from the ledger store otherwise.
func (ml *ManagedLedger) readPositions(ctx context.Context, ps []Position) ([]Entry, error) {
	out := make([]Entry, len(ps))
	for i := 0; i < len(ps); {
		// A run of positions consecutive within one ledger.
		j := i + 1
		for j < len(ps) && ps[j].LedgerID == ps[i].LedgerID && ps[j].EntryID == ps[j-1].EntryID+1 {
			j++
		}
		missFrom := -1
		flush := func(end int) error {
			if missFrom < 0 {
				return nil
			}
			h, err := ml.handle(ctx, ps[missFrom].LedgerID)
			if err != nil {
				return err
			}
			data, err := h.Read(ctx, ps[missFrom].EntryID, ps[end-1].EntryID)
			if err != nil {
				return fmt.Errorf("read ledger %d entries %d..%d: %w", ps[missFrom].LedgerID, ps[missFrom].EntryID, ps[end-1].EntryID, err)
			}
			if len(data) != end-missFrom {
				return fmt.Errorf("read ledger %d: got %d entries, want %d: %w", ps[missFrom].LedgerID, len(data), end-missFrom, ErrNoEntries)
			}
			for k, d := range data {
				out[missFrom+k] = Entry{Pos: ps[missFrom+k], Data: d}
			}
			missFrom = -1
			return nil
		}
		for k := i; k < j; k++ {
			if d, ok := ml.cache.get(ps[k]); ok {
				if err := flush(k); err != nil {
					return nil, err
				}
				out[k] = Entry{Pos: ps[k], Data: d}
				continue
			}
			if missFrom < 0 {
				missFrom = k
			}
		}
		if err := flush(j); err != nil {
			return nil, err
		}
		i = j
	}
	return out, nil
}

// ReadEntry reads one entry by position (for peek and get-by-id).
func (ml *ManagedLedger) ReadEntry(ctx context.Context, p Position) (Entry, error) {
	ml.mu.RLock()
	i := ml.ledgers.find(p.LedgerID)
	ok := i < len(ml.ledgers) && ml.ledgers[i].LedgerID == p.LedgerID && p.EntryID >= 0 && p.EntryID < ml.ledgers[i].Entries
	ml.mu.RUnlock()
	if !ok {
		return Entry{}, fmt.Errorf("read %s: %w", p, ErrInvalidPosition)
	}
	es, err := ml.readPositions(ctx, []Position{p})
	if err != nil {
		return Entry{}, err
	}
	return es[0], nil
}

// ReadPositions reads the entries at ps (ascending, each confirmed and
// retained), from the entry cache where possible and otherwise from the
// ledgers, in as few reads as consecutive runs allow. A position that is
// not (or no longer) in the ledger fails the whole call with
// ErrInvalidPosition; callers re-reading positions they hold (a
// dispatcher's redeliveries) drop those and retry with the rest.
func (ml *ManagedLedger) ReadPositions(ctx context.Context, ps []Position) ([]Entry, error) {
	ml.mu.RLock()
	for _, p := range ps {
		i := ml.ledgers.find(p.LedgerID)
		if !(i < len(ml.ledgers) && ml.ledgers[i].LedgerID == p.LedgerID && p.EntryID >= 0 && p.EntryID < ml.ledgers[i].Entries) {
			ml.mu.RUnlock()
			return nil, fmt.Errorf("read %s: %w", p, ErrInvalidPosition)
		}
	}
	ml.mu.RUnlock()
	return ml.readPositions(ctx, ps)
}

// FindByPublishTime returns the position of the first entry whose publish
// time (extracted by publishTime from the entry bytes) is >= t, by binary
// search over all entries (publish times are assumed non-decreasing, as
// Pulsar assumes). If no entry qualifies it returns the position after the
// last entry and false.
func (ml *ManagedLedger) FindByPublishTime(ctx context.Context, t int64, publishTime func([]byte) (int64, error)) (Position, bool, error) {
	ml.mu.RLock()
	ls := append(ledgerList(nil), ml.ledgers...)
	ml.mu.RUnlock()
	var total int64
	for _, l := range ls {
		total += l.Entries
	}
	at := func(idx int64) Position {
		for _, l := range ls {
			if idx < l.Entries {
				return Position{l.LedgerID, idx}
			}
			idx -= l.Entries
		}
		panic("BUG: mledger: index beyond entries")
	}
	lo, hi := int64(0), total // first index with time >= t is in [lo, hi]
	for lo < hi {
		mid := lo + (hi-lo)/2
		p := at(mid)
		es, err := ml.readPositions(ctx, []Position{p})
		if err != nil {
			return Position{}, false, err
		}
		pt, err := publishTime(es[0].Data)
		if err != nil {
			return Position{}, false, fmt.Errorf("publish time of %s: %w", p, err)
		}
		if pt >= t {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo == total {
		if last, ok := ls.last(); ok {
			return Position{last.LedgerID, last.EntryID + 1}, false, nil
		}
		if len(ls) > 0 {
			return Position{ls[len(ls)-1].LedgerID, 0}, false, nil
		}
		return Position{}, false, nil
	}
	return at(lo), true, nil
}
