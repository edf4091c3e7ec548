package mledger

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Cache is the broker-wide entry cache shared by all managed ledgers of a
// Factory. Entries are inserted when an add completes, so tailing cursors
// read from memory. Eviction: when the total size exceeds the budget, the
// oldest entries (insertion order, across all managed ledgers) go until the
// size is at most watermark × budget; EvictOlderThan drops entries older
// than the age threshold; a managed ledger drops its entries at or before
// the slowest cursor's mark-delete.
//
// Layout: each managed ledger keeps its entries in a deque ordered by
// position (adds complete in position order), looked up by binary search;
// a global FIFO of (managed ledger, sequence) tokens records insertion
// order. Because each managed ledger inserts in order, the globally oldest
// entry is always the front of its managed ledger's deque; tokens of entries
// already removed otherwise (mark-delete eviction, trimming) are skipped.
// No map, and no allocation per entry beyond amortised slice growth.
//
// Safe for concurrent use. Its lock is a leaf: no other lock is taken while
// it is held.
type Cache struct {
	mu        sync.Mutex
	budget    int64
	watermark float64
	size      int64
	count     int64
	order     []cacheToken // global insertion order; order[orderHead:] live
	orderHead int

	hits      atomic.Int64
	misses    atomic.Int64
	evictions atomic.Int64
}

type cacheToken struct {
	m        *mlCache
	seq      uint64
	inserted int64 // unix nanos
}

// CacheStats is a snapshot of cache counters.
type CacheStats struct {
	Size, Entries, Budget   int64
	Hits, Misses, Evictions int64
}

type mlCache struct {
	c       *Cache
	q       []cacheEntry // q[head:] live, ascending positions and seqs
	head    int
	nextSeq uint64
}

type cacheEntry struct {
	pos  Position
	seq  uint64
	data []byte
}

func newCache(budget int64, watermark float64) *Cache {
	return &Cache{budget: budget, watermark: watermark}
}

// Stats returns the current counters.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Size: c.size, Entries: c.count, Budget: c.budget,
		Hits: c.hits.Load(), Misses: c.misses.Load(), Evictions: c.evictions.Load()}
}

func (c *Cache) register() *mlCache { return &mlCache{c: c} }

// popFrontLocked removes m's oldest entry.
func (m *mlCache) popFrontLocked() {
	e := &m.q[m.head]
	m.c.size -= int64(len(e.data))
	m.c.count--
	*e = cacheEntry{}
	m.head++
	if m.head == len(m.q) {
		m.q, m.head = m.q[:0], 0
	} else if m.head >= 1024 && m.head > len(m.q)/2 {
		n := copy(m.q, m.q[m.head:])
		clear(m.q[n:])
		m.q, m.head = m.q[:n], 0
	}
}

// popTokenLocked pops the globally oldest token, removing its entry if it
// is still cached.
func (c *Cache) popTokenLocked() {
	t := c.order[c.orderHead]
	c.order[c.orderHead] = cacheToken{}
	c.orderHead++
	if c.orderHead == len(c.order) {
		c.order, c.orderHead = c.order[:0], 0
	} else if c.orderHead >= 1024 && c.orderHead > len(c.order)/2 {
		n := copy(c.order, c.order[c.orderHead:])
		clear(c.order[n:])
		c.order, c.orderHead = c.order[:n], 0
	}
	m := t.m
	if m.head < len(m.q) && m.q[m.head].seq == t.seq {
		m.popFrontLocked()
		c.evictions.Add(1)
	}
}

// insert adds an entry; positions of one managed ledger arrive in order.
func (m *mlCache) insert(pos Position, data []byte, now time.Time) {
	c := m.c
	if int64(len(data)) > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(m.q); n > m.head && !m.q[n-1].pos.Less(pos) {
		return // not after the newest: already cached
	}
	seq := m.nextSeq
	m.nextSeq++
	m.q = append(m.q, cacheEntry{pos: pos, seq: seq, data: data})
	c.order = append(c.order, cacheToken{m: m, seq: seq, inserted: now.UnixNano()})
	c.size += int64(len(data))
	c.count++
	if c.size > c.budget {
		target := int64(float64(c.budget) * c.watermark)
		for c.size > target && c.orderHead < len(c.order) {
			c.popTokenLocked()
		}
	}
}

func (m *mlCache) get(pos Position) ([]byte, bool) {
	m.c.mu.Lock()
	live := m.q[m.head:]
	i := sort.Search(len(live), func(i int) bool { return !live[i].pos.Less(pos) })
	var d []byte
	ok := i < len(live) && live[i].pos == pos
	if ok {
		d = live[i].data
	}
	m.c.mu.Unlock()
	if ok {
		m.c.hits.Add(1)
	} else {
		m.c.misses.Add(1)
	}
	return d, ok
}

// evictUpTo drops this managed ledger's entries at or before pos.
func (m *mlCache) evictUpTo(pos Position) {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	for m.head < len(m.q) && !pos.Less(m.q[m.head].pos) {
		m.popFrontLocked()
		m.c.evictions.Add(1)
	}
}

// dropLedger drops the entries of one ledger.
func (m *mlCache) dropLedger(id int64) {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	for m.head < len(m.q) && m.q[m.head].pos.LedgerID == id {
		m.popFrontLocked()
	}
	// Not at the front (rare): filter, keeping order.
	live := m.q[m.head:]
	k := 0
	for _, e := range live {
		if e.pos.LedgerID == id {
			m.c.size -= int64(len(e.data))
			m.c.count--
			continue
		}
		live[k] = e
		k++
	}
	clear(live[k:])
	m.q = m.q[:m.head+k]
}

// clear drops every entry of this managed ledger.
func (m *mlCache) clear() {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	for m.head < len(m.q) {
		m.popFrontLocked()
	}
}

// EvictOlderThan drops entries inserted before now-age.
func (c *Cache) EvictOlderThan(now time.Time, age time.Duration) {
	limit := now.Add(-age).UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.orderHead < len(c.order) && c.order[c.orderHead].inserted < limit {
		c.popTokenLocked()
	}
}
