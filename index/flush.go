package index

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
)

// Flush makes every Set, metadata change and Delete that returned before
// it was called durable: first the dirty pages of every segment (msync, or
// WriteAt+Sync without mmap), then, if the page tables or metadata
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
	// Snapshot the page tables before flushing the pages: every page the
	// snapshot references was allocated (and zeroed) before, so the page
	// flush below covers it. Pages deleted before this point are absent
	// from the snapshot.
	var snap []byte
	var freedPages []uint32
	metaDirty := ix.metaDirty.Swap(false)
	if metaDirty {
		ix.mu.Lock()
		freedPages = ix.mu.pendingFree
		ix.mu.pendingFree = nil
		ix.mu.Unlock()
		snap = ix.appendSnapshot(nil)
	}
	for _, s := range *ix.segs.Load() {
		if err := s.flush(); err != nil {
			return fail(err)
		}
	}
	if !metaDirty {
		return nil
	}
	if err := ix.writeMeta(snap); err != nil {
		return fail(err)
	}
	ix.mu.Lock()
	ix.mu.free = append(ix.mu.free, freedPages...)
	ix.mu.Unlock()
	return nil
}

// appendSnapshot encodes the metadata file for the current state.
func (ix *Index) appendSnapshot(dst []byte) []byte {
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
	h := metaHeader{SlotsPerPage: uint32(ix.slots), PagesPerSegment: uint32(ix.pps), Segments: uint32(len(*ix.segs.Load()))}
	return appendMeta(dst, h, recs)
}

func (ix *Index) writeMeta(b []byte) error {
	fs, dir := ix.opts.FS, ix.opts.Dir
	tmp, final := filepath.Join(dir, metaTmpFile), filepath.Join(dir, MetaFile)
	f, err := fs.Create(tmp)
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	_, err = f.WriteAt(b, 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, final)
	}
	if err == nil {
		err = fs.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("index: write %s: %w", final, err)
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
	for _, s := range *ix.segs.Load() {
		if cerr := s.close(); err == nil {
			err = cerr
		}
	}
	return err
}
