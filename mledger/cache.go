package mledger

import (
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
// the slowest cursor's mark-delete position.
//
// Safe for concurrent use. Its lock is a leaf: no other lock is taken while
// it is held.
type Cache struct {
	mu        sync.Mutex
	budget    int64
	watermark float64
	size      int64
	count     int64
	head      *cacheEntry // oldest
	tail      *cacheEntry

	hits      atomic.Int64
	misses    atomic.Int64
	evictions atomic.Int64
}

// CacheStats is a snapshot of cache counters.
type CacheStats struct {
	Size, Entries, Budget   int64
	Hits, Misses, Evictions int64
}

type mlCache struct {
	c       *Cache
	entries map[Position]*cacheEntry
	head    *cacheEntry // lowest position
	tail    *cacheEntry
}

type cacheEntry struct {
	m          *mlCache
	pos        Position
	data       []byte
	inserted   int64 // unix nanos
	prev, next *cacheEntry
	mprev      *cacheEntry
	mnext      *cacheEntry
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

func (c *Cache) register() *mlCache {
	return &mlCache{c: c, entries: map[Position]*cacheEntry{}}
}

func (c *Cache) unlinkLocked(e *cacheEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		c.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		c.tail = e.prev
	}
	m := e.m
	if e.mprev != nil {
		e.mprev.mnext = e.mnext
	} else {
		m.head = e.mnext
	}
	if e.mnext != nil {
		e.mnext.mprev = e.mprev
	} else {
		m.tail = e.mprev
	}
	delete(m.entries, e.pos)
	c.size -= int64(len(e.data))
	c.count--
	*e = cacheEntry{}
}

// insert adds an entry; positions of one managed ledger arrive in order.
func (m *mlCache) insert(pos Position, data []byte, now time.Time) {
	c := m.c
	if int64(len(data)) > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := m.entries[pos]; ok {
		return
	}
	e := &cacheEntry{m: m, pos: pos, data: data, inserted: now.UnixNano()}
	e.prev = c.tail
	if c.tail != nil {
		c.tail.next = e
	} else {
		c.head = e
	}
	c.tail = e
	e.mprev = m.tail
	if m.tail != nil {
		m.tail.mnext = e
	} else {
		m.head = e
	}
	m.tail = e
	m.entries[pos] = e
	c.size += int64(len(data))
	c.count++
	if c.size > c.budget {
		target := int64(float64(c.budget) * c.watermark)
		for c.size > target && c.head != nil {
			c.unlinkLocked(c.head)
			c.evictions.Add(1)
		}
	}
}

func (m *mlCache) get(pos Position) ([]byte, bool) {
	m.c.mu.Lock()
	e, ok := m.entries[pos]
	var d []byte
	if ok {
		d = e.data
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
	for m.head != nil && !pos.Less(m.head.pos) {
		m.c.unlinkLocked(m.head)
		m.c.evictions.Add(1)
	}
}

// dropLedger drops the entries of one ledger.
func (m *mlCache) dropLedger(id int64) {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	for e := m.head; e != nil; {
		n := e.mnext
		if e.pos.LedgerID == id {
			m.c.unlinkLocked(e)
		}
		e = n
	}
}

// clear drops every entry of this managed ledger.
func (m *mlCache) clear() {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	for m.head != nil {
		m.c.unlinkLocked(m.head)
	}
}

// EvictOlderThan drops entries inserted before now-age.
func (c *Cache) EvictOlderThan(now time.Time, age time.Duration) {
	limit := now.Add(-age).UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.head != nil && c.head.inserted < limit {
		c.unlinkLocked(c.head)
		c.evictions.Add(1)
	}
}
