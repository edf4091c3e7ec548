package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
)

// TestAffinityPlacement: a ledger with a bookie affinity goes to the
// bookies of its primary groups, to the secondary groups' only when the
// primary groups have too few writable bookies, never to a bookie of
// another group; bookies in no group stay eligible (Pulsar's
// IsolatedBookieEnsemblePlacementPolicy).
func TestAffinityPlacement(t *testing.T) {
	lc := newLocalCluster(t, 5, ledger.Options{})
	ri := ledger.RackInfo{
		"g1": {"b0": {Rack: "/r1"}, "b1": {Rack: "/r1"}},
		"g2": {"b2": {Rack: "/r2"}},
		"g3": {"b3": {Rack: "/r3"}},
		// b4: in no group.
	}
	js, _ := json.Marshal(ri)
	if _, err := lc.store.Put(ctxT(t), ledger.RackInfoPath, js, metadata.AnyVersion); err != nil {
		t.Fatal(err)
	}
	ensemble := func(o ledger.CreateOptions) ([]string, error) {
		t.Helper()
		h, err := lc.client.Create(ctxT(t), o)
		if err != nil {
			return nil, err
		}
		defer h.Close(context.Background())
		m, _, err := lc.client.Metadata(ctxT(t), h.ID())
		if err != nil {
			t.Fatal(err)
		}
		bs := slices.Clone(m.Ensembles[0].Bookies)
		slices.Sort(bs)
		return bs, nil
	}
	for range 20 {
		// Primary g1 has both bookies E=2 needs: b0, b1 or the
		// ungrouped b4; never g2's or g3's.
		got, err := ensemble(ledger.CreateOptions{Ensemble: 2, WriteQuorum: 2, AckQuorum: 2,
			Affinity: &ledger.Affinity{Primary: []string{"g1"}, Secondary: []string{"g2"}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range got {
			if b != "b0" && b != "b1" && b != "b4" {
				t.Fatalf("ensemble %v with primary g1 (b0, b1) and enough of it", got)
			}
		}
		// E=4: g1 has 2, so g2 joins; g3 never: exactly b0 b1 b2 b4.
		got, err = ensemble(ledger.CreateOptions{Ensemble: 4, WriteQuorum: 2, AckQuorum: 2,
			Affinity: &ledger.Affinity{Primary: []string{"g1"}, Secondary: []string{"g2"}}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, []string{"b0", "b1", "b2", "b4"}) {
			t.Fatalf("ensemble %v, want b0 b1 b2 b4 (primary g1, secondary g2, ungrouped b4)", got)
		}
	}
	// Without a secondary group there are too few bookies for E=4.
	if _, err := ensemble(ledger.CreateOptions{Ensemble: 4, WriteQuorum: 2, AckQuorum: 2,
		Affinity: &ledger.Affinity{Primary: []string{"g1"}}}); !errors.Is(err, ledger.ErrNotEnoughBookies) {
		t.Fatalf("E=4 on g1 alone: %v, want ErrNotEnoughBookies", err)
	}
	// Without an affinity every bookie is eligible.
	got, err := ensemble(ledger.CreateOptions{Ensemble: 5, WriteQuorum: 2, AckQuorum: 2})
	if err != nil || len(got) != 5 {
		t.Fatalf("no affinity: %v %v", got, err)
	}
	if g := ledger.ParseGroups(" g1, g2,,g1 "); !slices.Equal(g, []string{"g1", "g2"}) {
		t.Fatalf("ParseGroups: %v", g)
	}
}
