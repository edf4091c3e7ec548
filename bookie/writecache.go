package bookie

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/entrylog"
)

// key names one entry.
type key struct{ ledger, entry int64 }

func compareKeys(a, b key) int {
	if c := cmp.Compare(a.ledger, b.ledger); c != 0 {
		return c
	}
	return cmp.Compare(a.entry, b.entry)
}

// cacheHalf is one half of the write cache: an arena of chunks holding the
// entries, and per ledger a dense run of entries indexed by entry id
// (entry ids of a ledger arrive nearly in order), with a map for the rare
// entry that does not fit its run. Both keep the flush free of sorting:
// ledgers are sorted, runs already are.
//
// Each entry is stored as its entry-log record (the 24-byte header, then
// the payload), so that a checkpoint hands the cached bytes to the entry
// log as they are (entrylog.AddRecord) instead of framing them into
// another buffer. The header's checksum is folded from the payload CRC
// the add computed anyway (entrylog.PutRecordHeader) for payloads of at
// least entrylog.FoldMin bytes; for smaller ones a pass over the record is
// cheaper, and the checkpoint does it (sealRecord) before writing, off the
// add path. Slots and the sparse map hold the records; payloadOf gives the
// payload.
type cacheHalf struct {
	chunks  [][]byte // each has cap chunkSize (bigger records get their own)
	cur     int      // chunk being filled
	runs    map[int64]*ledgerRun
	sparse  map[key][]byte
	free    []*ledgerRun // reset runs for reuse
	bytes   int64
	entries int
	// refs counts journal records written from this half's memory
	// (journal.AppendRef) whose completion has not run yet: release waits
	// for them before the memory is reused. Added to only while the half
	// is active (under writeCache.mu), so a frozen half's count only falls.
	refs sync.WaitGroup
}

// payloadOf returns the payload of a cached record.
func payloadOf(rec []byte) []byte { return rec[entrylog.RecordHeaderSize:] }

// recordHeader encodes the header a cached record starts with: complete
// for a payload of at least entrylog.FoldMin bytes, without the checksum
// (sealRecord) below.
func recordHeader(ledger, entry int64, payload []byte, pcrc uint32) (h [entrylog.RecordHeaderSize]byte) {
	if len(payload) >= entrylog.FoldMin {
		entrylog.PutRecordHeader(h[:], ledger, entry, len(payload), pcrc)
	} else {
		entrylog.PutRecordFields(h[:], ledger, entry, len(payload))
	}
	return h
}

// sealRecord completes a cached record for the entry log: the checksum of
// a small one. Only the checkpoint calls it, on the frozen half, whose
// readers only read payloads.
func sealRecord(rec []byte) []byte {
	if len(payloadOf(rec)) < entrylog.FoldMin {
		entrylog.SetRecordCRC(rec)
	}
	return rec
}

// ledgerRun holds slot i = entry first+i (nil: absent) for i < n, in
// pages of runPage slots: a long run grows by adding pages, never by
// copying what it holds. The first page grows like a slice (a ledger with
// few entries costs little); later pages are allocated whole. Pages are
// kept when the run is reset and reused.
type ledgerRun struct {
	first, last int64
	n           int64
	pages       [][][]byte
	sparse      bool // some of the ledger's entries are in cacheHalf.sparse
}

// runPage is the number of slots per page of a ledgerRun (12 KiB).
const runPage = 512

// at returns slot i (i < n).
func (r *ledgerRun) at(i int64) *[]byte { return &r.pages[i/runPage][i%runPage] }

// push appends one slot.
func (r *ledgerRun) push(v []byte) {
	p := int(r.n / runPage)
	if p == len(r.pages) {
		var pg [][]byte
		if p > 0 {
			pg = make([][]byte, 0, runPage)
		}
		r.pages = append(r.pages, pg)
	}
	r.pages[p] = append(r.pages[p], v)
	r.n++
}

// reset empties the run, keeping its pages.
func (r *ledgerRun) reset() {
	for k := range r.pages {
		clear(r.pages[k])
		r.pages[k] = r.pages[k][:0]
	}
	r.n, r.sparse = 0, false
}

