package bookie

import (
	"slices"
	"sync"
)

// readCache holds entries read from the entry log, including the read-ahead
// that follows a miss. It is a ring of segments: inserts go to the newest
// segment; when it passes its share of the capacity the oldest segment is
// dropped whole. That approximates LRU at O(1) per operation with no
// per-entry list.
//
// Safe for concurrent use.
type readCache struct {
	segCap int64
	mu     struct {
		sync.Mutex
		segs []rcSeg
		cur  int
	}
}

type rcSeg struct {
	entries map[key][]byte
	bytes   int64
}

const readCacheSegments = 4

func newReadCache(size int64) *readCache {
	c := &readCache{segCap: max(size/readCacheSegments, 1)}
	c.mu.segs = make([]rcSeg, readCacheSegments)
	for i := range c.mu.segs {
		c.mu.segs[i].entries = make(map[key][]byte)
	}
	return c
}

// get returns a copy of the cached payload.
func (c *readCache) get(ledger, entry int64) ([]byte, bool) {
	k := key{ledger, entry}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.mu.segs {
		s := &c.mu.segs[(c.mu.cur-i+len(c.mu.segs))%len(c.mu.segs)]
		if v, ok := s.entries[k]; ok {
			return slices.Clone(v), true
		}
	}
	return nil, false
}

// has reports whether the entry is cached.
func (c *readCache) has(ledger, entry int64) bool {
	k := key{ledger, entry}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.mu.segs {
		if _, ok := c.mu.segs[i].entries[k]; ok {
			return true
		}
	}
	return false
}

// put stores payload (it takes ownership: the caller must not modify it).
func (c *readCache) put(ledger, entry int64, payload []byte) {
	if int64(len(payload)) > c.segCap {
		return
	}
	k := key{ledger, entry}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &c.mu.segs[c.mu.cur]
	if s.bytes+int64(len(payload)) > c.segCap {
		c.mu.cur = (c.mu.cur + 1) % len(c.mu.segs)
		s = &c.mu.segs[c.mu.cur]
		clear(s.entries)
		s.bytes = 0
	}
	if old, ok := s.entries[k]; ok {
		s.bytes -= int64(len(old))
	}
	s.entries[k] = payload
	s.bytes += int64(len(payload))
}

// deleteLedger drops every cached entry of ledger.
func (c *readCache) deleteLedger(ledger int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.mu.segs {
		s := &c.mu.segs[i]
		for k, v := range s.entries {
			if k.ledger == ledger {
				s.bytes -= int64(len(v))
				delete(s.entries, k)
			}
		}
	}
}
