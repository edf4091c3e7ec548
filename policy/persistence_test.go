package policy

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
)

// TestPersistenceValidate: E >= Qw >= Qa >= 1, E within an int32, a
// non-negative mark-delete rate.
func TestPersistenceValidate(t *testing.T) {
	for _, c := range []struct {
		p  PersistencePolicies
		ok bool
	}{
		{PersistencePolicies{1, 1, 1, 0}, true},
		{PersistencePolicies{3, 2, 2, 1.5}, true},
		{PersistencePolicies{2, 3, 1, 0}, false},
		{PersistencePolicies{3, 2, 3, 0}, false},
		{PersistencePolicies{1, 1, 0, 0}, false},
		{PersistencePolicies{0, 0, 0, 0}, false},
		{PersistencePolicies{MaxInt32Value + 1, 1, 1, 0}, false},
		{PersistencePolicies{1, 1, 1, -0.5}, false},
	} {
		if err := c.p.Validate(); (err == nil) != c.ok {
			t.Errorf("%+v: %v, want ok=%v", c.p, err, c.ok)
		}
	}
}

// TestResolveExtras: the topic's persistence and consumers per
// subscription win over the namespace's; encryption comes from the
// namespace; the JSON names are Pulsar's.
func TestResolveExtras(t *testing.T) {
	three, five := 3, 5
	nsP := &PersistencePolicies{3, 2, 2, 0}
	tpP := &PersistencePolicies{2, 2, 1, 0}
	ns := &Policies{NamespaceExtras: NamespaceExtras{Persistence: nsP, MaxConsumersPerSubscription: &three, EncryptionRequired: true, AntiAffinityGroup: "g"}}
	tp := &TopicPolicies{TopicExtras: TopicExtras{Persistence: tpP, MaxConsumersPerSubscription: &five}}
	if tp.Empty() || !(&TopicPolicies{}).Empty() {
		t.Fatal("Empty ignores the extras")
	}
	r := Resolve(Defaults{}, tp.Layer("c"), ns)
	if *r.Persistence != *tpP || r.MaxConsumersPerSubscription != 5 || !r.EncryptionRequired {
		t.Fatalf("topic over namespace: %+v", r.ResolvedExtras)
	}
	r2 := Resolve(Defaults{}, nil, ns)
	if *r2.Persistence != *nsP || r2.MaxConsumersPerSubscription != 3 {
		t.Fatalf("namespace only: %+v", r2.ResolvedExtras)
	}
	if SamePersistence(r, r2) || !SamePersistence(r2, Resolve(Defaults{}, ns)) || !SamePersistence(Resolve(Defaults{}), Resolve(Defaults{})) {
		t.Fatal("SamePersistence")
	}
	if r3 := Resolve(Defaults{}); r3.Persistence != nil || r3.MaxConsumersPerSubscription != 0 || r3.EncryptionRequired {
		t.Fatalf("defaults: %+v", r3.ResolvedExtras)
	}
	b, _ := json.Marshal(ns)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for _, k := range []string{"persistence", "antiAffinityGroup", "max_consumers_per_subscription", "encryption_required"} {
		if _, ok := m[k]; !ok {
			t.Errorf("namespace JSON lacks %q: %s", k, b)
		}
	}
	b, _ = json.Marshal(tp)
	m = nil
	_ = json.Unmarshal(b, &m)
	for _, k := range []string{"persistence", "maxConsumersPerSubscription"} {
		if _, ok := m[k]; !ok {
			t.Errorf("topic JSON lacks %q: %s", k, b)
		}
	}
}

// TestAntiAffinityPeers: the peers of a namespace are the other
// namespaces of its tenant in its group (none without a group; a group
// of the same name in another tenant does not count).
func TestAntiAffinityPeers(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for _, tenant := range []string{"public", "other"} {
		if err := s.CreateTenant(ctx, tenant, TenantInfo{AllowedClusters: []string{"c1"}}); err != nil {
			t.Fatal(err)
		}
	}
	for ns, g := range map[string]string{"public/a1": "g", "public/a2": "g", "public/a3": "g", "public/b": "h", "public/none": "", "other/x": "g"} {
		if err := s.CreateNamespace(ctx, ns, &Policies{NamespaceExtras: NamespaceExtras{AntiAffinityGroup: g}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.AntiAffinityPeers(ctx, "public/a1"); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"public/a2", "public/a3"}) {
		t.Fatalf("peers of public/a1: %v", got)
	}
	if got := s.AntiAffinityPeers(ctx, "public/b"); len(got) != 0 {
		t.Fatalf("peers of the only namespace of h: %v", got)
	}
	if got := s.AntiAffinityPeers(ctx, "public/none"); got != nil {
		t.Fatalf("peers without a group: %v", got)
	}
	if got := s.AntiAffinityPeers(ctx, "public/missing"); got != nil {
		t.Fatalf("peers of a namespace without policies: %v", got)
	}
}
