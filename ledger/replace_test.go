package ledger_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
)

// meddlingStore runs before (once) ahead of the first Put, simulating a
// concurrent writer between ReplaceBookie's read and its CAS.
type meddlingStore struct {
	metadata.Store
	before func()
}

func (s *meddlingStore) Put(ctx context.Context, p string, v []byte, exp metadata.Version) (metadata.Version, error) {
	if f := s.before; f != nil {
		s.before = nil
		f()
	}
	return s.Store.Put(ctx, p, v, exp)
}

func TestReplaceBookie(t *testing.T) {
	lc := newLocalCluster(t, 4, ledger.Options{Bookies: []string{"b0", "b1", "b2"}})
	ctx := ctxT(t)
	h, err := lc.client.Create(ctx, ledger.CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: []byte("pw")})
	if err != nil {
		t.Fatal(err)
	}
	addN(t, h, 0, 10)
	ens := h.Metadata().Ensembles[0].Bookies
	whole := ledger.Fragment{First: 0, Last: 9, Pos: 1}
	// An OPEN ledger's last segment is never replaced.
	if _, _, err := lc.client.ReplaceBookie(ctx, h.ID(), whole, ens[1], "b3"); !errors.Is(err, ledger.ErrEnsembleChanged) {
		t.Fatalf("open ledger: %v, want ErrEnsembleChanged", err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		f        ledger.Fragment
		from, to string
	}{
		{"wrong end", ledger.Fragment{First: 0, Last: 8, Pos: 1}, ens[1], "b3"},
		{"no such segment", ledger.Fragment{First: 5, Last: 9, Pos: 1}, ens[1], "b3"},
		{"wrong bookie", whole, ens[2], "b3"},
		{"target already in ensemble", whole, ens[1], ens[0]},
		{"bad position", ledger.Fragment{First: 0, Last: 9, Pos: 3}, ens[1], "b3"},
	} {
		if _, _, err := lc.client.ReplaceBookie(ctx, h.ID(), tc.f, tc.from, tc.to); !errors.Is(err, ledger.ErrEnsembleChanged) {
			t.Fatalf("%s: %v, want ErrEnsembleChanged", tc.name, err)
		}
	}

	// A concurrent metadata write between the read and the CAS: retried,
	// and the other write survives.
	ms := &meddlingStore{Store: lc.store}
	c2, err := ledger.NewClient(ms, lc.res, ledger.Options{Bookies: lc.ids})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	ms.before = func() {
		m, v, err := lc.client.Metadata(ctx, h.ID())
		if err != nil {
			t.Error(err)
			return
		}
		m.Custom = map[string][]byte{"k": []byte("v")}
		if _, err := lc.store.Put(ctx, ledger.LedgerPath(h.ID()), mustJSON(t, m), v); err != nil {
			t.Error(err)
		}
	}
	got, _, err := c2.ReplaceBookie(ctx, h.ID(), whole, ens[1], "b3")
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := lc.client.Metadata(ctx, h.ID())
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(ens)
	want[1] = "b3"
	if !slices.Equal(m.Ensembles[0].Bookies, want) || !slices.Equal(got.Ensembles[0].Bookies, want) || string(m.Custom["k"]) != "v" {
		t.Fatalf("after replace: %v (returned %v), custom %q; want %v and the concurrent write kept", m.Ensembles[0].Bookies, got.Ensembles[0].Bookies, m.Custom["k"], want)
	}
	// Repeating it finds the bookie gone: refused.
	if _, _, err := c2.ReplaceBookie(ctx, h.ID(), whole, ens[1], "b3"); !errors.Is(err, ledger.ErrEnsembleChanged) {
		t.Fatalf("repeat: %v, want ErrEnsembleChanged", err)
	}

	// The ledger deleted between the read and the CAS: refused.
	ms.before = func() {
		if err := lc.client.Delete(ctx, h.ID()); err != nil {
			t.Error(err)
		}
	}
	if _, _, err := c2.ReplaceBookie(ctx, h.ID(), whole, "b3", ens[1]); !errors.Is(err, ledger.ErrNoSuchLedger) {
		t.Fatalf("deleted meanwhile: %v, want ErrNoSuchLedger", err)
	}
	if ok, _ := lc.store.Exists(ctx, ledger.LedgerPath(h.ID())); ok {
		t.Fatal("ReplaceBookie re-created a deleted ledger")
	}
	if _, _, err := c2.ReplaceBookie(ctx, h.ID(), whole, "b3", ens[1]); !errors.Is(err, ledger.ErrNoSuchLedger) {
		t.Fatalf("deleted: %v, want ErrNoSuchLedger", err)
	}
}
