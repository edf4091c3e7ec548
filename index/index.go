package index

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

const shardCount = 64

// Index maps (ledger, entry) to an entry-log location and keeps per-ledger
// metadata.
//
// Get, LastEntry, GetMeta, Exists and Ledgers are safe concurrently with
// each other and with Set, SetMeta, UpdateMeta, Delete and Flush. Close
// must not run concurrently with any other method (in mmap mode it unmaps
// the pages).
type Index struct {
	opts   Options
	slots  int
	pps    int // pages per segment
	segs   atomic.Pointer[[]*segment]
	shards [shardCount]shard

	metaDirty atomic.Bool
	closed    atomic.Bool

	// dirty holds the ledgers whose record changed (created, page added,
	// metadata updated, deleted) since the last Flush took the set.
	dirty struct {
		sync.Mutex
		ids map[int64]struct{}
	}

	// flushMu serialises Flush and Close; it guards the fields below.
	flushMu  sync.Mutex
	gen      uint64   // generation of the current snapshot
	log      vfs.File // metadata log for gen, nil until a Flush writes a snapshot
	logOff   int64    // end of the log's last block
	snapSize int64    // size of the current snapshot

	keys keyTable // master keys shared among ledgers (keys.go)

	// mu guards page allocation.
	mu struct {
		sync.Mutex
		free        []uint32 // reusable physical pages
		pendingFree []uint32 // freed by Delete, reusable after the next Flush
		err         error    // sticky flush or allocation error
	}
}

type shard struct {
	mu      sync.RWMutex
	ledgers map[int64]*ledgerState
}

type ledgerState struct {
	id    int64
	pages atomic.Pointer[[]uint32] // page table: physical page + 1, 0 = hole
	last  atomic.Int64             // highest entry set, -1 if none, lastUnknown until found (lastOf)

	mu      sync.Mutex // guards meta, deleted and page-table growth
	meta    Meta
	deleted bool
}

func (ix *Index) shard(ledger int64) *shard {
	return &ix.shards[uint64(ledger)%shardCount]
}

// Open opens the index in opts.Dir, creating an empty one if there is no
// metadata file. Pages referenced by no ledger are free for reuse.
func Open(opts Options) (*Index, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	fs := opts.FS
	if err := fs.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	if err := fs.SyncDir(filepath.Dir(filepath.Clean(opts.Dir))); err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	ix := &Index{opts: opts, slots: opts.SlotsPerPage, pps: opts.PagesPerSegment}
	for i := range ix.shards {
		ix.shards[i].ledgers = map[int64]*ledgerState{}
	}
	ix.dirty.ids = map[int64]struct{}{}
	metaPath := filepath.Join(opts.Dir, MetaFile)
	var ledgers []ledgerRecord
	metaSegs := uint32(0)
	if b, err := readFile(opts, metaPath); err == nil {
		h, ls, err := decodeMeta(b)
		if err != nil {
			return nil, fmt.Errorf("index: %s: %w", metaPath, err)
		}
		ix.slots, ix.pps, ledgers = int(h.SlotsPerPage), int(h.PagesPerSegment), ls
		if ix.slots != opts.SlotsPerPage || ix.pps != opts.PagesPerSegment {
			opts.Logger.Info("index: keeping the geometry the index was created with", "slots", ix.slots, "pagesPerSegment", ix.pps)
		}
		metaSegs = h.Segments
		ix.gen, ix.snapSize = h.Generation, int64(len(b))
		if ledgers, metaSegs, err = ix.openLog(ledgers, metaSegs); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, errNotExist) {
		return nil, err
	}
	segs, err := ix.openSegments(metaSegs)
	if err != nil {
		ix.closeLog()
		return nil, err
	}
	ix.segs.Store(&segs)
	fail := func(err error) (*Index, error) {
		for _, s := range segs {
			s.close()
		}
		ix.closeLog()
		return nil, err
	}
	total := uint64(len(segs)) * uint64(ix.pps)
	used := make([]bool, total)
	for _, r := range ledgers {
		for pn, p := range r.Pages {
			if p == 0 {
				continue
			}
			if uint64(p-1) >= total || used[p-1] {
				return fail(fmt.Errorf("index: %s: ledger %d page %d -> physical page %d missing or shared: %w", metaPath, r.ID, pn, p-1, ErrCorrupt))
			}
			used[p-1] = true
		}
		sh := ix.shard(r.ID)
		if _, dup := sh.ledgers[r.ID]; dup {
			return fail(fmt.Errorf("index: %s: ledger %d twice: %w", metaPath, r.ID, ErrCorrupt))
		}
		r.Meta.MasterKey = ix.keys.share(r.Meta.MasterKey)
		ls := &ledgerState{id: r.ID, meta: r.Meta}
		// Clipped: allocPage appends in place within capacity, which must
		// not reach into another ledger's decoded pages.
		pages := slices.Clip(r.Pages)
		ls.pages.Store(&pages)
		ls.last.Store(lastUnknown) // found on first use, not here: a page read per ledger
		sh.ledgers[r.ID] = ls
	}
	for p := len(used) - 1; p >= 0; p-- {
		if !used[p] {
			ix.mu.free = append(ix.mu.free, uint32(p))
		}
	}
	return ix, nil
}