// eachSlot calls fn for the present slots in order.
func (r *ledgerRun) eachSlot(fn func(entry int64, p []byte) error) error {
	e := r.first
	for _, pg := range r.pages {
		for _, p := range pg {
			if p != nil {
				if err := fn(e, p); err != nil {
					return err
				}
			}
			e++
		}
	}
	return nil
}

// maxRunGap bounds the nil slots a put may add to a run before it goes to
// the sparse map instead.
const maxRunGap = 1024

func newCacheHalf() *cacheHalf {
	return &cacheHalf{runs: make(map[int64]*ledgerRun), sparse: make(map[key][]byte)}
}

// alloc returns n bytes of arena space (capacity n: appends cannot run
// into the next record). n is at most chunkSize/4 (put gives larger
// records an allocation of their own).
func (h *cacheHalf) alloc(n int, chunkSize int) []byte {
	for {
		if h.cur == len(h.chunks) {
			h.chunks = append(h.chunks, make([]byte, 0, chunkSize))
		}
		c := h.chunks[h.cur]
		if l := len(c); cap(c)-l >= n {
			c = c[:l+n]
			h.chunks[h.cur] = c
			return c[l : l+n : l+n]
		}
		h.cur++
	}
}

// put stores the entry as its entry-log record, hdr (recordHeader) then
// payload, and returns the cached payload.
func (h *cacheHalf) put(k key, hdr *[entrylog.RecordHeaderSize]byte, payload []byte, chunkSize int) []byte {
	return h.putRun(h.runFor(k), k, h.record(hdr, payload, chunkSize), len(payload))
}

// record copies hdr and payload into the half's memory.
func (h *cacheHalf) record(hdr *[entrylog.RecordHeaderSize]byte, payload []byte, chunkSize int) []byte {
	var dst []byte
	if n := entrylog.RecordHeaderSize + len(payload); n > chunkSize/4 {
		// Growing by append copies the payload into the new array without
		// clearing it first (make would).
		dst = append(append([]byte(nil), hdr[:]...), payload...)
		dst = dst[:n:n]
	} else {
		dst = h.alloc(n, chunkSize)
		copy(dst, hdr[:])
		copy(dst[entrylog.RecordHeaderSize:], payload)
	}
	return dst
}

// runFor returns the run of k's ledger, starting one at k.entry if the
// ledger has none.
func (h *cacheHalf) runFor(k key) *ledgerRun {
	r := h.runs[k.ledger]
	if r == nil {
		if n := len(h.free); n > 0 {
			r, h.free = h.free[n-1], h.free[:n-1]
		} else {
			r = &ledgerRun{}
		}
		r.first, r.last = k.entry, k.entry
		h.runs[k.ledger] = r
	}
	return r
}

// putRun stores dst, the record of k (payload of n bytes), in r, the run
// of k's ledger, and returns the cached payload.
func (h *cacheHalf) putRun(r *ledgerRun, k key, dst []byte, n int) []byte {
	i := k.entry - r.first
	switch {
	case i >= 0 && i < r.n:
		slot := r.at(i)
		if old := *slot; old != nil {
			h.bytes -= int64(len(payloadOf(old)))
			h.entries--
		}
		*slot = dst
	case i >= r.n && i < r.n+maxRunGap:
		for r.n < i {
			r.push(nil)
		}
		r.push(dst)
	default:
		if old, ok := h.sparse[k]; ok {
			h.bytes -= int64(len(payloadOf(old)))
			h.entries--
		}
		h.sparse[k] = dst
		r.sparse = true
	}
	h.bytes += int64(n)
	h.entries++
	r.last = max(r.last, k.entry)
	return payloadOf(dst)
}

// get returns the cached payload of k.
func (h *cacheHalf) get(k key) ([]byte, bool) {
	r := h.runs[k.ledger]
	if r == nil {
		return nil, false
	}
	if i := k.entry - r.first; i >= 0 && i < r.n {
		if v := *r.at(i); v != nil {
			return payloadOf(v), true
		}
	}
	if r.sparse {
		if v, ok := h.sparse[k]; ok {
			return payloadOf(v), true
		}
	}
	return nil, false
}

