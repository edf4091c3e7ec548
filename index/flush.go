package index

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/magnetar-mq/magnetar/internal/atomicfile"
)

// Flush makes every Set, metadata change and Delete that returned before
// it was called durable: first the dirty pages of every segment (mapping
// dropped and fdatasync, or WriteAt+Sync without mmap), then, if the page tables or metadata
// changed, the metadata file (written to a temporary file, synced, renamed
// over the old one, directory synced). Pages freed by Delete become
// reusable afterwards. A failed Flush fails every later Flush: the index
// must then be reopened (or rebuilt).
func (ix *Index) Flush() error {
	ix.flushMu.Lock()
	defer ix.flushMu.Unlock()
	if ix.closed.Load() {
		return ErrClosed
	}
	return ix.flushLocked()
}

func (ix *Index) flushLocked() error {
	ix.mu.Lock()
	err := ix.mu.err
	ix.mu.Unlock()
	if err != nil {
		return err
	}
	fail := func(err error) error {
		ix.mu.Lock()
		defer ix.mu.Unlock()
		if ix.mu.err == nil {
			ix.mu.err = err
		}
		return ix.mu.err
	}
	// Encode the metadata change (a whole snapshot, or a log block of the
	// ledgers changed since the last Flush) before flushing the pages:
	// every page it references was allocated (and zeroed) before, so the
	// page flush below covers it. Pages deleted before this point are
	// absent from it.
	var snap, block []byte
	var freedPages []uint32
	metaDirty := ix.metaDirty.Swap(false)
	if metaDirty {
		ix.mu.Lock()
		freedPages = ix.mu.pendingFree
		ix.mu.pendingFree = nil
		ix.mu.Unlock()
		ix.dirty.Lock()
		ids := ix.dirty.ids
		ix.dirty.ids = make(map[int64]struct{}, len(ids))
		ix.dirty.Unlock()
		if ix.log == nil || ix.logOff >= ix.logLimit() {
			snap = ix.appendSnapshot(nil, ix.gen+1)
		} else {
			block = ix.appendChanges(nil, ids)
		}
	}
	for _, s := range *ix.segs.Load() {
		if err := s.flush(); err != nil {
			return fail(err)
		}
	}
	if !metaDirty {
		return nil
	}
	if snap != nil {
		if err := ix.writeMeta(snap); err != nil {
			return fail(err)
		}
		// The snapshot of generation gen+1 holds everything: a crash
		// before the new log replaces the old one leaves a log of the
		// previous generation, which Open ignores.
		ix.closeLog()
		ix.gen++
		ix.snapSize = int64(len(snap))
		f, err := createLog(ix.opts.FS, ix.opts.Dir, ix.gen)
		if err != nil {
			return fail(err)
		}
		ix.log, ix.logOff = f, metaLogHeaderLen
	} else {
		_, err := ix.log.WriteAt(block, ix.logOff)
		if err == nil {
			err = ix.log.Sync()
		}
		if err != nil {
			return fail(fmt.Errorf("index: append to %s: %w", filepath.Join(ix.opts.Dir, MetaLogFile), err))
		}
		ix.logOff += int64(len(block))
	}
	ix.mu.Lock()
	ix.mu.free = append(ix.mu.free, freedPages...)
	ix.mu.Unlock()
	return nil
}

// logLimit is the log size from which a Flush writes a snapshot.
func (ix *Index) logLimit() int64 {
	if ix.opts.MetaLogLimit > 0 {
		return ix.opts.MetaLogLimit
	}
	return max(minLogLimit, ix.snapSize)
}

// markDirty notes that ledger's record changed for the next Flush.
func (ix *Index) markDirty(ledger int64) {
	ix.dirty.Lock()
	ix.dirty.ids[ledger] = struct{}{}
	ix.dirty.Unlock()
	ix.metaDirty.Store(true)
}

