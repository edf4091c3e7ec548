package bookie

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/entrylog"
)

// putHalf puts p into h (chunks of 64 KiB).
func putHalf(h *cacheHalf, k key, p []byte) {
	hdr := recordHeader(k.ledger, k.entry, p, entrylog.PayloadCRC(p))
	h.put(k, &hdr, p, 1<<16)
}

// putTest is put with the payload's CRC computed here.
func (c *writeCache) putTest(ledger, entry int64, p []byte, wait time.Duration, done <-chan struct{}) error {
	return c.put(ledger, entry, p, entrylog.PayloadCRC(p), wait, done)
}

func TestWriteCacheSwapSortRelease(t *testing.T) {
	c := newWriteCache(1 << 20)
	for _, k := range []key{{3, 1}, {1, 2}, {3, 0}, {1, 1}, {2, 5}} {
		if err := c.putTest(k.ledger, k.entry, payloadFor(k.ledger, k.entry, 32), 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Replace (idempotent re-add) keeps one copy.
	if err := c.putTest(1, 1, payloadFor(1, 1, 32), 0, nil); err != nil {
		t.Fatal(err)
	}
	if a, _ := c.size(); a != 5*32 {
		t.Fatalf("active size = %d, want %d", a, 5*32)
	}
	marked := false
	if !c.swap(func() { marked = true }) || !marked {
		t.Fatal("swap of a non-empty half failed or did not mark")
	}
	if c.swap(nil) {
		t.Fatal("second swap with a frozen half pending succeeded")
	}
	// Frozen entries stay readable; new adds go to the active half.
	if v, ok := c.get(3, 1); !ok || !bytes.Equal(v, payloadFor(3, 1, 32)) {
		t.Fatal("frozen entry not readable")
	}
	if err := c.putTest(3, 2, payloadFor(3, 2, 32), 0, nil); err != nil {
		t.Fatal(err)
	}
	if last, ok := c.lastEntry(3); !ok || last != 2 {
		t.Fatalf("lastEntry(3) = %d, %v, want 2", last, ok)
	}
	got := c.frozenSorted(nil)
	var keys []key
	for _, e := range got {
		keys = append(keys, e.key)
		// Each entry is cached as its entry-log record.
		rest, l, en, p, err := entrylog.DecodeRecord(sealRecord(e.rec))
		if err != nil || len(rest) != 0 || l != e.ledger || en != e.entry || !bytes.Equal(p, payloadFor(l, en, 32)) {
			t.Fatalf("frozen %v: record %d:%d (%d bytes left), %v", e.key, l, en, len(rest), err)
		}
	}
	want := []key{{1, 1}, {1, 2}, {2, 5}, {3, 0}, {3, 1}}
	if len(keys) != len(want) {
		t.Fatalf("frozen = %v, want %v", keys, want)
	}
	for i := range want {
		if keys[i] != want[i] {
			t.Fatalf("frozen = %v, want %v", keys, want)
		}
	}
	c.release()
	if _, ok := c.get(3, 1); ok {
		t.Fatal("released entry still cached")
	}
	if v, ok := c.get(3, 2); !ok || !bytes.Equal(v, payloadFor(3, 2, 32)) {
		t.Fatal("active entry lost by release")
	}
	c.deleteLedger(3)
	if _, ok := c.get(3, 2); ok {
		t.Fatal("deleted ledger still cached")
	}
}

func TestWriteCacheThrottle(t *testing.T) {
	c := newWriteCache(128 << 10) // two 64 KiB halves
	p := make([]byte, 16<<10)
	for i := range 4 {
		if err := c.putTest(1, int64(i), p, time.Second, nil); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-c.needFlush:
	default:
		t.Fatal("full active half did not ask for a flush")
	}
	if !c.swap(nil) {
		t.Fatal("swap failed")
	}
	for i := 4; i < 8; i++ {
		if err := c.putTest(1, int64(i), p, time.Second, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Both halves full: a bounded put times out.
	if err := c.putTest(1, 8, p, 20*time.Millisecond, nil); !errors.Is(err, ErrTooManyRequests) {
		t.Fatalf("put with both halves full = %v, want ErrTooManyRequests", err)
	}
	// A waiting put proceeds once the flush releases and the next swap
	// makes room.
	done := make(chan error, 1)
	go func() { done <- c.putTest(1, 8, p, 0, nil) }()
	c.release()
	if !c.swap(nil) {
		t.Fatal("swap after release failed")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Closing wakes a waiter with ErrClosed.
	for i := 9; i < 12; i++ {
		if err := c.putTest(1, int64(i), p, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	closing := make(chan struct{})
	go func() { done <- c.putTest(1, 12, p, 0, closing) }()
	close(closing)
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("put after closing = %v, want ErrClosed", err)
	}
	// An entry bigger than a half is accepted into an empty half.
	c2 := newWriteCache(128 << 10)
	if err := c2.putTest(1, 0, make([]byte, 100<<10), time.Millisecond, nil); err != nil {
		t.Fatalf("oversized entry into an empty cache = %v", err)
	}
}

func TestReadCacheEviction(t *testing.T) {
	c := newReadCache(4 * 64 << 10) // four 64 KiB segments
	// Spans of 16 KiB (the smallest buffer) holding ten entries each:
	// four spans per segment.
	attachSpan := func(first int64) {
		buf := c.takeBuf(1000)
		if cap(buf) != minSpanBuf {
			t.Fatalf("takeBuf(1000) has capacity %d, want %d", cap(buf), minSpanBuf)
		}
		var es []rcEntry
		for e := first; e < first+10; e++ {
			start := len(buf)
			buf = append(buf, payloadFor(1, e, 100)...)
			es = append(es, rcEntry{key{1, e}, buf[start:]})
		}
		c.attach(buf, es)
	}
	for e := int64(0); e < 200; e += 10 {
		attachSpan(e)
	}
	// 16 spans fit: the ring holds entries 40..199.
	if v, ok := c.get(1, 199); !ok || !bytes.Equal(v, payloadFor(1, 199, 100)) {
		t.Fatal("newest entry evicted")
	}
	if c.has(1, 39) || !c.has(1, 40) {
		t.Fatal("eviction did not drop exactly the oldest segment")
	}
	// A copy out, appended to the caller's buffer.
	if v, ok := c.appendGet([]byte("x"), 1, 150); !ok || !bytes.Equal(v[1:], payloadFor(1, 150, 100)) || v[0] != 'x' {
		t.Fatal("appendGet did not append the payload")
	}
	// The dropped segment's buffers are reused, not reallocated.
	c.mu.Lock()
	free := len(c.mu.free)
	c.mu.Unlock()
	if free == 0 {
		t.Fatal("no buffer kept for reuse after a segment was dropped")
	}
	c.deleteLedger(1)
	if c.has(1, 199) {
		t.Fatal("deleteLedger left an entry")
	}
	big := c.takeBuf(100 << 10) // larger than a segment: not cached
	big = append(big, 1)
	c.attach(big, []rcEntry{{key{1, 0}, big[:1]}})
	if c.has(1, 0) {
		t.Fatal("oversized buffer cached")
	}
	for _, n := range []int{1, minSpanBuf, minSpanBuf + 1, 100 << 10, 4 << 20, 4<<20 + 1} {
		if got := spanCap(n); got < n || got > n+n/8+1 && n > minSpanBuf {
			t.Fatalf("spanCap(%d) = %d", n, got)
		}
	}
}

func TestDiskFullDecision(t *testing.T) {
	u := func(pct uint64) dirUsage { return dirUsage{dir: "/d", total: 100, free: 100 - pct} }
	tests := []struct {
		name    string
		wasFull bool
		usages  []dirUsage
		want    bool
	}{
		{"below", false, []dirUsage{u(50)}, false},
		{"above", false, []dirUsage{u(96)}, true},
		{"any dir above", false, []dirUsage{u(10), u(97)}, true},
		{"between, was writable", false, []dirUsage{u(93)}, false},
		{"between, was full", true, []dirUsage{u(93)}, true},
		{"below lwm, was full", true, []dirUsage{u(89)}, false},
		{"one dir still above lwm", true, []dirUsage{u(10), u(91)}, true},
		{"no dirs", true, nil, true},
	}
	for _, tt := range tests {
		if got, msg := diskFull(tt.wasFull, tt.usages, 0.95, 0.90); got != tt.want {
			t.Errorf("%s: diskFull = %v (%s), want %v", tt.name, got, msg, tt.want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Options)
		ok   bool
	}{
		{"defaults", func(*Options) {}, true},
		{"no journal dir", func(o *Options) { o.JournalDir = "" }, false},
		{"no ledger dirs", func(o *Options) { o.LedgerDirs = nil }, false},
		{"journal dir as ledger dir", func(o *Options) { o.LedgerDirs = []string{"/j"} }, false},
		{"repeated ledger dir", func(o *Options) { o.LedgerDirs = []string{"/a", "/a"} }, false},
		{"lwm above threshold", func(o *Options) { o.DiskUsageLWM = 0.97 }, false},
		{"threshold above 1", func(o *Options) { o.DiskUsageThreshold = 1.5 }, false},
		{"tiny write cache", func(o *Options) { o.WriteCacheSize = 1000 }, false},
	}
	for _, tt := range tests {
		o := Options{JournalDir: "/j", LedgerDirs: []string{"/l"}}
		o.EnsureDefaults()
		tt.mod(&o)
		if err := o.Validate(); (err == nil) != tt.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
	o := Options{JournalDir: "/j", LedgerDirs: []string{"/l"}}
	o.EnsureDefaults()
	if o.DiskUsageThreshold != 0.95 || o.DiskUsageLWM != 0.90 {
		t.Fatalf("defaults: threshold %v lwm %v, want 0.95 / 0.90", o.DiskUsageThreshold, o.DiskUsageLWM)
	}
}

func TestWriteCacheOutOfOrder(t *testing.T) {
	c := newWriteCache(1 << 20)
	order := []int64{10, 5, 5000, 11, 10, 7, 13, -0}
	for _, e := range order {
		if err := c.putTest(4, e, payloadFor(4, e, 8), 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	c.putTest(2, 3, payloadFor(2, 3, 8), 0, nil)
	want := []key{{2, 3}, {4, 0}, {4, 5}, {4, 7}, {4, 10}, {4, 11}, {4, 13}, {4, 5000}}
	for _, k := range want {
		if v, ok := c.get(k.ledger, k.entry); !ok || !bytes.Equal(v, payloadFor(k.ledger, k.entry, 8)) {
			t.Fatalf("get(%v) = %v", k, ok)
		}
	}
	if _, ok := c.get(4, 12); ok {
		t.Fatal("get of a gap found an entry")
	}
	if last, _ := c.lastEntry(4); last != 5000 {
		t.Fatalf("lastEntry(4) = %d, want 5000", last)
	}
	if a, _ := c.size(); a != int64(8*len(want)) {
		t.Fatalf("size = %d, want %d (the replaced entry counted once)", a, 8*len(want))
	}
	c.swap(nil)
	got := c.frozenSorted(nil)
	if len(got) != len(want) {
		t.Fatalf("frozen has %d entries, want %d", len(got), len(want))
	}
	for i, e := range got {
		if e.key != want[i] {
			t.Fatalf("frozen[%d] = %v, want %v", i, e.key, want[i])
		}
	}
	c.deleteLedger(4)
	if _, ok := c.get(4, 5000); ok {
		t.Fatal("deleted ledger's sparse entry still cached")
	}
	if _, f := c.size(); f != 8 {
		t.Fatalf("frozen size after delete = %d, want 8", f)
	}
	// A released half is reused: runs come back empty.
	c.release()
	c.putTest(4, 100, payloadFor(4, 100, 8), 0, nil)
	if _, ok := c.get(4, 5); ok {
		t.Fatal("reused run kept an old entry")
	}
}

// TestCacheHalfPagedRuns: runs longer than a page, with gaps and
// overwrites, read back, iterate in order and count bytes right, also
// after a reset reuses the pages.
func TestCacheHalfPagedRuns(t *testing.T) {
	h := newCacheHalf()
	for round := 0; round < 2; round++ {
		want := map[key][]byte{}
		for e := int64(0); e < 3*runPage+7; e++ {
			if e%5 == 3 {
				continue // gaps
			}
			p := []byte(fmt.Sprintf("r%d-e%d", round, e))
			putHalf(h, key{9, 100 + e}, p)
			want[key{9, 100 + e}] = p
		}
		for e := int64(0); e < 3*runPage; e += 97 { // overwrite some
			if _, ok := want[key{9, 100 + e}]; ok {
				p := []byte(fmt.Sprintf("over-%d", e))
				putHalf(h, key{9, 100 + e}, p)
				want[key{9, 100 + e}] = p
			}
		}
		var total int64
		for k, p := range want {
			total += int64(len(p))
			if got, ok := h.get(k); !ok || string(got) != string(p) {
				t.Fatalf("round %d: get %v = %q, %v; want %q", round, k, got, ok, p)
			}
		}
		if _, ok := h.get(key{9, 103}); ok {
			t.Fatal("gap slot reads back")
		}
		if h.entries != len(want) || h.bytes != total {
			t.Fatalf("round %d: %d entries %d bytes, want %d, %d", round, h.entries, h.bytes, len(want), total)
		}
		prev := int64(-1)
		n := 0
		h.each(func(k key, rec []byte) error {
			_, l, e, p, err := entrylog.DecodeRecord(sealRecord(rec))
			if err != nil || l != k.ledger || e != k.entry {
				t.Fatalf("each: %v holds record %d:%d, %v", k, l, e, err)
			}
			if k.entry <= prev || string(want[k]) != string(p) {
				t.Fatalf("each: %v after %d", k, prev)
			}
			prev = k.entry
			n++
			return nil
		})
		if n != len(want) {
			t.Fatalf("each yielded %d, want %d", n, len(want))
		}
		h.reset()
	}
}

// TestReadCacheFreeListMakesRoomForLargerBuffers: freed buffers are kept
// up to a segment's worth; a larger buffer displaces smaller free ones
// (the span size follows the entry sizes), so misses of the new size are
// served without allocating.
func TestReadCacheFreeListMakesRoomForLargerBuffers(t *testing.T) {
	c := newReadCache(4 * 256 << 10) // 256 KiB segments
	small := c.takeBuf(20 << 10)
	c.putBuf(small)
	for range 3 {
		c.putBuf(c.takeBuf(100 << 10)) // reuses, then keeps
	}
	c.mu.Lock()
	n, bytes := len(c.mu.free), c.mu.freeBytes
	c.mu.Unlock()
	if n != 2 || bytes != int64(cap(small))+int64(spanCap(100<<10)) {
		t.Fatalf("free list: %d buffers, %d bytes; want the small one and one of %d", n, bytes, spanCap(100<<10))
	}
	// Two large buffers freed: the small one makes room for the second.
	b1, b2 := c.takeBuf(120<<10), c.takeBuf(120<<10)
	c.putBuf(b1)
	c.putBuf(b2)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.mu.free {
		if cap(f) < 100<<10 {
			t.Fatalf("small buffer kept over a larger one: free caps %d bytes in %d buffers", c.mu.freeBytes, len(c.mu.free))
		}
	}
	if c.mu.freeBytes > c.segCap {
		t.Fatalf("free list holds %d bytes, more than a segment (%d)", c.mu.freeBytes, c.segCap)
	}
}

// TestWriteCacheReleaseWaitsForJournalRefs: a half whose memory a journal
// write still reads (putRef with ref) is not reset and reused by release
// until the reference is dropped.
func TestWriteCacheReleaseWaitsForJournalRefs(t *testing.T) {
	c := newWriteCache(1 << 20)
	p := payloadFor(1, 0, 4096)
	cached, half, err := c.putRef(1, 0, p, entrylog.PayloadCRC(p), true, 0, nil)
	if err != nil || !bytes.Equal(cached, p) {
		t.Fatalf("putRef = %d bytes, %v", len(cached), err)
	}
	if !c.swap(nil) {
		t.Fatal("swap failed")
	}
	released := make(chan struct{})
	go func() {
		c.release()
		close(released)
	}()
	// Not released while referenced: the frozen half and the bytes the
	// journal reads stay as they were.
	select {
	case <-released:
		t.Fatal("release returned while the journal still referenced the half")
	case <-time.After(50 * time.Millisecond):
	}
	if !c.hasFrozen() || !bytes.Equal(cached, p) {
		t.Fatal("referenced half reset")
	}
	half.refs.Done()
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("release did not return after the reference was dropped")
	}
	if c.hasFrozen() {
		t.Fatal("half still frozen after release")
	}
}