func (h *cacheHalf) lastEntry(ledger int64) (int64, bool) {
	if r := h.runs[ledger]; r != nil {
		return r.last, true
	}
	return 0, false
}

// each calls fn for the half's entries (their records, see sealRecord) in
// (ledger, entry) order, without materialising a list of them (a half may hold millions).
// It stops at fn's first error. The order is the same on every call while
// the half is unchanged.
func (h *cacheHalf) each(fn func(k key, rec []byte) error) error {
	ledgers := make([]int64, 0, len(h.runs))
	for l := range h.runs {
		ledgers = append(ledgers, l)
	}
	slices.Sort(ledgers)
	var merged []frozenEntry
	for _, l := range ledgers {
		r := h.runs[l]
		if !r.sparse {
			if err := r.eachSlot(func(e int64, p []byte) error { return fn(key{l, e}, p) }); err != nil {
				return err
			}
			continue
		}
		// Rare: entries outside the run; merge them in order.
		merged = merged[:0]
		r.eachSlot(func(e int64, p []byte) error {
			merged = append(merged, frozenEntry{key: key{l, e}, rec: p})
			return nil
		})
		for k, p := range h.sparse {
			if k.ledger == l {
				merged = append(merged, frozenEntry{key: k, rec: p})
			}
		}
		slices.SortFunc(merged, func(a, b frozenEntry) int { return compareKeys(a.key, b.key) })
		for _, e := range merged {
			if err := fn(e.key, e.rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// sorted appends the half's entries to dst in (ledger, entry) order.
func (h *cacheHalf) sorted(dst []frozenEntry) []frozenEntry {
	h.each(func(k key, rec []byte) error {
		dst = append(dst, frozenEntry{key: k, rec: rec})
		return nil
	})
	return dst
}

// reset empties the half and keeps its memory for reuse.
func (h *cacheHalf) reset() {
	for i := range h.chunks {
		h.chunks[i] = h.chunks[i][:0]
	}
	h.cur = 0
	for _, r := range h.runs {
		r.reset()
		h.free = append(h.free, r)
	}
	clear(h.runs)
	clear(h.sparse)
	h.bytes, h.entries = 0, 0
}

func (h *cacheHalf) deleteLedger(ledger int64) {
	r := h.runs[ledger]
	if r == nil {
		return
	}
	r.eachSlot(func(_ int64, rec []byte) error {
		h.bytes -= int64(len(payloadOf(rec)))
		h.entries--
		return nil
	})
	if r.sparse {
		for k, v := range h.sparse {
			if k.ledger == ledger {
				h.bytes -= int64(len(payloadOf(v)))
				h.entries--
				delete(h.sparse, k)
			}
		}
	}
	delete(h.runs, ledger)
}

// writeCache is the double-buffered write cache. Adds go to the active half
// and are readable at once; a checkpoint freezes the active half (swap),
// writes it sorted by (ledger, entry) into the entry log and then releases
// it. While the frozen half is being flushed and the active half is full,
// adds wait up to a bounded time.
//
// Safe for concurrent use. The frozen half is immutable between swap and
// release, so the flusher reads it without the lock.
type writeCache struct {
	halfSize  int64
	chunkSize int

	mu struct {
		sync.RWMutex
		active *cacheHalf
		frozen *cacheHalf // nil when no flush is in progress
		spare  *cacheHalf
		// space is closed (and replaced) whenever room appears: a swap or
		// a release.
		space chan struct{}
	}
	// needFlush receives a token (non-blocking) when the active half
	// passes halfSize; the checkpoint loop listens.
	needFlush chan struct{}
}

func newWriteCache(totalSize int64) *writeCache {
	half := totalSize / 2
	// 4 MiB chunks hold records up to 1 MiB (Pulsar batches of a few
	// hundred KiB included) with little waste at the chunk ends.
	chunk := 4 << 20
	if int64(chunk) > half/4 {
		chunk = int(max(half/4, 4096))
	}
	c := &writeCache{halfSize: half, chunkSize: chunk, needFlush: make(chan struct{}, 1)}
	c.mu.active = newCacheHalf()
	c.mu.space = make(chan struct{})
	return c
}

// put adds (or replaces) an entry; pcrc is the payload's CRC-32C
// (entrylog.PayloadCRC). It waits while the active half is full and a
// flush is running, until maxWait passed (0: wait forever), done closes
// (ErrClosed) or room appears.
func (c *writeCache) put(ledger, entry int64, payload []byte, pcrc uint32, maxWait time.Duration, done <-chan struct{}) error {
	_, _, err := c.putRef(ledger, entry, payload, pcrc, false, maxWait, done)
	return err
}

// putRef is put returning the cached payload and the half holding it. With
// ref the half's refs count is raised: the caller hands the cached payload
// to the journal (AppendRef) and calls half.refs.Done once the journal's
// completion ran; until then release does not reuse the half's memory.
func (c *writeCache) putRef(ledger, entry int64, payload []byte, pcrc uint32, ref bool, maxWait time.Duration, done <-chan struct{}) ([]byte, *cacheHalf, error) {
	hdr := recordHeader(ledger, entry, payload, pcrc) // outside the lock
	var (
		timer    *time.Timer
		deadline time.Time
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		c.mu.Lock()
		a := c.mu.active
		if a.bytes < c.halfSize || a.bytes == 0 {
			cached := a.put(key{ledger, entry}, &hdr, payload, c.chunkSize)
			if ref {
				a.refs.Add(1)
			}
			full := a.bytes >= c.halfSize
			c.mu.Unlock()
			if full {
				c.signalFlush()
			}
			return cached, a, nil
		}
		space := c.mu.space
		c.mu.Unlock()
		c.signalFlush()
		var timeout <-chan time.Time
		if maxWait > 0 && deadline.IsZero() {
			deadline = time.Now().Add(maxWait)
		}
		if !deadline.IsZero() {
			d := time.Until(deadline)
			if d <= 0 {
				return nil, nil, ErrTooManyRequests
			}
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			timeout = timer.C
		}
		select {
		case <-space:
		case <-timeout:
			return nil, nil, ErrTooManyRequests
		case <-done:
			return nil, nil, ErrClosed
		}
	}
}

// putBatch caches payloads[i] as entry entries[i] of ledger (payload CRC
// pcrcs[i]), in order, under one hold of the lock for as long as the
// active half has room, and returns how many it cached; the caller puts
// the rest with putRef, which waits for room. Payloads are copied (no
// ref): the batch path is for small entries.
func (c *writeCache) putBatch(ledger int64, entries []int64, payloads [][]byte, pcrcs []uint32) int {
	c.mu.Lock()
	a := c.mu.active
	n := 0
	var r *ledgerRun // the ledger's run, looked up once
	for ; n < len(entries) && (a.bytes < c.halfSize || a.bytes == 0); n++ {
		k := key{ledger, entries[n]}
		hdr := recordHeader(ledger, entries[n], payloads[n], pcrcs[n])
		if r == nil {
			r = a.runFor(k)
		}
		a.putRun(r, k, a.record(&hdr, payloads[n], c.chunkSize), len(payloads[n]))
	}
	full := a.bytes >= c.halfSize
	c.mu.Unlock()
	if full {
		c.signalFlush()
	}
	return n
}

func (c *writeCache) signalFlush() {
	select {
	case c.needFlush <- struct{}{}:
	default:
	}
}

// get returns a copy of the cached payload.
func (c *writeCache) get(ledger, entry int64) ([]byte, bool) {
	v, ok := c.appendGet(nil, ledger, entry)
	if ok && v == nil {
		v = []byte{}
	}
	return v, ok
}

// appendGet appends the cached payload to dst (the one copy a read
// makes).
func (c *writeCache) appendGet(dst []byte, ledger, entry int64) ([]byte, bool) {
	k := key{ledger, entry}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if v, ok := c.mu.active.get(k); ok {
		return append(dst, v...), true
	}
	if f := c.mu.frozen; f != nil {
		if v, ok := f.get(k); ok {
			return append(dst, v...), true
		}
	}
	return dst, false
}

// lastEntry returns the highest entry id cached for ledger.
func (c *writeCache) lastEntry(ledger int64) (int64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	last, ok := c.mu.active.lastEntry(ledger)
	if f := c.mu.frozen; f != nil {
		if l, ok2 := f.lastEntry(ledger); ok2 && (!ok || l > last) {
			last, ok = l, true
		}
	}
	return last, ok
}

// size returns the bytes held by the active and the frozen half.
func (c *writeCache) size() (active, frozen int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.mu.frozen != nil {
		frozen = c.mu.frozen.bytes
	}
	return c.mu.active.bytes, frozen
}

// swap freezes the active half and calls mark with the lock held (the
// checkpoint captures the journal position there: every add whose journal
// record precedes that position is in the frozen half or earlier, because
// adds insert into the cache before they append to the journal). With an
// empty active half it calls mark and returns false (nothing to flush, yet
// the mark is valid). With a frozen half still unreleased it returns false
// without calling mark.
func (c *writeCache) swap(mark func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.frozen != nil {
		return false
	}
	if c.mu.active.entries == 0 {
		if mark != nil {
			mark()
		}
		return false
	}
	c.mu.frozen = c.mu.active
	if c.mu.spare != nil {
		c.mu.active, c.mu.spare = c.mu.spare, nil
	} else {
		c.mu.active = newCacheHalf()
	}
	if mark != nil {
		mark()
	}
	close(c.mu.space)
	c.mu.space = make(chan struct{})
	return true
}

// frozenSorted returns the frozen half's entries sorted by (ledger, entry),
// appended to dst. Only the checkpoint goroutine calls it, between swap and
// release.
func (c *writeCache) frozenSorted(dst []frozenEntry) []frozenEntry {
	c.mu.RLock()
	f := c.mu.frozen
	c.mu.RUnlock()
	if f == nil {
		return dst
	}
	return f.sorted(dst)
}

// frozenEach calls fn for the frozen half's entries (their entry-log
// records) sorted by (ledger, entry), in the same order on every call
// until release. Only the
// checkpoint goroutine calls it, between swap and release.
func (c *writeCache) frozenEach(fn func(k key, rec []byte) error) error {
	c.mu.RLock()
	f := c.mu.frozen
	c.mu.RUnlock()
	if f == nil {
		return nil
	}
	return f.each(fn)
}

type frozenEntry struct {
	key
	rec []byte // the entry-log record: header, then payload
}

// release drops the frozen half after its entries reached ledger storage.
// It first waits until no journal write still reads the half's memory: an
// add that put its entry before the swap may append its journal record
// (AppendRef, after the checkpoint's mark) only now; its completion comes
// with the journal's next group, which does not depend on the checkpoint.
func (c *writeCache) release() {
	c.mu.RLock()
	f := c.mu.frozen
	c.mu.RUnlock()
	if f == nil {
		return
	}
	f.refs.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.frozen.reset()
	c.mu.spare, c.mu.frozen = c.mu.frozen, nil
	close(c.mu.space)
	c.mu.space = make(chan struct{})
}

// hasFrozen reports whether a frozen half awaits release (a flush failed
// or is running).
// frozenSize returns the frozen half's entries and bytes (0 when none).
func (c *writeCache) frozenSize() (entries int, bytes int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if f := c.mu.frozen; f != nil {
		return f.entries, f.bytes
	}
	return 0, 0
}

// nextFlush is the entries and bytes the next checkpoint writes: the
// frozen half's, else the active half's.
func (c *writeCache) nextFlush() (entries int, bytes int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	h := c.mu.frozen
	if h == nil {
		h = c.mu.active
	}
	return h.entries, h.bytes
}

func (c *writeCache) hasFrozen() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.mu.frozen != nil
}

// deleteLedger removes a ledger's entries from both halves. The caller
// holds the checkpoint lock, so no flush reads the frozen half meanwhile.
func (c *writeCache) deleteLedger(ledger int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.active.deleteLedger(ledger)
	if c.mu.frozen != nil {
		c.mu.frozen.deleteLedger(ledger)
	}
}
