package bookie

import (
	"math/bits"
	"sync"
)

// readCache holds entries read from the entry log, including the read-ahead
// that follows a miss. It is a ring of segments: inserts go to the newest
// segment; when it passes its share of the capacity the oldest segment is
// dropped whole. That approximates LRU at O(1) per operation with no
// per-entry list.
//
// Its memory is the read buffers themselves: a miss reads a run of records
// from the entry log into a span buffer (takeBuf), and attach hands that
// buffer to the newest segment with the entries found in it, whose
// payloads alias it: nothing is copied into the cache. A dropped segment's
// buffers go to a free list that the next misses read into, so the read
// path neither allocates nor zeroes memory once warm. Reads copy a payload
// out under the lock (the one copy a read makes), so no reference into a
// buffer outlives the lock.
//
// Safe for concurrent use.
type readCache struct {
	segCap int64
	mu     struct {
		sync.Mutex
		segs      []rcSeg
		cur       int
		free      [][]byte // span buffers to reuse, len 0
		freeBytes int64    // capacity held in free
	}
}

type rcSeg struct {
	entries map[key][]byte // payloads, aliasing bufs
	bufs    [][]byte
	bytes   int64 // capacity of bufs
}

// rcEntry is an entry found in a span buffer, for attach.
type rcEntry struct {
	key
	payload []byte
}

const (
	readCacheSegments = 4
	// minSpanBuf is the smallest span buffer. Larger ones are rounded up
	// to eight steps per power of two, so that freed buffers fit later
	// misses of similar size while wasting at most 1/8.
	minSpanBuf = 16 << 10
)

func newReadCache(size int64) *readCache {
	c := &readCache{segCap: max(size/readCacheSegments, 1)}
	c.mu.segs = make([]rcSeg, readCacheSegments)
	for i := range c.mu.segs {
		c.mu.segs[i].entries = make(map[key][]byte)
	}
	return c
}

// spanCap rounds n up to a span buffer size.
func spanCap(n int) int {
	if n <= minSpanBuf {
		return minSpanBuf
	}
	step := 1 << (bits.Len(uint(n-1)) - 4) // 8 steps between 2^k and 2^(k+1)
	return (n + step - 1) / step * step
}

// takeBuf returns an empty buffer with capacity for at least n bytes (a
// freed one when one fits, else a new one), owned by the caller until it
// passes it to attach or putBuf.
func (c *readCache) takeBuf(n int) []byte {
	want := spanCap(n)
	c.mu.Lock()
	best := -1
	for i, b := range c.mu.free {
		if cap(b) >= want && (best < 0 || cap(b) < cap(c.mu.free[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := c.mu.free[best]
		last := len(c.mu.free) - 1
		c.mu.free[best] = c.mu.free[last]
		c.mu.free[last] = nil
		c.mu.free = c.mu.free[:last]
		c.mu.freeBytes -= int64(cap(b))
		c.mu.Unlock()
		return b
	}
	c.mu.Unlock()
	return make([]byte, 0, want)
}

// putBuf takes back a buffer nothing references.
func (c *readCache) putBuf(b []byte) {
	c.mu.Lock()
	c.freeLocked(b)
	c.mu.Unlock()
}

// freeLocked keeps b for reuse, up to one segment's worth of free
// buffers: smaller free buffers make room for it (span sizes follow the
// entry sizes, so an old small buffer may never fit a miss again).
func (c *readCache) freeLocked(b []byte) {
	size := int64(cap(b))
	if size == 0 || size > c.segCap {
		return
	}
	for i := 0; i < len(c.mu.free) && c.mu.freeBytes+size > c.segCap; {
		if f := c.mu.free[i]; int64(cap(f)) < size {
			c.mu.freeBytes -= int64(cap(f))
			last := len(c.mu.free) - 1
			c.mu.free[i] = c.mu.free[last]
			c.mu.free[last] = nil
			c.mu.free = c.mu.free[:last]
			continue
		}
		i++
	}
	if c.mu.freeBytes+size > c.segCap {
		return
	}
	c.mu.free = append(c.mu.free, b[:0])
	c.mu.freeBytes += size
}

// attach hands buf to the cache with entries, whose payloads alias it. A
// buffer larger than a segment is not cached (it is kept for reuse).
func (c *readCache) attach(buf []byte, entries []rcEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	size := int64(cap(buf))
	if size > c.segCap || len(entries) == 0 {
		c.freeLocked(buf)
		return
	}
	s := &c.mu.segs[c.mu.cur]
	if s.bytes+size > c.segCap {
		c.mu.cur = (c.mu.cur + 1) % len(c.mu.segs)
		s = &c.mu.segs[c.mu.cur]
		clear(s.entries)
		for i, b := range s.bufs {
			c.freeLocked(b)
			s.bufs[i] = nil
		}
		s.bufs = s.bufs[:0]
		s.bytes = 0
	}
	s.bufs = append(s.bufs, buf)
	s.bytes += size
	for _, e := range entries {
		s.entries[e.key] = e.payload
	}
}

// appendGet appends the cached payload to dst.
func (c *readCache) appendGet(dst []byte, ledger, entry int64) ([]byte, bool) {
	k := key{ledger, entry}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.mu.segs {
		s := &c.mu.segs[(c.mu.cur-i+len(c.mu.segs))%len(c.mu.segs)]
		if v, ok := s.entries[k]; ok {
			return append(dst, v...), true
		}
	}
	return dst, false
}

// get returns a copy of the cached payload.
func (c *readCache) get(ledger, entry int64) ([]byte, bool) {
	v, ok := c.appendGet(nil, ledger, entry)
	if ok && v == nil {
		v = []byte{}
	}
	return v, ok
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

// deleteLedger drops every cached entry of ledger (their buffers are
// reused when their segments are dropped).
func (c *readCache) deleteLedger(ledger int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.mu.segs {
		s := &c.mu.segs[i]
		for k := range s.entries {
			if k.ledger == ledger {
				delete(s.entries, k)
			}
		}
	}
}
