package isolation

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/magnetar-mq/magnetar/metadata/embedded"
)

func minAvail(min string) *AutoFailoverPolicy {
	return &AutoFailoverPolicy{PolicyType: MinAvailable, Parameters: map[string]string{"min_limit": min, "usage_threshold": "80"}}
}

// Candidates is Pulsar's applyNamespacePolicies: primaries for a
// matched namespace, secondaries too below min_limit, shared brokers
// (primary for no policy) for any other namespace.
func TestCandidates(t *testing.T) {
	live := []string{"10.0.0.1:8080", "10.0.0.2:8080", "10.0.1.1:8080", "10.0.2.1:8080"}
	pols := map[string]Policy{
		"gold": {Namespaces: []string{"gold/.*"}, Primary: []string{"10\\.0\\.0\\..*"}, Secondary: []string{"10\\.0\\.1\\..*"}, AutoFailoverPolicy: minAvail("1")},
	}
	if got := Candidates(pols, "gold/a", live); !slices.Equal(got, live[:2]) {
		t.Fatalf("gold/a: %v, want the primaries", got)
	}
	if got := Candidates(pols, "silver/a", live); !slices.Equal(got, live[2:]) {
		t.Fatalf("silver/a: %v, want the shared brokers", got)
	}
	// As many primaries as min_limit: the primaries alone.
	if got := Candidates(pols, "gold/a", live[1:]); !slices.Equal(got, []string{live[1]}) {
		t.Fatalf("one primary of min_limit 1: %v, want the primary", got)
	}
	// No primary left: the secondaries.
	if got := Candidates(pols, "gold/a", live[2:]); !slices.Equal(got, []string{live[2]}) {
		t.Fatalf("no primary: %v, want the secondary", got)
	}
	// Fewer primaries than min_limit: the secondaries join.
	pols["gold"] = Policy{Namespaces: []string{"gold/.*"}, Primary: []string{"10\\.0\\.0\\..*"}, Secondary: []string{"10\\.0\\.1\\..*"}, AutoFailoverPolicy: minAvail("2")}
	if got := Candidates(pols, "gold/a", live[1:]); !slices.Equal(got, []string{live[1], live[2]}) {
		t.Fatalf("one primary of min_limit 2: %v, want it and the secondary", got)
	}
	// The regexes match whole strings.
	if got := Candidates(pols, "xgold/a", live); slices.Contains(got, live[0]) {
		t.Fatalf("xgold/a matched gold/.*: %v", got)
	}
	if got := Candidates(nil, "any/ns", live); !slices.Equal(got, live) {
		t.Fatalf("no policies: %v", got)
	}
}

func TestValidate(t *testing.T) {
	good := Policy{Namespaces: []string{"t/.*"}, Primary: []string{"b.*"}, Secondary: []string{}, AutoFailoverPolicy: minAvail("1")}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Policy){
		"bad regex":     func(p *Policy) { p.Primary = []string{"b(["} },
		"no namespaces": func(p *Policy) { p.Namespaces = nil },
		"no primary":    func(p *Policy) { p.Primary = []string{} },
		"no secondary":  func(p *Policy) { p.Secondary = nil },
		"no failover":   func(p *Policy) { p.AutoFailoverPolicy = nil },
		"unknown type": func(p *Policy) {
			p.AutoFailoverPolicy = &AutoFailoverPolicy{PolicyType: "x", Parameters: map[string]string{}}
		},
		"min_limit not int": func(p *Policy) { p.AutoFailoverPolicy = minAvail("one") },
	} {
		p := good
		mut(&p)
		var inv *InvalidError
		if err := p.Validate(); !errors.As(err, &inv) {
			t.Errorf("%s: %v, want an InvalidError", name, err)
		}
	}
}

func TestStore(t *testing.T) {
	ctx := context.Background()
	meta, err := embedded.Open(t.TempDir()+"/meta", embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	s := NewStore(meta)
	if err := s.SetFailureDomain(ctx, "c", "d1", FailureDomain{Brokers: []string{"a:1", "b:1"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetFailureDomain(ctx, "c", "d2", FailureDomain{Brokers: []string{"b:1"}}); !errors.Is(err, ErrConflict) {
		t.Fatalf("broker in two domains: %v", err)
	}
	if err := s.SetFailureDomain(ctx, "c", "d1", FailureDomain{Brokers: []string{"b:1"}}); err != nil {
		t.Fatalf("replacing a domain's own brokers: %v", err)
	}
	if data, _, err := meta.Get(ctx, "/admin/clusters/c/failureDomain/d1"); err != nil || string(data) != `{"brokers":["b:1"]}` {
		t.Fatalf("stored domain %s, %v", data, err)
	}
	if _, err := s.Policies(ctx, "c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("policies never set: %v", err)
	}
	p := Policy{Namespaces: []string{"t/.*"}, Primary: []string{"b.*"}, Secondary: []string{}, AutoFailoverPolicy: minAvail("1")}
	if err := s.SetPolicy(ctx, "c", "p1", p); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteCluster(ctx, "c"); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("delete with a policy: %v", err)
	}
	if err := s.DeletePolicy(ctx, "c", "p1"); err != nil {
		t.Fatal(err)
	}
	if m, err := s.Policies(ctx, "c"); err != nil || len(m) != 0 {
		t.Fatalf("after delete: %v, %v", m, err)
	}
	if err := s.DeleteCluster(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := meta.Exists(ctx, "/admin/clusters/c/failureDomain"); ok {
		t.Fatal("failure domains left behind")
	}
}
