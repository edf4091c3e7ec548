package entrylog

import (
	"context"
	"fmt"
	"maps"
	"time"
)

// LedgerBytes returns the bytes each ledger occupies in sealed log id,
// sorted by ledger, from the ledgers map, or by scanning the log once if
// it has no map (the result is cached). The returned slice must not be
// modified.
func (l *Log) LedgerBytes(id uint32) ([]Pair, error) {
	f, err := l.acquire(id)
	if err != nil {
		return nil, err
	}
	defer f.release()
	if f.active.Load() {
		return nil, fmt.Errorf("entrylog: log %d: %w", id, ErrActiveLog)
	}
	f.ledgersMu.Lock()
	defer f.ledgersMu.Unlock()
	if f.known {
		return f.ledgers, nil
	}
	m := map[int64]uint64{}
	end, err := scan(f.f, f.path, id, f.written.Load(), func(r Record) error {
		m[r.Ledger] += uint64(RecordHeaderSize + len(r.Payload))
		return nil
	})
	if err != nil {
		return nil, err
	}
	pairs := sortedPairs(m)
	f.ledgers, f.known, f.dataEnd = pairs, true, end
	if err := l.sealRecovered(f, pairs, end); err != nil {
		// Only an optimisation: the next open scans it again.
		l.opts.Logger.Warn("entrylog: sealing a scanned log failed", "path", f.path, "err", err)
	} else {
		l.opts.Logger.Info("entrylog: sealed a log recovered without a ledgers map", "path", f.path, "ledgers", len(pairs), "dataEnd", end)
	}
	return pairs, nil
}

// sealRecovered writes the ledgers map pairs of a log recovered without one
// (a crash while it was active) at end, the end of its valid records, and
// patches the header, so that later opens neither scan it nor warn about
// it again. The order is sealLocked's: the records are synced first (a
// process killed without a machine crash leaves them in the page cache),
// then the map and the header are written and synced; a crash in between
// leaves an unsealed log with a torn tail, as before.
func (l *Log) sealRecovered(f *logFile, pairs []Pair, end int64) error {
	w, err := l.opts.FS.OpenReadWrite(f.path)
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Sync(); err != nil {
		return err
	}
	rec := AppendLedgersMap(nil, pairs)
	if _, err := w.WriteAt(rec, end); err != nil {
		return err
	}
	h := Header{Version: Version, MapOffset: uint64(end), LedgerCount: uint32(len(pairs)), MapLength: uint32(len(rec))}
	if _, err := w.WriteAt(AppendHeader(nil, h), 0); err != nil {
		return err
	}
	return w.Sync()
}

// Usage is the share of a sealed log still referenced by live ledgers.
type Usage struct {
	ID uint32
	// Total is the bytes of data records (headers included).
	Total uint64
	// Live is the part of Total belonging to ledgers isLive accepts.
	Live uint64
}

// Ratio is Live/Total, 0 for an empty log.
func (u Usage) Ratio() float64 {
	if u.Total == 0 {
		return 0
	}
	return float64(u.Live) / float64(u.Total)
}

// Usage computes the usage of every sealed log, oldest first. Logs without
// a ledgers map are scanned once. A log that fails to scan is reported
// through the error (ErrCorrupt) after the others are computed.
func (l *Log) Usage(isLive func(ledger int64) bool) ([]Usage, error) {
	var out []Usage
	var firstErr error
	for _, info := range l.Logs() {
		if info.Active {
			continue
		}
		pairs, err := l.LedgerBytes(info.ID)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		u := Usage{ID: info.ID}
		for _, p := range pairs {
			u.Total += p.Bytes
			if isLive(p.Ledger) {
				u.Live += p.Bytes
			}
		}
		out = append(out, u)
	}
	return out, firstErr
}

// CompactStats summarise one Compact.
type CompactStats struct {
	Entries, Bytes               int64 // copied
	SkippedEntries, SkippedBytes int64 // dead, not copied
}

// Compact copies the live entries of sealed log id into the active log and
// calls relocate for each with its old and new location. Each copy takes
// the writer lock only for its own Add, so concurrent Adds and Reads
// proceed; the copy rate is limited by Options.CompactionRateBytes.
//
// Only compact logs whose entries have all had their first index update
// (see ActiveLogID). The caller then makes the copies durable (Sync), updates and flushes the
// index to the new locations, and only then calls RemoveLog(id). relocate
// must not make a new location durable in the index before that Sync; the
// bookie's checkpoint order (entry logs synced before the index) ensures
// it. An error from relocate or ctx stops the compaction; the old log is
// untouched and still valid.
func (l *Log) Compact(ctx context.Context, id uint32, isLive func(ledger int64) bool,
	relocate func(ledger, entry int64, oldLoc, newLoc uint64) error) (CompactStats, error) {
	l.compactMu.Lock()
	defer l.compactMu.Unlock()
	var st CompactStats
	f, err := l.acquire(id)
	if err != nil {
		return st, err
	}
	defer f.release()
	if f.active.Load() {
		return st, fmt.Errorf("entrylog: compact log %d: %w", id, ErrActiveLog)
	}
	start := time.Now()
	rate := l.opts.CompactionRateBytes
	_, err = scan(f.f, f.path, id, f.written.Load(), func(r Record) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !isLive(r.Ledger) {
			st.SkippedEntries++
			st.SkippedBytes += int64(len(r.Payload))
			return nil
		}
		newLoc, err := l.Add(r.Ledger, r.Entry, r.Payload)
		if err != nil {
			return err
		}
		if err := relocate(r.Ledger, r.Entry, r.Loc, newLoc); err != nil {
			return err
		}
		st.Entries++
		st.Bytes += int64(len(r.Payload))
		if rate > 0 {
			return throttle(ctx, start, st.Bytes, rate)
		}
		return nil
	})
	return st, err
}

// throttle waits until done bytes are within rate bytes/s of start.
func throttle(ctx context.Context, start time.Time, done, rate int64) error {
	due := start.Add(time.Duration(float64(done) / float64(rate) * float64(time.Second)))
	wait := time.Until(due)
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RemoveLog drops sealed log id from the set and deletes its file once the
// reads in flight on it finish. Later reads of its locations return
// ErrNotFound.
func (l *Log) RemoveLog(id uint32) error {
	l.mu.Lock()
	if err := l.checkLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	f := l.files.Load().files[id]
	if f == nil {
		l.mu.Unlock()
		return fmt.Errorf("entrylog: remove log %d: %w", id, ErrNotFound)
	}
	if f.active.Load() {
		l.mu.Unlock()
		return fmt.Errorf("entrylog: remove log %d: %w", id, ErrActiveLog)
	}
	f.removeOnClose.Store(true)
	l.swapFiles(func(s *fileSet) { delete(s.files, id) })
	l.mu.Unlock()
	f.release()
	return nil
}

// ActiveUsage is Usage for the active log (ID 0 when there is none): the
// bytes each ledger has in it so far, live or not. The bookie uses it on a
// full disk to decide whether rolling the active log (so that GC may
// remove or compact it) would reclaim space.
func (l *Log) ActiveUsage(isLive func(ledger int64) bool) Usage {
	l.mu.Lock()
	var u Usage
	var m map[int64]uint64
	if l.mu.cur != nil {
		u.ID = l.mu.cur.id
		m = maps.Clone(l.mu.ledgers)
	}
	l.mu.Unlock()
	for ledger, n := range m {
		u.Total += n
		if isLive(ledger) {
			u.Live += n
		}
	}
	return u
}
