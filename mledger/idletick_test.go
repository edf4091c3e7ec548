package mledger_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/memmeta"
	"github.com/magnetar-mq/magnetar/mledger"
)

// countingMeta counts the writes that reach the metadata store.
type countingMeta struct {
	metadata.Store
	writes atomic.Int64
}

func (m *countingMeta) Put(ctx context.Context, path string, value []byte, expected metadata.Version) (metadata.Version, error) {
	m.writes.Add(1)
	return m.Store.Put(ctx, path, value, expected)
}

func (m *countingMeta) Delete(ctx context.Context, path string, expected metadata.Version) error {
	m.writes.Add(1)
	return m.Store.Delete(ctx, path, expected)
}

// TestIdleTicksWriteNothing: with many managed ledgers open, the
// factory's periodic work persists only the cursors whose state changed
// since their last persist: once every ack is persisted, further ticks
// write neither metadata nor cursor-ledger entries, however many topics
// are open.
func TestIdleTicksWriteNothing(t *testing.T) {
	meta := &countingMeta{Store: memmeta.New()}
	e := newEnvWith(t, meta)
	const n = 500
	cfg := testConfig()
	cfg.CursorPersistInterval = time.Millisecond
	var cursors []*mledger.Cursor
	for i := range n {
		ml := e.open(fmt.Sprintf("t-%d", i), cfg)
		c, err := ml.OpenCursor(context.Background(), "sub", mledger.InitialEarliest)
		if err != nil {
			t.Fatal(err)
		}
		p := add(t, ml, "a", 1)
		add(t, ml, "b", 1)
		add(t, ml, "c", 1)
		if err := c.Delete(p); err != nil { // the mark-delete moves
			t.Fatal(err)
		}
		cursors = append(cursors, c)
	}
	// One tick persists the n changed cursors.
	e.clock.Advance(time.Second)
	e.f.Tick(context.Background())
	// An individual ack on one cursor only.
	es, err := cursors[7].ReadEntries(context.Background(), 10)
	if err != nil || len(es) != 2 {
		t.Fatalf("read %d entries, %v", len(es), err)
	}
	if err := cursors[7].Delete(es[1].Pos); err != nil {
		t.Fatal(err)
	}
	w0, a0 := meta.writes.Load(), e.store.EntriesAdded()
	e.clock.Advance(time.Second)
	e.f.Tick(context.Background())
	if a := e.store.EntriesAdded() - a0; a != 1 {
		t.Errorf("a tick after one ack added %d cursor entries, want 1", a)
	}
	w1, a1 := meta.writes.Load(), e.store.EntriesAdded()
	for range 10 {
		e.clock.Advance(time.Second)
		e.f.Tick(context.Background())
	}
	if w, a := meta.writes.Load()-w1, e.store.EntriesAdded()-a1; w != 0 || a != 0 {
		t.Errorf("10 idle ticks over %d ledgers wrote %d metadata nodes and %d entries, want none", n, w, a)
	}
	if w1 != w0 {
		t.Errorf("the ack's persist wrote %d metadata nodes (a delta goes to the cursor ledger)", w1-w0)
	}
}
