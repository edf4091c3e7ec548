package cluster

import (
	"maps"
	"slices"
	"testing"
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
	antiAffinityFilter("t/self", []string{"t/a", "t/b", "t/c"}, got, nil)
	if k := keys(got); !slices.Equal(k, []string{"b3"}) {
		t.Fatalf("candidates %v, want [b3] (no peer there)", k)
	}
	got = reports()
	antiAffinityFilter("t/self", []string{"t/a", "t/b", "t/c"}, got, map[string][]string{"b3": {"t/a/" + r, "t/b/" + r}})
	if k := keys(got); !slices.Equal(k, []string{"b1"}) {
		t.Fatalf("candidates with pending peers on b3: %v, want [b1]", k)
	}
	got = reports()
	antiAffinityFilter("t/self", nil, got, nil)
	if len(got) != 3 {
		t.Fatalf("no group filtered: %v", keys(got))
	}
	got = reports()
	antiAffinityFilter("t/self", []string{"t/a", "t/b", "t/self"}, got, map[string][]string{"b3": {"t/a/" + r, "t/b/" + r}})
	if k := keys(got); !slices.Equal(k, []string{"b1", "b2"}) {
		t.Fatalf("tie between b1 and b2: %v", k)
	}
}
