package mledger_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
)

func TestEntryCacheEviction(t *testing.T) {
	e := newEnv(t)
	e.opts.CacheSize = 1000 // 10 entries of 100 bytes
	_ = e.f.Close()
	e.f = e.newFactory()
	cache := e.f.Cache()
	ml := e.open("t/cache", testConfig())
	c, _ := ml.OpenCursor(ctxT(t), "s", mledger.InitialEarliest)
	var pos []mledger.Position
	for i := range 12 {
		pos = append(pos, add(t, ml, fmt.Sprintf("%0100d", i), 1))
	}
	// Over budget at the 11th insert: evicted down to 0.9 × 1000 (two
	// oldest go), then the 12th fits exactly.
	if st := cache.Stats(); st.Size != 1000 || st.Entries != 10 || st.Evictions != 2 {
		t.Fatalf("cache after 12 inserts = %+v, want 10 entries, 2 evictions", st)
	}
	// The oldest entries miss the cache and are read from the ledger store.
	es := readAll(t, c)
	if len(es) != 12 || e.store.EntriesRead() != 2 {
		t.Fatalf("read %d entries, %d from the ledger store; want 12 and 2", len(es), e.store.EntriesRead())
	}
	for i, en := range es {
		if want := fmt.Sprintf("%0100d", i); string(en.Data) != want {
			t.Fatalf("entry %d = %q", i, en.Data)
		}
	}
	// Entries at or before the slowest cursor's mark-delete are evicted.
	_ = c.MarkDelete(pos[7])
	e.f.Tick(ctxT(t))
	if st := cache.Stats(); st.Entries != 4 {
		t.Fatalf("after mark-delete %v and Tick: %d entries cached, want 4", pos[7], st.Entries)
	}
	// Age: everything older than CacheEvictionAge (1s) goes.
	e.clock.Advance(2 * time.Second)
	e.f.Tick(ctxT(t))
	if st := cache.Stats(); st.Entries != 0 || st.Size != 0 {
		t.Fatalf("after age eviction: %+v", st)
	}
	c.Rewind()
	if got := len(readAll(t, c)); got != 4 {
		t.Fatalf("re-read %d entries after eviction, want 4", got)
	}
}
