package ledger_test

import (
	"errors"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/ledger"
)

func TestLocalCreateAddReadClose(t *testing.T) {
	lc := newLocalCluster(t, 1, ledger.Options{})
	ctx := ctxT(t)
	h, err := lc.client.Create(ctx, ledger.CreateOptions{Password: []byte("pw"), Custom: map[string][]byte{"topic": []byte("t")}})
	if err != nil {
		t.Fatal(err)
	}
	addN(t, h, 0, 200)
	if got := h.LastAddConfirmed(); got != 199 {
		t.Fatalf("LastAddConfirmed() = %d, want 199", got)
	}
	checkEntries(t, h, h.ID(), 0, 199)
	if _, err := h.Read(ctx, 0, 200); !errors.Is(err, ledger.ErrReadBeyondLAC) {
		t.Fatalf("Read beyond LAC: err %v, want ErrReadBeyondLAC", err)
	}
	length := h.Length()
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Add(ctx, []byte("x")); !errors.Is(err, ledger.ErrClosed) {
		t.Fatalf("Add after Close: %v, want ErrClosed", err)
	}
	m, _, err := lc.client.Metadata(ctx, h.ID())
	if err != nil {
		t.Fatal(err)
	}
	if m.State != ledger.StateClosed || m.LastEntryID != 199 || m.Length != length || string(m.Custom["topic"]) != "t" {
		t.Fatalf("metadata = %+v, want CLOSED at 199 length %d", m, length)
	}
	r, err := lc.client.Open(ctx, h.ID())
	if err != nil {
		t.Fatal(err)
	}
	if r.LastAddConfirmed() != 199 || r.Length() != length {
		t.Fatalf("Open: LAC %d length %d, want 199 %d", r.LastAddConfirmed(), r.Length(), length)
	}
	checkEntries(t, r, h.ID(), 0, 199)
	checkEntries(t, r, h.ID(), 57, 57)

	// A second ledger gets another id; ids list both.
	h2, err := lc.client.Create(ctx, ledger.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h2.ID() == h.ID() {
		t.Fatalf("second ledger id %d equals the first", h2.ID())
	}
	if err := h2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	ids, err := lc.client.Ledgers(ctx)
	if err != nil || len(ids) != 2 {
		t.Fatalf("Ledgers() = %v, %v; want 2 ids", ids, err)
	}
	r2, err := lc.client.Open(ctx, h2.ID())
	if err != nil || r2.LastAddConfirmed() != -1 || r2.Length() != 0 {
		t.Fatalf("Open(empty) = %v, %v", r2, err)
	}
	if err := lc.client.Delete(ctx, h.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := lc.client.Open(ctx, h.ID()); !errors.Is(err, ledger.ErrNoSuchLedger) {
		t.Fatalf("Open(deleted) err %v, want ErrNoSuchLedger", err)
	}
	if err := lc.client.Delete(ctx, h.ID()); err != nil {
		t.Fatalf("Delete(deleted) err %v, want nil", err)
	}
	if _, err := lc.bookies[0].ReadEntry(h.ID(), 0); err == nil {
		t.Fatal("in-process bookie still holds the deleted ledger's entries")
	}
}

// TestLocalRecoveryFencesWriter opens a ledger whose writer is still alive:
// recovery closes it at the writer's last acked entry and the writer's
// further adds fail with ErrFenced.
func TestLocalRecoveryFencesWriter(t *testing.T) {
	lc := newLocalCluster(t, 1, ledger.Options{})
	ctx := ctxT(t)
	h, err := lc.client.Create(ctx, ledger.CreateOptions{Password: []byte("pw")})
	if err != nil {
		t.Fatal(err)
	}
	addN(t, h, 0, 49)
	if _, err := h.Add(ctx, payload(h.ID(), 49, 100)); err != nil {
		t.Fatal(err)
	}

	// Without recovery, a reader sees up to the piggybacked LAC (48: entry
	// 49, sent after 0..48 completed, carries it).
	nr, err := lc.client.OpenNoRecovery(ctx, h.ID())
	if err != nil {
		t.Fatal(err)
	}
	if nr.LastAddConfirmed() != 48 || nr.Closed() {
		t.Fatalf("OpenNoRecovery LAC %d closed %v, want 48 false", nr.LastAddConfirmed(), nr.Closed())
	}
	checkEntries(t, nr, h.ID(), 0, 48)

	r, err := lc.client.Open(ctx, h.ID())
	if err != nil {
		t.Fatal(err)
	}
	if r.LastAddConfirmed() != 49 || r.Length() != h.Length() {
		t.Fatalf("recovered LAC %d length %d, want 49 %d", r.LastAddConfirmed(), r.Length(), h.Length())
	}
	checkEntries(t, r, h.ID(), 0, 49)
	if _, err := h.Add(ctx, []byte("late")); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("add after recovery: %v, want ErrFenced", err)
	}
	if _, err := h.Add(ctx, []byte("later")); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("second add after fencing: %v, want ErrFenced (sticky)", err)
	}
	if err := h.Close(ctx); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("Close of fenced writer: %v, want ErrFenced", err)
	}
	m, _, _ := lc.client.Metadata(ctx, h.ID())
	if m.State != ledger.StateClosed || m.LastEntryID != 49 {
		t.Fatalf("metadata %s at %d, want CLOSED at 49", m.State, m.LastEntryID)
	}
	// Recovery again is a no-op returning the same answer.
	r2, err := lc.client.Open(ctx, h.ID())
	if err != nil || r2.LastAddConfirmed() != 49 {
		t.Fatalf("second Open: %v, %v", r2, err)
	}
}