// appendChanges encodes a log block with the current record of each
// ledger in ids, or its deletion when it is gone.
func (ix *Index) appendChanges(dst []byte, ids map[int64]struct{}) []byte {
	changes := make([]logChange, 0, len(ids))
	for id := range ids {
		ls := ix.lookup(id)
		if ls == nil {
			changes = append(changes, logChange{rec: ledgerRecord{ID: id}, deleted: true})
			continue
		}
		ls.mu.Lock()
		changes = append(changes, logChange{rec: ledgerRecord{ID: id, Meta: ls.meta, Pages: *ls.pages.Load()}})
		ls.mu.Unlock()
	}
	slices.SortFunc(changes, func(a, b logChange) int { return cmp.Compare(a.rec.ID, b.rec.ID) })
	return appendLogBlock(dst, uint32(len(*ix.segs.Load())), changes)
}

// openLog applies the metadata log continuing the snapshot just read
// (generation ix.gen) to its ledgers and keeps it open for appends,
// truncating a torn tail. A log of another generation is left from a
// crash during a snapshot's replacement of the log and is ignored: the
// next Flush writes a snapshot and a new log.
func (ix *Index) openLog(ledgers []ledgerRecord, segs uint32) ([]ledgerRecord, uint32, error) {
	fs, p := ix.opts.FS, filepath.Join(ix.opts.Dir, MetaLogFile)
	b, err := readFile(ix.opts, p)
	if errors.Is(err, errNotExist) {
		return ledgers, segs, nil
	}
	if err != nil {
		return nil, 0, err
	}
	gen, err := decodeLogHeader(b)
	if err != nil {
		// The header is synced before the log is renamed into place.
		return nil, 0, fmt.Errorf("index: %s: %w", p, err)
	}
	if gen != ix.gen {
		ix.opts.Logger.Info("index: ignoring a metadata log of another snapshot", "log", gen, "snapshot", ix.gen)
		return ledgers, segs, nil
	}
	r, err := readLog(b, p)
	if err != nil {
		return nil, 0, err
	}
	f, err := fs.OpenReadWrite(p)
	if err != nil {
		return nil, 0, fmt.Errorf("index: %w", err)
	}
	if r.end < r.size {
		ix.opts.Logger.Warn("index: truncating a torn metadata log tail", "file", p, "offset", r.end, "size", r.size)
		err = f.Truncate(r.end)
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			f.Close()
			return nil, 0, fmt.Errorf("index: truncate %s: %w", p, err)
		}
	}
	ix.log, ix.logOff = f, r.end
	return applyLog(ledgers, r.changes), max(segs, r.segments), nil
}

// closeLog closes the metadata log, if open.
func (ix *Index) closeLog() error {
	if ix.log == nil {
		return nil
	}
	err := ix.log.Close()
	ix.log = nil
	return err
}

// appendSnapshot encodes the metadata file for the current state as
// generation gen.
func (ix *Index) appendSnapshot(dst []byte, gen uint64) []byte {
	var recs []ledgerRecord
	for i := range ix.shards {
		sh := &ix.shards[i]
		sh.mu.RLock()
		for _, ls := range sh.ledgers {
			ls.mu.Lock()
			recs = append(recs, ledgerRecord{ID: ls.id, Meta: ls.meta, Pages: *ls.pages.Load()})
			ls.mu.Unlock()
		}
		sh.mu.RUnlock()
	}
	slices.SortFunc(recs, func(a, b ledgerRecord) int { return cmp.Compare(a.ID, b.ID) })
	h := metaHeader{SlotsPerPage: uint32(ix.slots), PagesPerSegment: uint32(ix.pps), Segments: uint32(len(*ix.segs.Load())), Generation: gen}
	return appendMeta(dst, h, recs)
}

func (ix *Index) writeMeta(b []byte) error {
	fs, dir := ix.opts.FS, ix.opts.Dir
	if err := atomicfile.WriteFS(fs, dir, metaTmpFile, MetaFile, b); err != nil {
		return fmt.Errorf("index: write %s: %w", filepath.Join(dir, MetaFile), err)
	}
	return nil
}

// Close flushes and releases the segments. It must not run concurrently
// with other methods.
func (ix *Index) Close() error {
	ix.flushMu.Lock()
	defer ix.flushMu.Unlock()
	if ix.closed.Swap(true) {
		return ErrClosed
	}
	err := ix.flushLocked()
	if cerr := ix.closeLog(); err == nil {
		err = cerr
	}
	for _, s := range *ix.segs.Load() {
		if cerr := s.close(); err == nil {
			err = cerr
		}
	}
	return err
}
