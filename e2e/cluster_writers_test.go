package e2e

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/ledger"
)

// Two writers on one ledger, on a real fleet (ZooKeeper + three bookie
// processes, E=3, Qw=2, Qa=2): writer A keeps adding while an independent
// client B opens the ledger with recovery. Exactly one survives: A's adds
// fail with ErrFenced from then on, B closes the ledger, a third client
// agrees on lastEntryId, and every entry A saw acknowledged reads back byte
// for byte.
func TestClusterTwoWritersOneLedger(t *testing.T) {
	c := newTestCluster(t)
	for range 3 {
		c.startBookie("")
	}
	a := c.clusterClient()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	h, err := a.lc.Create(ctx, ledger.CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: []byte("pw")})
	if err != nil {
		t.Fatal(err)
	}
	w := startWriter(h)
	w.waitAcks(t, 200)

	b := c.clusterClient() // its own ZooKeeper session and bookie connections
	rb, err := b.lc.Open(ctx, h.ID())
	if err != nil {
		t.Fatalf("open with recovery: %v", err)
	}
	closedAt := rb.LastAddConfirmed()

	// A must now be fenced: its writer stops on the first failed add, and a
	// fresh add fails with ErrFenced too.
	<-w.done
	w.mu.Lock()
	acks, werr := append([]int64(nil), w.acks...), w.err
	w.mu.Unlock()
	if !errors.Is(werr, ledger.ErrFenced) {
		t.Fatalf("writer A stopped with %v, want ErrFenced", werr)
	}
	if _, err := h.Add(ctx, []byte("after fencing")); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("add after fencing = %v, want ErrFenced", err)
	}
	for i, id := range acks {
		if id != int64(i) {
			t.Fatalf("ack %d has id %d: acks reordered", i, id)
		}
	}
	if closedAt < int64(len(acks))-1 {
		t.Fatalf("recovered lastEntryId %d < last acked %d: an acked entry was cut off", closedAt, len(acks)-1)
	}

	// An independent reader agrees on the end and reads every entry.
	r := c.clusterClient()
	m, _, err := r.lc.Metadata(ctx, h.ID())
	if err != nil {
		t.Fatal(err)
	}
	if m.State != ledger.StateClosed || m.LastEntryID != closedAt {
		t.Fatalf("metadata state %v lastEntryId %d, want CLOSED at %d", m.State, m.LastEntryID, closedAt)
	}
	rr, err := r.lc.Open(ctx, h.ID())
	if err != nil {
		t.Fatal(err)
	}
	if rr.LastAddConfirmed() != closedAt {
		t.Fatalf("second opener sees lastEntryId %d, first %d", rr.LastAddConfirmed(), closedAt)
	}
	if closedAt >= 0 {
		es, err := rr.Read(ctx, 0, closedAt)
		if err != nil {
			t.Fatal(err)
		}
		for e, got := range es {
			if want := entryPayload(h.ID(), int64(e)); !bytes.Equal(got, want) {
				t.Fatalf("entry %d = %q, want %q", e, got, want)
			}
		}
	}
	t.Logf("writer A acked %d entries before B's recovery; ledger closed at %d", len(acks), closedAt)
}
