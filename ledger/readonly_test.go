package ledger_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/magnetar-mq/magnetar/ledger"
)

// TestStaticBookiesReadOnly: with a fixed bookie set, a bookie that
// Options.ReadOnly reports is not placed; when too few are left, Create
// fails with ErrNotEnoughBookies before allocating a ledger id, and works
// again once the bookie is writable.
func TestStaticBookiesReadOnly(t *testing.T) {
	var b1ro atomic.Bool
	lc := newLocalCluster(t, 2, ledger.Options{
		Bookies:  []string{"b0", "b1"},
		ReadOnly: func(id string) bool { return id == "b1" && b1ro.Load() },
	})
	ctx := ctxT(t)
	opts := ledger.CreateOptions{Ensemble: 2, WriteQuorum: 2, AckQuorum: 2, Password: []byte("pw")}
	h, err := lc.client.Create(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	first := h.ID()
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	b1ro.Store(true)
	if avail, _ := lc.client.WritableBookies(ctx); len(avail) != 1 || avail[0] != "b0" {
		t.Fatalf("WritableBookies = %v, want [b0]", avail)
	}
	for range 5 {
		if _, err := lc.client.Create(ctx, opts); !errors.Is(err, ledger.ErrNotEnoughBookies) {
			t.Fatalf("Create with b1 read-only = %v, want ErrNotEnoughBookies", err)
		}
	}
	b1ro.Store(false)
	h, err = lc.client.Create(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	if h.ID() != first+1 {
		t.Fatalf("ledger id after refusals = %d, want %d (refused creates allocate no id)", h.ID(), first+1)
	}
}
