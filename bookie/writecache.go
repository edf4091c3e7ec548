package bookie

import (
	"cmp"
	"slices"
	"sync"
	"time"
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
// payloads and a map from key to the payload's bytes in the arena.
type cacheHalf struct {
	chunks    [][]byte // each has cap chunkSize (bigger payloads get their own)
	cur       int      // chunk being filled
	entries   map[key][]byte
	lastEntry map[int64]int64
	bytes     int64
}

func newCacheHalf() *cacheHalf {
	return &cacheHalf{entries: make(map[key][]byte), lastEntry: make(map[int64]int64)}
}

func (h *cacheHalf) put(k key, payload []byte, chunkSize int) {
	var dst []byte
	if len(payload) > chunkSize/4 {
		dst = make([]byte, len(payload))
	} else {
		for {
			if h.cur == len(h.chunks) {
				h.chunks = append(h.chunks, make([]byte, 0, chunkSize))
			}
			c := h.chunks[h.cur]
			if cap(c)-len(c) >= len(payload) {
				n := len(c)
				c = append(c, payload...)
				h.chunks[h.cur] = c
				dst = c[n : n+len(payload) : n+len(payload)]
				break
			}
			h.cur++
		}
	}
	copy(dst, payload)
	if old, ok := h.entries[k]; ok {
		h.bytes -= int64(len(old))
	}
	h.entries[k] = dst
	h.bytes += int64(len(payload))
	if last, ok := h.lastEntry[k.ledger]; !ok || k.entry > last {
		h.lastEntry[k.ledger] = k.entry
	}
}

// reset empties the half and keeps its memory for reuse.
func (h *cacheHalf) reset() {
	for i := range h.chunks {
		h.chunks[i] = h.chunks[i][:0]
	}
	h.cur = 0
	clear(h.entries)
	clear(h.lastEntry)
	h.bytes = 0
}

func (h *cacheHalf) deleteLedger(ledger int64) {
	if _, ok := h.lastEntry[ledger]; !ok {
		return
	}
	for k, v := range h.entries {
		if k.ledger == ledger {
			h.bytes -= int64(len(v))
			delete(h.entries, k)
		}
	}
	delete(h.lastEntry, ledger)
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
	chunk := 1 << 20
	if int64(chunk) > half/4 {
		chunk = int(max(half/4, 4096))
	}
	c := &writeCache{halfSize: half, chunkSize: chunk, needFlush: make(chan struct{}, 1)}
	c.mu.active = newCacheHalf()
	c.mu.space = make(chan struct{})
	return c
}

// put adds (or replaces) an entry. It waits while the active half is full
// and a flush is running, until maxWait passed (0: wait forever), done
// closes (ErrClosed) or room appears.
func (c *writeCache) put(ledger, entry int64, payload []byte, maxWait time.Duration, done <-chan struct{}) error {
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
			a.put(key{ledger, entry}, payload, c.chunkSize)
			full := a.bytes >= c.halfSize
			c.mu.Unlock()
			if full {
				c.signalFlush()
			}
			return nil
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
				return ErrTooManyRequests
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
			return ErrTooManyRequests
		case <-done:
			return ErrClosed
		}
	}
}

func (c *writeCache) signalFlush() {
	select {
	case c.needFlush <- struct{}{}:
	default:
	}
}

// get returns a copy of the cached payload.
func (c *writeCache) get(ledger, entry int64) ([]byte, bool) {
	k := key{ledger, entry}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if v, ok := c.mu.active.entries[k]; ok {
		return slices.Clone(v), true
	}
	if f := c.mu.frozen; f != nil {
		if v, ok := f.entries[k]; ok {
			return slices.Clone(v), true
		}
	}
	return nil, false
}

// lastEntry returns the highest entry id cached for ledger.
func (c *writeCache) lastEntry(ledger int64) (int64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	last, ok := c.mu.active.lastEntry[ledger]
	if f := c.mu.frozen; f != nil {
		if l, ok2 := f.lastEntry[ledger]; ok2 && (!ok || l > last) {
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
	if len(c.mu.active.entries) == 0 {
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
	for k, v := range f.entries {
		dst = append(dst, frozenEntry{key: k, payload: v})
	}
	slices.SortFunc(dst, func(a, b frozenEntry) int { return compareKeys(a.key, b.key) })
	return dst
}

type frozenEntry struct {
	key
	payload []byte
}

// release drops the frozen half after its entries reached ledger storage.
func (c *writeCache) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.frozen == nil {
		return
	}
	c.mu.frozen.reset()
	c.mu.spare, c.mu.frozen = c.mu.frozen, nil
	close(c.mu.space)
	c.mu.space = make(chan struct{})
}

// hasFrozen reports whether a frozen half awaits release (a flush failed
// or is running).
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
