package bookie

import "fmt"

// ReadEntry returns a copy of the payload of (ledger, entry). entry -1
// reads the last entry stored for the ledger (the fence-read of ledger
// recovery; its payload carries the writer's piggybacked LAC).
//
// The lookup goes write cache → read cache → entry log at the index's
// location. A read-cache miss also reads the following entries of the same
// ledger into the read cache (read-ahead; sorted flushes keep a ledger's
// entries contiguous in the entry log, so it reads sequentially).
// Reads work in read-only mode.
func (b *Bookie) ReadEntry(ledger, entry int64) ([]byte, error) {
	if b.closed.Load() {
		return nil, ErrClosed
	}
	if entry < -1 {
		return nil, fmt.Errorf("%w: entry %d", ErrBadRequest, entry)
	}
	st, err := b.ledgerFor(ledger, false)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, fmt.Errorf("%w: ledger %d", ErrNoLedger, ledger)
	}
	st.mu.Lock()
	missing := st.deleted || !st.known
	last := st.lastEntry
	st.mu.Unlock()
	if missing {
		return nil, fmt.Errorf("%w: ledger %d", ErrNoLedger, ledger)
	}
	if entry == -1 {
		if last < 0 {
			return nil, fmt.Errorf("%w: ledger %d is empty", ErrNoEntry, ledger)
		}
		entry = last
	}
	if v, ok := b.wc.get(ledger, entry); ok {
		b.m.writeCacheHits.Add(1)
		return v, nil
	}
	b.m.writeCacheMisses.Add(1)
	if v, ok := b.rc.get(ledger, entry); ok {
		b.m.readCacheHits.Add(1)
		return v, nil
	}
	b.m.readCacheMisses.Add(1)
	v, err := b.readStored(ledger, entry)
	if err != nil {
		return nil, err
	}
	if b.opts.ReadAheadEntries > 0 {
		b.rc.put(ledger, entry, v)
		v = append([]byte(nil), v...)
		b.readAhead(ledger, entry)
	}
	return v, nil
}

// readStored reads one entry from the entry log. A location that vanished
// (its log compacted away between the index lookup and the read) is looked
// up again.
func (b *Bookie) readStored(ledger, entry int64) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		loc, ok, err := b.idx.Get(ledger, entry)
		if err != nil {
			return nil, b.storageErr(err)
		}
		if !ok {
			// The checkpoint may have released the write cache between our
			// cache miss and the index lookup only after setting the index,
			// so a miss here is final, except for that race: look once more.
			if v, ok := b.wc.get(ledger, entry); ok {
				return v, nil
			}
			return nil, fmt.Errorf("%w: ledger %d entry %d", ErrNoEntry, ledger, entry)
		}
		v, err := b.el.Read(loc, ledger, entry)
		if err == nil {
			b.m.entryLogReads.Add(1)
			return v, nil
		}
		if isNotFound(err) && attempt < 3 {
			continue
		}
		return nil, b.storageErr(err)
	}
}

// readAhead pulls the entries after entry into the read cache, up to
// ReadAheadEntries or ReadAheadBytes, stopping at the first one missing or
// already cached.
func (b *Bookie) readAhead(ledger, entry int64) {
	bytes := 0
	for e := entry + 1; e <= entry+int64(b.opts.ReadAheadEntries) && bytes < b.opts.ReadAheadBytes; e++ {
		if b.rc.has(ledger, e) {
			return
		}
		loc, ok, err := b.idx.Get(ledger, e)
		if err != nil || !ok {
			return
		}
		v, err := b.el.Read(loc, ledger, e)
		if err != nil {
			if !isNotFound(err) {
				b.storageErr(err)
			}
			return
		}
		b.m.entryLogReads.Add(1)
		b.rc.put(ledger, e, v)
		bytes += len(v)
	}
}