var errNotExist = errors.New("index: file does not exist")

func readFile(opts Options, path string) ([]byte, error) {
	if _, err := opts.FS.Stat(path); err != nil {
		return nil, errNotExist
	}
	f, err := opts.FS.Open(path)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	b := make([]byte, fi.Size())
	if n, err := f.ReadAt(b, 0); n != len(b) && (err == nil || !errors.Is(err, io.EOF)) {
		return nil, fmt.Errorf("index: read %s: %w", path, err)
	}
	return b, nil
}

// openSegments opens segment files 0..n-1; a gap is corruption. Segments
// the metadata file does not know (number >= known) hold no referenced
// page: one that does not open cleanly (a crash while it was created) is
// removed together with the ones after it.
func (ix *Index) openSegments(known uint32) ([]*segment, error) {
	names, err := ix.opts.FS.List(ix.opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	var nos []uint32
	for _, name := range names {
		if no, ok := parseSegmentName(name); ok {
			nos = append(nos, no)
		}
	}
	slices.Sort(nos)
	var segs []*segment
	for i, no := range nos {
		if no != uint32(i) {
			for _, s := range segs {
				s.close()
			}
			return nil, fmt.Errorf("index: %s: segment %d missing: %w", ix.opts.Dir, i, ErrCorrupt)
		}
		s, err := openSegment(ix.opts.FS, filepath.Join(ix.opts.Dir, segmentName(no)), no, ix.slots, ix.pps, !ix.opts.NoMmap)
		if err != nil && no >= known && errors.Is(err, ErrCorrupt) {
			ix.opts.Logger.Warn("index: removing unreferenced segments that do not open", "from", no, "err", err)
			for _, rm := range nos[i:] {
				if err := ix.opts.FS.Remove(filepath.Join(ix.opts.Dir, segmentName(rm))); err != nil {
					for _, s := range segs {
						s.close()
					}
					return nil, fmt.Errorf("index: %w", err)
				}
			}
			break
		}
		if err != nil {
			for _, s := range segs {
				s.close()
			}
			return nil, err
		}
		segs = append(segs, s)
	}
	return segs, nil
}

// lastUnknown is a reopened ledger's last entry until its first use
// finds it (lastOf): Open reading the last page of every ledger took a
// random page read per ledger, 3.3 µs each with the segments cached and
// most of a cold start-up at 100,000 ledgers.
const lastUnknown = -2

// lastOf returns ls's last entry, finding it in its pages if not known
// yet. Every value stored is at least every entry whose Set returned
// before the load: a Set stores its slot before it raises last, and a
// scan that a concurrent Set's slot missed is raised by that Set after
// it (raiseLast calls lastOf first).
func (ix *Index) lastOf(ls *ledgerState) int64 {
	for {
		if last := ls.last.Load(); last != lastUnknown {
			return last
		}
		ls.last.CompareAndSwap(lastUnknown, ix.scanLast(*ls.pages.Load()))
	}
}

// scanLast finds the highest entry with a location in a page table.
func (ix *Index) scanLast(pages []uint32) int64 {
	for pn := len(pages) - 1; pn >= 0; pn-- {
		if pages[pn] == 0 {
			continue
		}
		seg, p := ix.page(pages[pn] - 1)
		for sl := ix.slots - 1; sl >= 0; sl-- {
			if seg.slot(p, sl).Load() != 0 {
				return int64(pn)*int64(ix.slots) + int64(sl)
			}
		}
	}
	return -1
}

// page resolves a physical page to its segment and index within it.
func (ix *Index) page(phys uint32) (*segment, int) {
	segs := *ix.segs.Load()
	return segs[int(phys)/ix.pps], int(phys) % ix.pps
}

func (ix *Index) lookup(ledger int64) *ledgerState {
	sh := ix.shard(ledger)
	sh.mu.RLock()
	ls := sh.ledgers[ledger]
	sh.mu.RUnlock()
	return ls
}

// withLedger runs fn on ledger's state, creating the ledger if needed,
// while holding its shard's read lock: Delete, which takes the write lock
// to remove a ledger, thus never runs while fn may still write through the
// old state.
func (ix *Index) withLedger(ledger int64, fn func(ls *ledgerState) error) error {
	sh := ix.shard(ledger)
	for {
		sh.mu.RLock()
		if ls := sh.ledgers[ledger]; ls != nil {
			err := fn(ls)
			sh.mu.RUnlock()
			return err
		}
		sh.mu.RUnlock()
		sh.mu.Lock()
		if sh.ledgers[ledger] == nil {
			ls := &ledgerState{id: ledger}
			ls.pages.Store(new([]uint32))
			ls.last.Store(-1)
			sh.ledgers[ledger] = ls
			ix.markDirty(ledger)
		}
		sh.mu.Unlock()
	}
}

// Set records the location of (ledger, entry), creating the ledger if
// needed. loc must not be 0. It is durable after the next Flush.
func (ix *Index) Set(ledger, entry int64, loc uint64) error {
	if ledger < 0 || entry < 0 || loc == 0 || entry/int64(ix.slots) >= maxPageTable {
		return fmt.Errorf("index: Set(%d, %d, %#x): %w", ledger, entry, loc, ErrOutOfRange)
	}
	if ix.closed.Load() {
		return ErrClosed
	}
	return ix.withLedger(ledger, func(ls *ledgerState) error {
		pn, sl := int(entry/int64(ix.slots)), int(entry%int64(ix.slots))
		phys, err := ix.physPage(ls, pn)
		if err != nil {
			return err
		}
		seg, p := ix.page(phys)
		seg.slot(p, sl).Store(loc)
		seg.markDirty(p)
		ix.raiseLast(ls, entry)
		return nil
	})
}

// physPage returns the physical page of ls's page pn, allocating it if
// the ledger has none there yet.
func (ix *Index) physPage(ls *ledgerState, pn int) (uint32, error) {
	if pt := *ls.pages.Load(); pn < len(pt) && pt[pn] != 0 {
		return pt[pn] - 1, nil
	}
	return ix.allocPage(ls, pn)
}

// raiseLast moves ls's last entry up to entry if it is below.
func (ix *Index) raiseLast(ls *ledgerState, entry int64) {
	for {
		last := ix.lastOf(ls)
		if entry <= last || ls.last.CompareAndSwap(last, entry) {
			return
		}
	}
}

// SetRun is Set(ledger, first+i, locs[i]) for every i, in one call: the
// ledger is looked up once and each page once, not once per entry (a
// checkpoint sets runs of consecutive entries of a few ledgers). Every
// loc must be non-zero; a zero one fails the call before anything is set.
func (ix *Index) SetRun(ledger, first int64, locs []uint64) error {
	if len(locs) == 0 {
		return nil
	}
	last := first + int64(len(locs)) - 1
	if ledger < 0 || first < 0 || last < first || last/int64(ix.slots) >= maxPageTable {
		return fmt.Errorf("index: SetRun(%d, %d..%d): %w", ledger, first, last, ErrOutOfRange)
	}
	for i, loc := range locs {
		if loc == 0 {
			return fmt.Errorf("index: SetRun(%d, %d): location 0: %w", ledger, first+int64(i), ErrOutOfRange)
		}
	}
	if ix.closed.Load() {
		return ErrClosed
	}
	return ix.withLedger(ledger, func(ls *ledgerState) error {
		slots := int64(ix.slots)
		for i := 0; i < len(locs); {
			entry := first + int64(i)
			pn, sl := int(entry/slots), int(entry%slots)
			phys, err := ix.physPage(ls, pn)
			if err != nil {
				return err
			}
			seg, p := ix.page(phys)
			n := min(len(locs)-i, ix.slots-sl)
			for j, loc := range locs[i : i+n] {
				seg.slot(p, sl+j).Store(loc)
			}
			seg.markDirty(p)
			i += n
		}
		ix.raiseLast(ls, last)
		return nil
	})
}

// allocPage gives page pn of ls a zeroed physical page.
func (ix *Index) allocPage(ls *ledgerState, pn int) (uint32, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.deleted {
		panic("BUG: index: page allocation for a deleted ledger")
	}
	pt := *ls.pages.Load()
	if pn < len(pt) && pt[pn] != 0 {
		return pt[pn] - 1, nil
	}
	ix.mu.Lock()
	phys, err := ix.takePageLocked()
	ix.mu.Unlock()
	if err != nil {
		return 0, err
	}
	seg, p := ix.page(phys)
	for sl := range ix.slots {
		seg.slot(p, sl).Store(0)
	}
	seg.markDirty(p)
	var next []uint32
	if pn == len(pt) && pn < cap(pt) {
		// Append in place: readers hold headers of length <= len(pt) and
		// never see the slot until the new header is published. (A hole
		// below len(pt) is visible to readers, so it is copied below.)
		next = pt[:pn+1]
	} else {
		// Copy with room to grow, so a long ledger does not copy its whole
		// page table on every new page. A ledger's first table is just
		// what it needs: most ledgers of a broker with many topics never
		// get a second page, and every byte here is per ledger.
		n := max(len(pt), pn+1)
		c := max(2*n, 8)
		if len(pt) == 0 {
			c = n
		}
		next = make([]uint32, n, c)
		copy(next, pt)
	}
	next[pn] = phys + 1
	ls.pages.Store(&next)
	ix.markDirty(ls.id)
	return phys, nil
}

func (ix *Index) takePageLocked() (uint32, error) {
	if ix.mu.err != nil {
		return 0, ix.mu.err
	}
	if n := len(ix.mu.free); n > 0 {
		p := ix.mu.free[n-1]
		ix.mu.free = ix.mu.free[:n-1]
		return p, nil
	}
	segs := *ix.segs.Load()
	no := uint32(len(segs))
	s, err := createSegment(ix.opts.FS, ix.opts.Dir, no, ix.slots, ix.pps, !ix.opts.NoMmap)
	if err != nil {
		// A segment that found no space is not sticky: nothing changed,
		// the next page allocation tries again.
		if !isNoSpace(err) {
			ix.mu.err = err
		}
		return 0, err
	}
	next := append(slices.Clip(segs), s)
	ix.segs.Store(&next)
	ix.metaDirty.Store(true)
	base := no * uint32(ix.pps)
	for p := base + uint32(ix.pps) - 1; p > base; p-- {
		ix.mu.free = append(ix.mu.free, p)
	}
	return base, nil
}

// Get returns the location of (ledger, entry); ok is false if it was never
// set (or the ledger is unknown).
func (ix *Index) Get(ledger, entry int64) (loc uint64, ok bool) {
	ls := ix.lookup(ledger)
	if ls == nil || entry < 0 {
		return 0, false
	}
	pn, sl := entry/int64(ix.slots), int(entry%int64(ix.slots))
	pt := *ls.pages.Load()
	if pn >= int64(len(pt)) || pt[pn] == 0 {
		return 0, false
	}
	seg, p := ix.page(pt[pn] - 1)
	loc = seg.slot(p, sl).Load()
	return loc, loc != 0
}

// Entries calls fn for each entry of ledger with a location, in entry
// order, until fn returns false. It sees a consistent page table but may
// or may not see Sets running concurrently.
func (ix *Index) Entries(ledger int64, fn func(entry int64, loc uint64) bool) {
	ls := ix.lookup(ledger)
	if ls == nil {
		return
	}
	for pn, p := range *ls.pages.Load() {
		if p == 0 {
			continue
		}
		seg, sp := ix.page(p - 1)
		for sl := range ix.slots {
			if loc := seg.slot(sp, sl).Load(); loc != 0 && !fn(int64(pn)*int64(ix.slots)+int64(sl), loc) {
				return
			}
		}
	}
}

// LastEntry returns the highest entry id set for ledger (-1 if none); ok is
// false for an unknown ledger. After a restart it is recomputed from the
// pages, on the ledger's first use.
func (ix *Index) LastEntry(ledger int64) (last int64, ok bool) {
	ls := ix.lookup(ledger)
	if ls == nil {
		return -1, false
	}
	return ix.lastOf(ls), true
}

// Exists reports whether ledger is known (has metadata or entries).
func (ix *Index) Exists(ledger int64) bool { return ix.lookup(ledger) != nil }

// GetMeta returns a copy of ledger's metadata.
func (ix *Index) GetMeta(ledger int64) (Meta, bool) {
	ls := ix.lookup(ledger)
	if ls == nil {
		return Meta{}, false
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.meta.clone(), true
}

// SetMeta replaces ledger's metadata, creating the ledger if needed.
func (ix *Index) SetMeta(ledger int64, m Meta) error {
	return ix.UpdateMeta(ledger, func(old *Meta) { *old = m })
}

// UpdateMeta applies fn to ledger's metadata atomically with respect to
// other metadata updates, creating the ledger if needed. fn must not call
// into the Index.
func (ix *Index) UpdateMeta(ledger int64, fn func(m *Meta)) error {
	if ledger < 0 {
		return fmt.Errorf("index: ledger %d: %w", ledger, ErrOutOfRange)
	}
	if ix.closed.Load() {
		return ErrClosed
	}
	return ix.withLedger(ledger, func(ls *ledgerState) error {
		ls.mu.Lock()
		defer ls.mu.Unlock()
		m := ls.meta.clone()
		fn(&m)
		m.MasterKey = ix.keys.share(m.MasterKey)
		m.ExplicitLAC = cloneBytes(m.ExplicitLAC)
		ls.meta = m
		ix.markDirty(ledger)
		return nil
	})
}

// Delete forgets ledger. Its pages become reusable after the next Flush
// has made the deletion durable, so a crash never leaves the old page
// table pointing at another ledger's entries. Deleting an unknown ledger
// is a no-op. Set and UpdateMeta run under the ledger's shard read lock,
// so Delete waits for those in flight; a later Set creates the ledger
// afresh.
func (ix *Index) Delete(ledger int64) error {
	if ix.closed.Load() {
		return ErrClosed
	}
	sh := ix.shard(ledger)
	sh.mu.Lock()
	ls := sh.ledgers[ledger]
	delete(sh.ledgers, ledger)
	sh.mu.Unlock()
	if ls == nil {
		return nil
	}
	ls.mu.Lock()
	ls.deleted = true
	pt := *ls.pages.Load()
	ls.mu.Unlock()
	ix.mu.Lock()
	for _, p := range pt {
		if p != 0 {
			ix.mu.pendingFree = append(ix.mu.pendingFree, p-1)
		}
	}
	ix.mu.Unlock()
	ix.markDirty(ledger)
	return nil
}

// Ledgers returns the known ledgers, sorted.
func (ix *Index) Ledgers() []int64 {
	var out []int64
	for i := range ix.shards {
		sh := &ix.shards[i]
		sh.mu.RLock()
		for id := range sh.ledgers {
			out = append(out, id)
		}
		sh.mu.RUnlock()
	}
	slices.Sort(out)
	return out
}

// Stats describe page usage.
type Stats struct {
	Ledgers, Segments, Pages, FreePages, PendingFreePages int
}

// Stats returns page usage figures.
func (ix *Index) Stats() Stats {
	st := Stats{Ledgers: len(ix.Ledgers()), Segments: len(*ix.segs.Load())}
	st.Pages = st.Segments * ix.pps
	ix.mu.Lock()
	st.FreePages, st.PendingFreePages = len(ix.mu.free), len(ix.mu.pendingFree)
	ix.mu.Unlock()
	return st
}

// isNoSpace reports whether err says the file system is full (ENOSPC, or
// EDQUOT: over quota).
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
