package mledger_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/memmeta"
	"github.com/magnetar-mq/magnetar/mledger"
)

// gateMeta blocks the first Put after arm until release is closed,
// closing entered when it blocks.
type gateMeta struct {
	metadata.Store
	mu      sync.Mutex
	armed   bool
	entered chan struct{}
	release chan struct{}
}

func (m *gateMeta) arm() {
	m.mu.Lock()
	m.armed, m.entered, m.release = true, make(chan struct{}), make(chan struct{})
	m.mu.Unlock()
}

func (m *gateMeta) Put(ctx context.Context, path string, value []byte, expected metadata.Version) (metadata.Version, error) {
	m.mu.Lock()
	armed := m.armed
	m.armed = false
	m.mu.Unlock()
	if armed {
		close(m.entered)
		<-m.release
	}
	return m.Store.Put(ctx, path, value, expected)
}

// TestReadDuringCloseDoesNotFence: a read of the current ledger while
// Close flushes the cursors (an idle unload racing a stats reader) goes
// to the write handle being closed, not to a recovery open that would
// fence it: Close then closes the ledger cleanly and records its size.
func TestReadDuringCloseDoesNotFence(t *testing.T) {
	meta := &gateMeta{Store: memmeta.New()}
	e := newEnvWith(t, meta)
	ml := e.open("t", testConfig())
	c, err := ml.OpenCursor(context.Background(), "sub", mledger.InitialEarliest)
	if err != nil {
		t.Fatal(err)
	}
	p0 := add(t, ml, "a", 1)
	p1 := add(t, ml, "b", 1)
	if err := c.Delete(p0); err != nil { // Close persists the moved mark-delete
		t.Fatal(err)
	}
	e.f.Cache().EvictOlderThan(time.Now().Add(time.Hour), 0) // reads go to the ledger
	meta.arm()
	closed := make(chan error, 1)
	go func() { closed <- ml.Close(context.Background()) }()
	<-meta.entered // Close is flushing the cursor
	if en, err := ml.ReadEntry(context.Background(), p1); err != nil || string(en.Data) != "b" {
		t.Errorf("read during close: %q, %v", en.Data, err)
	}
	close(meta.release)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Reopened: both entries and the cursor's position are there.
	ml = e.open("t", testConfig())
	if en, err := ml.ReadEntry(context.Background(), p1); err != nil || string(en.Data) != "b" {
		t.Fatalf("after reopen: %q, %v", en.Data, err)
	}
}
