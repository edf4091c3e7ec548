package mledger_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/mledger"
)

// addN adds n one-byte entries as fast as possible.
func addN(t testing.TB, ml *mledger.ManagedLedger, n int) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Add(n)
	data := []byte{'x'}
	for range n {
		ml.AddEntry(data, 1, func(_ mledger.Position, err error) {
			if err != nil {
				t.Error(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
}

// TestMillionScatteredAcksPersistCompactly acks every other entry of 2M
// entries (1M scattered acks, 1M holes), persists, then measures the bytes
// written per further update: each must be a small delta, not a rewrite of
// the state. The state then survives a restart exactly. (Under -race the
// scale is 1/10 to keep CI time modest.)
func TestMillionScatteredAcksPersistCompactly(t *testing.T) {
	entries := 2_000_000
	if raceEnabled {
		entries = 200_000
	}
	e := newEnv(t)
	e.opts.CacheSize = 1 << 20
	_ = e.f.Close()
	e.f = e.newFactory()
	cfg := mledger.Config{MinLedgerRolloverTime: -1, MaxEntriesPerLedger: 500_000}
	ml := e.open("t/million", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, _ := ml.OpenCursor(ctx, "s", mledger.InitialEarliest)
	start := time.Now()
	addN(t, ml, entries)
	t.Logf("added %d entries in %v", entries, time.Since(start))
	ls := ml.Stats().Ledgers
	var pos []mledger.Position
	for _, l := range ls {
		for i := int64(1); i < l.Entries; i += 2 {
			pos = append(pos, mledger.Position{LedgerID: l.LedgerID, EntryID: i})
		}
	}
	start = time.Now()
	if err := c.Delete(pos...); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	t.Logf("%d scattered acks applied and persisted in %v: snapshot %d bytes", len(pos), time.Since(start), st.PersistedSnapshotBytes)
	if st.CursorLedger < 0 || st.PersistedSnapshotBytes == 0 {
		t.Fatalf("state not in a cursor ledger: %+v", st)
	}
	if st.IndividuallyDeletedCount != int64(len(pos)) {
		t.Fatalf("IndividuallyDeletedCount = %d, want %d", st.IndividuallyDeletedCount, len(pos))
	}
	// Bitmaps: about 1 bit per entry in span (≈ 250 KB for 2M entries).
	if limit := int64(entries)/8 + 16384; st.PersistedSnapshotBytes > limit {
		t.Fatalf("snapshot %d bytes, want <= %d", st.PersistedSnapshotBytes, limit)
	}
	// Now 1000 updates, each one ack (filling holes from the far end so
	// mark-delete does not move) followed by a persist.
	const updates = 1000
	var maxBytes, sum int64
	for i := range updates {
		p := pos[len(pos)-1-i]
		hole := mledger.Position{LedgerID: p.LedgerID, EntryID: p.EntryID - 1}
		b0 := e.store.BytesAdded()
		m0 := metaBytes(e)
		_ = c.Delete(hole)
		if err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		n := e.store.BytesAdded() - b0 + metaBytes(e) - m0
		sum += n
		maxBytes = max(maxBytes, n)
	}
	t.Logf("bytes written per single-ack update: avg %.1f, max %d", float64(sum)/updates, maxBytes)
	if maxBytes > 64 {
		t.Fatalf("an update wrote %d bytes: state is being rewritten", maxBytes)
	}
	wantAcked := int64(len(pos) + updates)
	e.restart()
	ml = e.open("t/million", cfg)
	c = ml.Cursor("s")
	if got := c.Stats().IndividuallyDeletedCount; got != wantAcked {
		t.Fatalf("after restart %d acked entries, want %d", got, wantAcked)
	}
	if be := c.NumberOfEntriesInBacklog(); be != int64(entries)-wantAcked {
		t.Fatalf("after restart backlog %d, want %d", be, int64(entries)-wantAcked)
	}
}

func metaBytes(e *env) int64 {
	if m, ok := e.meta.(interface{ PutBytes() int64 }); ok {
		return m.PutBytes()
	}
	return 0
}
