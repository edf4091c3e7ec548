package bookie

import (
	"fmt"
	"sync"

	"github.com/magnetar-mq/magnetar/entrylog"
)

// ReadEntry returns the payload of (ledger, entry) in a new slice the
// caller owns (the bookie keeps no reference to it). entry -1 reads the
// last entry stored for the ledger (the fence-read of ledger recovery; its
// payload carries the writer's piggybacked LAC). It is AppendReadEntry
// with a nil dst.
func (b *Bookie) ReadEntry(ledger, entry int64) ([]byte, error) {
	v, err := b.AppendReadEntry(nil, ledger, entry)
	if err == nil && v == nil {
		v = []byte{} // an empty entry, not a missing one
	}
	return v, err
}

// AppendReadEntry appends the payload of (ledger, entry) to dst and returns
// the extended slice, which the caller owns: the bookie copies the payload
// once, into dst (no allocation when dst has the capacity), and keeps no
// reference to dst. On error dst is returned unchanged. entry -1 reads the
// last entry stored for the ledger.
//
// The lookup goes write cache → read cache → entry log at the index's
// location. A read-cache miss reads the entry and the records after it in
// the entry log with one read into a read-cache buffer, and keeps the
// following entries of the same ledger (read-ahead, up to
// ReadAheadEntries and ReadAheadBytes; sorted flushes keep a ledger's
// entries contiguous in the entry log). Reads work in read-only mode.
func (b *Bookie) AppendReadEntry(dst []byte, ledger, entry int64) ([]byte, error) {
	if b.closed.Load() {
		return dst, ErrClosed
	}
	if entry < -1 {
		return dst, fmt.Errorf("%w: entry %d", ErrBadRequest, entry)
	}
	st, err := b.lockLedger(ledger, false)
	if err != nil {
		return dst, err
	}
	if st == nil {
		return dst, fmt.Errorf("%w: ledger %d", ErrNoLedger, ledger)
	}
	missing := st.deleted || !st.known
	last := st.lastEntry
	st.mu.Unlock()
	if missing {
		return dst, fmt.Errorf("%w: ledger %d", ErrNoLedger, ledger)
	}
	if entry == -1 {
		if last < 0 {
			return dst, fmt.Errorf("%w: ledger %d is empty", ErrNoEntry, ledger)
		}
		entry = last
	}
	if v, ok := b.wc.appendGet(dst, ledger, entry); ok {
		b.m.writeCacheHits.Add(1)
		return v, nil
	}
	b.m.writeCacheMisses.Add(1)
	if v, ok := b.rc.appendGet(dst, ledger, entry); ok {
		b.m.readCacheHits.Add(1)
		return v, nil
	}
	b.m.readCacheMisses.Add(1)
	if b.opts.ReadAheadEntries > 0 {
		return b.readRun(dst, st, ledger, entry)
	}
	return b.readStored(dst, ledger, entry)
}

// location returns the entry's index location. ok false with a nil error:
// the entry is in the write cache after all (v appended to dst).
func (b *Bookie) location(dst []byte, ledger, entry int64) (loc uint64, v []byte, ok bool, err error) {
	loc, found, err := b.idx.Get(ledger, entry)
	if err != nil {
		return 0, dst, false, b.storageErr(err)
	}
	if !found {
		// The checkpoint may have released the write cache between our
		// cache miss and the index lookup only after setting the index,
		// so a miss here is final, except for that race: look once more.
		if v, ok := b.wc.appendGet(dst, ledger, entry); ok {
			return 0, v, false, nil
		}
		return 0, dst, false, fmt.Errorf("%w: ledger %d entry %d", ErrNoEntry, ledger, entry)
	}
	return loc, dst, true, nil
}

// readStored reads one entry from the entry log straight into dst (no
// read-ahead). A location that vanished (its log compacted away between
// the index lookup and the read) is looked up again.
func (b *Bookie) readStored(dst []byte, ledger, entry int64) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		loc, v, ok, err := b.location(dst, ledger, entry)
		if err != nil || !ok {
			return v, err
		}
		v, err = b.el.AppendRead(dst, loc, ledger, entry)
		if err == nil {
			b.m.entryLogReads.Add(1)
			return v, nil
		}
		if isNotFound(err) && attempt < 3 {
			continue
		}
		return dst, b.storageErr(err)
	}
}

// entriesPool recycles readRun's list of entries found in a span.
var entriesPool = sync.Pool{New: func() any { return new([]rcEntry) }}

// readRun serves a read-cache miss: one entry-log read (entrylog.ReadRun)
// of the entry and the records after it into a read-cache buffer sized from
// the ledger's recent entry sizes. The entry's payload is copied into dst;
// the following entries of the ledger, in order, up to ReadAheadEntries
// and ReadAheadBytes, stay in the buffer, which the read cache takes
// over. A following record is kept only where the index still points at
// it (not relocated or replaced meanwhile) and when not cached already
// (another reader is ahead); the first one that is not ends the run.
func (b *Bookie) readRun(dst []byte, st *ledgerState, ledger, entry int64) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		loc, v, ok, err := b.location(dst, ledger, entry)
		if err != nil || !ok {
			return v, err
		}
		// The read fills the view's capacity: the planned span, not the
		// whole (size-class rounded) buffer.
		span := b.spanSize(st)
		full := b.rc.takeBuf(span)
		ep := entriesPool.Get().(*[]rcEntry)
		es := (*ep)[:0]
		out := dst
		next, bytes, recBytes := entry, 0, 0
		buf, err := b.el.ReadRun(full[:0:span], loc, ledger, entry, func(r entrylog.RunRecord) bool {
			if next != entry {
				if r.Ledger != ledger || r.Entry != next || len(es) > b.opts.ReadAheadEntries || bytes+len(r.Payload) > b.opts.ReadAheadBytes {
					return false
				}
				if l, ok, err := b.idx.Get(ledger, r.Entry); err != nil || !ok || l != r.Loc || b.rc.has(ledger, r.Entry) {
					return false
				}
				bytes += len(r.Payload)
			} else {
				out = append(out, r.Payload...)
			}
			es = append(es, rcEntry{key{ledger, r.Entry}, r.Payload})
			recBytes += entrylog.RecordHeaderSize + len(r.Payload)
			next++
			return true
		})
		if cap(buf) != span {
			// ReadRun grew the buffer for a first record larger than the
			// span: the grown one is cached, full goes back.
			b.rc.putBuf(full)
			full = buf
		}
		if err != nil {
			b.rc.putBuf(full)
			*ep = es[:0]
			entriesPool.Put(ep)
			if isNotFound(err) && attempt < 3 {
				continue
			}
			return dst, b.storageErr(err)
		}
		b.m.entryLogReads.Add(uint64(len(es)))
		st.readRecord.Store(int64(recBytes / len(es)))
		b.rc.attach(full, es)
		clear(es)
		*ep = es[:0]
		entriesPool.Put(ep)
		return out, nil
	}
}

// spanSize is the read size for a miss on st's ledger: the entry and
// ReadAheadEntries more of the record size seen last time, at most
// ReadAheadBytes of them, and at most half a read-cache segment (so that
// segments hold two spans or more) unless one record is larger.
func (b *Bookie) spanSize(st *ledgerState) int {
	rec := st.readRecord.Load()
	if rec <= 0 {
		rec = 4 << 10 // unknown yet: a guess; a larger first record grows the read
	}
	n := rec + min(rec*int64(b.opts.ReadAheadEntries), int64(b.opts.ReadAheadBytes))
	n = min(n, b.rc.segCap/2)
	return int(max(n, rec, minSpanBuf))
}