func TestLocalRecoveryEmptyAndRestart(t *testing.T) {
	lc := newLocalCluster(t, 1, ledger.Options{})
	ctx := ctxT(t)
	h, err := lc.client.Create(ctx, ledger.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Simulate a recovery that crashed after marking: IN_RECOVERY left.
	m, v, _ := lc.client.Metadata(ctx, h.ID())
	m.State = ledger.StateInRecovery
	if _, err := lc.store.Put(ctx, ledger.LedgerPath(h.ID()), mustJSON(t, m), v); err != nil {
		t.Fatal(err)
	}
	r, err := lc.client.Open(ctx, h.ID())
	if err != nil {
		t.Fatal(err)
	}
	if r.LastAddConfirmed() != -1 || r.Length() != 0 {
		t.Fatalf("recovered empty ledger: LAC %d length %d", r.LastAddConfirmed(), r.Length())
	}
	if _, err := h.Add(ctx, []byte("x")); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("add after recovery of empty ledger: %v, want ErrFenced", err)
	}
	h.Close(ctx)
}

func TestCreateOptionsValidation(t *testing.T) {
	lc := newLocalCluster(t, 2, ledger.Options{})
	ctx := ctxT(t)
	for _, o := range []ledger.CreateOptions{
		{Ensemble: 2, WriteQuorum: 3, AckQuorum: 1},
		{Ensemble: 2, WriteQuorum: 1, AckQuorum: 2},
	} {
		if _, err := lc.client.Create(ctx, o); !errors.Is(err, ledger.ErrInvalidOptions) {
			t.Errorf("Create(%+v) err %v, want ErrInvalidOptions", o, err)
		}
	}
	if _, err := lc.client.Create(ctx, ledger.CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2}); !errors.Is(err, ledger.ErrNotEnoughBookies) {
		t.Errorf("Create(E=3) on 2 bookies: %v, want ErrNotEnoughBookies", err)
	}
}

// TestExplicitLAC: with ExplicitLACInterval an idle writer's last entry
// becomes visible to readers opening without recovery.
func TestExplicitLAC(t *testing.T) {
	lc := newLocalCluster(t, 1, ledger.Options{ExplicitLACInterval: 5 * time.Millisecond})
	ctx := ctxT(t)
	h, err := lc.client.Create(ctx, ledger.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for e := range int64(5) {
		if _, err := h.Add(ctx, payload(h.ID(), e, 100)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := lc.client.OpenNoRecovery(ctx, h.ID())
		if err != nil {
			t.Fatal(err)
		}
		if r.LastAddConfirmed() == 4 {
			checkEntries(t, r, h.ID(), 0, 4)
			break
		}
		if r.LastAddConfirmed() != 3 || time.Now().After(deadline) {
			t.Fatalf("OpenNoRecovery LAC %d, want 3 then 4", r.LastAddConfirmed())
		}
		time.Sleep(time.Millisecond) // polling for the writer's next WRITE_LAC
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
