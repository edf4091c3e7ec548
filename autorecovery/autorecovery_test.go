package autorecovery_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/autorecovery"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/protocol/bkproto"
)

// A closed ledger with a copy on a killed bookie is marked by the auditor
// and repaired by the worker: every entry is back to Qw intact copies and
// the mark is gone.
func TestReplicateClosedLedger(t *testing.T) {
	c := newCluster(t, 4)
	h := c.write(3, 2, 2, 200)
	if err := h.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	victim := h.Metadata().Ensembles[0].Bookies[1]
	// A second ledger not on the victim must be left alone.
	var other *ledger.WriteHandle
	for other == nil || contains(other.Metadata(), victim) {
		other = c.write(3, 2, 2, 5)
		if err := other.Close(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	before, otherV, _ := c.lc.Metadata(ctxT(t), other.ID())
	c.kill(victim)
	s := c.start(autorecovery.Options{})
	// The worker counts a repair after it removed the mark, so the count
	// is waited for with it.
	waitFor(t, "repair", func() bool {
		m, _, err := c.lc.Metadata(ctxT(t), h.ID())
		return err == nil && !contains(m, victim) && len(marks(t, c.store)) == 0 && s.Stats().Repaired >= 1
	})
	c.checkCopies(h.ID(), 199, victim)
	if st := s.Stats(); !st.Leader {
		t.Fatalf("stats %+v, want leader", st)
	}
	after, v, _ := c.lc.Metadata(ctxT(t), other.ID())
	if v != otherV || !slices.Equal(after.Ensembles[0].Bookies, before.Ensembles[0].Bookies) {
		t.Fatalf("unaffected ledger changed: %+v -> %+v", before, after)
	}
	r, err := c.lc.Open(ctxT(t), h.ID())
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Read(ctxT(t), 0, 199)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range got {
		if string(p) != string(payload(h.ID(), int64(i))) {
			t.Fatalf("entry %d = %q", i, p)
		}
	}
}

// An open ledger: the writer replaces the dead bookie from LAC+1 on; the
// worker repairs the earlier segment while the ledger stays open and
// writable, and leaves the writer's segment alone.
func TestOpenLedgerEarlierSegment(t *testing.T) {
	c := newCluster(t, 5)
	h := c.write(3, 2, 2, 50)
	victim := h.Metadata().Ensembles[0].Bookies[0]
	c.kill(victim)
	c.add(h, 50) // ensemble change at the first failed add
	if m := h.Metadata(); len(m.Ensembles) != 2 || slices.Contains(m.Last().Bookies, victim) {
		t.Fatalf("ensembles after the failure: %+v", m.Ensembles)
	}
	c.start(autorecovery.Options{})
	waitFor(t, "repair of the first segment", func() bool {
		m, _, err := c.lc.Metadata(ctxT(t), h.ID())
		return err == nil && !contains(m, victim) && len(marks(t, c.store)) == 0
	})
	m, _, _ := c.lc.Metadata(ctxT(t), h.ID())
	if m.State != ledger.StateOpen {
		t.Fatalf("state %s, want OPEN (no fencing needed)", m.State)
	}
	c.add(h, 20) // the writer goes on: its CAS merges with ours
	if err := h.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	c.checkCopies(h.ID(), 119, victim)
}

// An open ledger whose last ensemble lost a bookie and that sees no adds
// is fenced and recovered once the grace period has passed, then
// repaired; the writer is fenced.
func TestOpenLedgerFencedAfterGrace(t *testing.T) {
	c := newCluster(t, 4)
	h := c.write(3, 2, 2, 30)
	victim := h.Metadata().Ensembles[0].Bookies[2]
	c.kill(victim)
	c.start(autorecovery.Options{OpenLedgerGrace: 100 * time.Millisecond})
	waitFor(t, "recovery and repair", func() bool {
		m, _, err := c.lc.Metadata(ctxT(t), h.ID())
		return err == nil && m.State == ledger.StateClosed && !contains(m, victim) && len(marks(t, c.store)) == 0
	})
	m, _, _ := c.lc.Metadata(ctxT(t), h.ID())
	if m.LastEntryID != 29 {
		t.Fatalf("recovered lastEntryId %d, want 29", m.LastEntryID)
	}
	c.checkCopies(h.ID(), 29, victim)
	if _, err := h.Add(ctxT(t), []byte("late")); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("writer add after fencing: %v, want ErrFenced", err)
	}
}

// Within the grace period the open ledger's last segment is not touched:
// ReplicateLedger reports ErrOpenLedger and the ledger stays OPEN.
func TestOpenLedgerWithinGrace(t *testing.T) {
	c := newCluster(t, 4)
	h := c.write(3, 2, 2, 10)
	victim := h.Metadata().Ensembles[0].Bookies[0]
	c.kill(victim)
	r, err := autorecovery.NewReplicator(c.store, c.lc, c.res, autorecovery.Options{OpenLedgerGrace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.ReplicateLedger(ctxT(t), h.ID(), time.Now(), nil)
	if !errors.Is(err, autorecovery.ErrOpenLedger) || !slices.Equal(res.Remaining, []string{victim}) {
		t.Fatalf("ReplicateLedger = %+v, %v; want ErrOpenLedger with %s remaining", res, err, victim)
	}
	if m, _, _ := c.lc.Metadata(ctxT(t), h.ID()); m.State != ledger.StateOpen {
		t.Fatalf("state %s, want OPEN", m.State)
	}
	c.add(h, 10) // the writer is not fenced
}

// Marks of deleted ledgers and of ledgers whose bookie came back are
// dropped without copying anything.
func TestStaleMarksDropped(t *testing.T) {
	c := newCluster(t, 3)
	h := c.write(3, 2, 2, 10)
	if err := h.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	_, v0, _ := c.lc.Metadata(ctxT(t), h.ID())
	ctx := ctxT(t)
	if err := autorecovery.MarkUnderReplicated(ctx, c.store, h.ID(), []string{c.ids[0]}); err != nil {
		t.Fatal(err)
	}
	if err := autorecovery.MarkUnderReplicated(ctx, c.store, 987654, []string{"gone:1"}); err != nil {
		t.Fatal(err)
	}
	if got := len(marks(t, c.store)); got != 2 {
		t.Fatalf("%d marks, want 2", got)
	}
	s := c.start(autorecovery.Options{DisableAuditor: true})
	waitFor(t, "marks dropped", func() bool { return len(marks(t, c.store)) == 0 && s.Stats().Repaired == 2 })
	if _, v, _ := c.lc.Metadata(ctxT(t), h.ID()); v != v0 {
		t.Fatalf("metadata version %d -> %d: a healthy ledger was rewritten", v0, v)
	}
	if st := s.Stats(); st.Leader {
		t.Fatalf("stats %+v", st)
	}
}

// A single-replica ledger on a dead bookie cannot be repaired: the error
// says so and the mark stays (the worker backs off to its maximum).
func TestEntryLost(t *testing.T) {
	c := newCluster(t, 2)
	h := c.write(1, 1, 1, 3)
	if err := h.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	c.kill(h.Metadata().Ensembles[0].Bookies[0])
	r, err := autorecovery.NewReplicator(c.store, c.lc, c.res, autorecovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReplicateLedger(ctxT(t), h.ID(), time.Now(), nil); !errors.Is(err, autorecovery.ErrEntryLost) {
		t.Fatalf("ReplicateLedger: %v, want ErrEntryLost", err)
	}
}

// One auditor at a time; when it goes, another candidate takes over.
func TestAuditorElection(t *testing.T) {
	c := newCluster(t, 3)
	a := c.start(autorecovery.Options{ID: "a", DisableWorker: true})
	waitFor(t, "a elected", func() bool { return a.Stats().Leader })
	b := c.start(autorecovery.Options{ID: "b", DisableWorker: true})
	if b.Stats().Leader {
		t.Fatal("two auditors")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b elected", func() bool { return b.Stats().Leader })
	if a.Stats().Leader {
		t.Fatal("closed auditor still leader")
	}
}

// With a LostBookieDelay the auditor does not mark before it has passed.
func TestLostBookieDelay(t *testing.T) {
	c := newCluster(t, 4)
	h := c.write(3, 2, 2, 10)
	if err := h.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	c.kill(h.Metadata().Ensembles[0].Bookies[0])
	const delay = 300 * time.Millisecond
	start := time.Now()
	s := c.start(autorecovery.Options{LostBookieDelay: delay, DisableWorker: true})
	waitFor(t, "first audit", func() bool { return s.Stats().Audits >= 1 })
	if time.Since(start) < delay && len(marks(t, c.store)) != 0 {
		t.Fatal("ledger marked before the delay")
	}
	waitFor(t, "mark after the delay", func() bool { return len(marks(t, c.store)) == 1 })
	if time.Since(start) < delay {
		t.Fatalf("marked after %v, before the %v delay", time.Since(start), delay)
	}
}

// Decommissioning a live bookie moves its copies off it (reading from it
// too), after which the request and its cookie can be removed.
func TestDecommission(t *testing.T) {
	c := newCluster(t, 3)
	h := c.write(2, 1, 1, 40) // single copies: only the bookie itself has them
	if err := h.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	victim := h.Metadata().Ensembles[0].Bookies[0]
	ctx := ctxT(t)
	if err := autorecovery.RequestDecommission(ctx, c.store, victim); err != nil {
		t.Fatal(err)
	}
	c.start(autorecovery.Options{})
	waitFor(t, "decommission", func() bool {
		m, _, err := c.lc.Metadata(ctxT(t), h.ID())
		return err == nil && !contains(m, victim) && len(marks(t, c.store)) == 0
	})
	if err := autorecovery.FinishDecommission(ctx, c.store, victim); err != nil {
		t.Fatal(err)
	}
	c.checkCopies(h.ID(), 39, victim)
}

// ledger.MasterKey (which the replicator uses) is the key the client wrote with: a
// recovery add with it to a bookie that already holds the ledger (written
// by the client) is accepted, and one with another key is refused.
func TestMasterKeyMatchesLedger(t *testing.T) {
	c := newCluster(t, 1)
	h := c.write(1, 1, 1, 1)
	frame := bkproto.AppendEntry(nil, bkproto.EntryHeader{LedgerID: h.ID(), EntryID: 1, LAC: 0}, []byte("x"))
	add := func(key []byte) error {
		done := make(chan error, 1)
		c.clients[0].AddEntry(h.ID(), 1, key, frame, true, func(err error) { done <- err })
		return <-done
	}
	if err := add(ledger.MasterKey([]byte("wrong"))); !errors.Is(err, bkproto.ErrUnauthorized) {
		t.Fatalf("add with another key: %v, want ErrUnauthorized", err)
	}
	if err := add(ledger.MasterKey([]byte("pw"))); err != nil {
		t.Fatalf("add with the derived key: %v", err)
	}
}

// deafStore drops every watch: the auditor must still find a lost bookie
// through its periodic registration check.
type deafStore struct {
	*embedded.Store
}

func (deafStore) Watch(context.Context, string, func(metadata.Event)) error { return nil }

func TestPeriodicBookieCheckWithoutWatches(t *testing.T) {
	c := newCluster(t, 4)
	h := c.write(3, 2, 2, 20)
	if err := h.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	s, err := autorecovery.Start(deafStore{c.openStore()}, c.lc, c.res, autorecovery.Options{
		BookieCheckInterval: 20 * time.Millisecond, PollInterval: 20 * time.Millisecond, MinBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	waitFor(t, "first audit", func() bool { return s.Stats().Audits >= 1 })
	victim := h.Metadata().Ensembles[0].Bookies[0]
	c.kill(victim)
	waitFor(t, "repair without watch events", func() bool {
		m, _, err := c.lc.Metadata(ctxT(t), h.ID())
		return err == nil && !contains(m, victim) && len(marks(t, c.store)) == 0
	})
	c.checkCopies(h.ID(), 19, victim)
}
