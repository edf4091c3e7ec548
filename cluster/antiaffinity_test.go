package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/bundle"
	"github.com/magnetar-mq/magnetar/internal/zktest"
)

// TestAntiAffinityFilterSpreadsGroup: brokers holding bundles of more
// peer namespaces are dropped; the own namespace's bundles and pending
// placements count; the filter never empties the candidates.
func TestAntiAffinityFilterSpreadsGroup(t *testing.T) {
	const r = "0x00000000_0x40000000"
	reports := func() map[string]LocalBrokerData {
		return map[string]LocalBrokerData{
			"b1": {Bundles: []string{"t/a/" + r, "t/other/" + r}},
			"b2": {Bundles: []string{"t/b/" + r, "t/c/" + r}},
			"b3": {Bundles: []string{"t/self/" + r}},
		}
	}
	keys := func(m map[string]LocalBrokerData) []string { return slices.Sorted(maps.Keys(m)) }

	got := reports()
	antiAffinityFilter("t/self", []string{"t/a", "t/b", "t/c"}, got, nil, nil)
	if k := keys(got); !slices.Equal(k, []string{"b3"}) {
		t.Fatalf("candidates %v, want [b3] (no peer there)", k)
	}
	got = reports()
	antiAffinityFilter("t/self", []string{"t/a", "t/b", "t/c"}, got, map[string][]string{"b3": {"t/a/" + r, "t/b/" + r}}, nil)
	if k := keys(got); !slices.Equal(k, []string{"b1"}) {
		t.Fatalf("candidates with pending peers on b3: %v, want [b1]", k)
	}
	got = reports()
	antiAffinityFilter("t/self", nil, got, nil, nil)
	if len(got) != 3 {
		t.Fatalf("no group filtered: %v", keys(got))
	}
	got = reports()
	antiAffinityFilter("t/self", []string{"t/a", "t/b", "t/self"}, got, map[string][]string{"b3": {"t/a/" + r, "t/b/" + r}}, nil)
	if k := keys(got); !slices.Equal(k, []string{"b1", "b2"}) {
		t.Fatalf("tie between b1 and b2: %v", k)
	}
}

// TestAntiAffinityPlacementOnTwoBrokers: with two live brokers, the
// leader places the second namespace of each anti-affinity pair on the
// broker without the first, even when an unrelated namespace placed in
// between made the load a tie (without the group the tie is broken at
// random, so five pairs all apart would happen 1 time in 32).
func TestAntiAffinityPlacementOnTwoBrokers(t *testing.T) {
	srv := zktest.StartServer(t)
	peers := func(_ context.Context, ns string) []string {
		// t/gK-a and t/gK-b form group K.
		if base, ok := strings.CutSuffix(ns, "-a"); ok {
			return []string{base + "-b"}
		}
		if base, ok := strings.CutSuffix(ns, "-b"); ok {
			return []string{base + "-a"}
		}
		return nil
	}
	withPeers := func(o *Options) { o.AntiAffinityPeers = peers }
	a, b := startNodeWith(t, srv, 1, withPeers), startNodeWith(t, srv, 2, withPeers)
	waitFor(t, "a leader", func() bool { return a.svc.IsLeader() != b.svc.IsLeader() })
	waitFor(t, "both reporting", func() bool {
		ids, _ := a.svc.Brokers(context.Background())
		if len(ids) != 2 {
			return false
		}
		for _, id := range ids {
			if _, err := a.svc.report(context.Background(), id); err != nil {
				return false
			}
		}
		return true
	})
	leader := a
	if b.svc.IsLeader() {
		leader = b
	}
	ctx := context.Background()
	full, _ := bundle.ParseRange("0x00000000_0xffffffff")
	for k := range 5 {
		first, err := leader.svc.place(ctx, BundleKey(fmt.Sprintf("t/g%d-a", k), full))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := leader.svc.place(ctx, BundleKey(fmt.Sprintf("t/x%d", k), full)); err != nil {
			t.Fatal(err)
		}
		second, err := leader.svc.place(ctx, BundleKey(fmt.Sprintf("t/g%d-b", k), full))
		if err != nil {
			t.Fatal(err)
		}
		if first == second {
			t.Fatalf("group %d: both namespaces placed on %s", k, first)
		}
	}
}
