package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/magnetar-mq/magnetar/bundle"
	"github.com/magnetar-mq/magnetar/internal/zktest"
	"github.com/magnetar-mq/magnetar/isolation"
)

const testCluster = "c"

func inCluster(o *Options) { o.ClusterName = testCluster }

// waitRegistered waits until every node's load report is readable.
func waitRegistered(t *testing.T, nodes ...*node) {
	t.Helper()
	waitFor(t, "all brokers reporting", func() bool {
		ids, _ := nodes[0].svc.Brokers(context.Background())
		if len(ids) != len(nodes) {
			return false
		}
		for _, id := range ids {
			if _, err := nodes[0].svc.report(context.Background(), id); err != nil {
				return false
			}
		}
		return true
	})
}

// resolve follows a client's lookup from node from: redirects go to the
// node they name, with the authoritative flag they carry, until one
// answers Connect; it returns that broker's service URL.
func resolve(t *testing.T, nodes []*node, from *node, topic string) string {
	t.Helper()
	ctx := context.Background()
	res, err := from.svc.Lookup(ctx, topic, false)
	for range 4 {
		if err != nil {
			t.Fatalf("lookup %s: %v", topic, err)
		}
		if !res.Redirect {
			return res.Target.NativeURL
		}
		i := slices.IndexFunc(nodes, func(n *node) bool { return n.svc.o.ServiceURL == res.Target.NativeURL })
		if i < 0 {
			t.Fatalf("lookup %s redirected to %s, no such broker", topic, res.Target.NativeURL)
		}
		res, err = nodes[i].svc.Lookup(ctx, topic, res.Authoritative)
	}
	t.Fatalf("lookup %s: too many redirects", topic)
	return ""
}

// oneTopicPerBundle names a topic of ns in each of its n even bundles.
func oneTopicPerBundle(ns string, n int) []string {
	bs, _ := bundle.Even(n)
	seen := map[bundle.Range]bool{}
	var out []string
	for i := 0; len(out) < n; i++ {
		tp := fmt.Sprintf("persistent://%s/t%d", ns, i)
		if r := bs.ForTopic(tp); !seen[r] {
			seen[r] = true
			out = append(out, tp)
		}
	}
	return out
}

// A namespace an isolation policy matches is placed only on its primary
// brokers (matched on the host); other namespaces only on the shared
// brokers (primary for no policy); with its primary gone, on its
// secondaries (fewer primaries than min_limit). Lookups from every
// broker agree.
func TestIsolationPolicyPlacement(t *testing.T) {
	srv := zktest.StartServer(t)
	a, b, c := startNodeWith(t, srv, 1, inCluster), startNodeWith(t, srv, 2, inCluster), startNodeWith(t, srv, 3, inCluster)
	nodes := []*node{a, b, c}
	ctx := context.Background()
	err := isolation.NewStore(a.st).SetPolicy(ctx, testCluster, "gold", isolation.Policy{
		Namespaces: []string{"t/gold.*"}, Primary: []string{`127\.0\.0\.1`}, Secondary: []string{`127\.0\.0\.2`},
		AutoFailoverPolicy: &isolation.AutoFailoverPolicy{PolicyType: isolation.MinAvailable,
			Parameters: map[string]string{"min_limit": "1", "usage_threshold": "80"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	createNamespace(t, a.st, "t/gold", 8)
	createNamespace(t, a.st, "t/plain", 8)
	waitRegistered(t, nodes...)

	for i, tp := range oneTopicPerBundle("t/gold", 8) {
		if got := resolve(t, nodes, nodes[i%3], tp); got != a.svc.o.ServiceURL {
			t.Fatalf("%s placed on %s, want the primary %s", tp, got, a.svc.o.ServiceURL)
		}
	}
	plain := map[string]int{}
	for i, tp := range oneTopicPerBundle("t/plain", 8) {
		plain[resolve(t, nodes, nodes[i%3], tp)]++
	}
	if plain[a.svc.o.ServiceURL] != 0 || len(plain) != 2 {
		t.Fatalf("t/plain placed %v: want only the shared brokers 2 and 3", plain)
	}

	// The primary leaves: its gold bundles go to the secondary, never to
	// broker 3.
	a.svc.Close()
	waitRegistered(t, b, c)
	for i, tp := range oneTopicPerBundle("t/gold", 8) {
		if got := resolve(t, nodes[1:], nodes[1+i%2], tp); got != b.svc.o.ServiceURL {
			t.Fatalf("%s placed on %s without its primary, want the secondary %s", tp, got, b.svc.o.ServiceURL)
		}
	}
}

// A namespace whose policy allows no live broker cannot be placed.
func TestIsolationPolicyNoBroker(t *testing.T) {
	srv := zktest.StartServer(t)
	a := startNodeWith(t, srv, 1, inCluster)
	ctx := context.Background()
	err := isolation.NewStore(a.st).SetPolicy(ctx, testCluster, "elsewhere", isolation.Policy{
		Namespaces: []string{"t/iso"}, Primary: []string{`10\.9\..*`}, Secondary: []string{},
		AutoFailoverPolicy: &isolation.AutoFailoverPolicy{PolicyType: isolation.MinAvailable,
			Parameters: map[string]string{"min_limit": "1", "usage_threshold": "80"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	createNamespace(t, a.st, "t/iso", 1)
	waitRegistered(t, a)
	if _, err := a.svc.Lookup(ctx, "persistent://t/iso/x", false); !errors.Is(err, ErrNoBroker) {
		t.Fatalf("lookup with no allowed broker: %v, want ErrNoBroker", err)
	}
}

// With failure domains enabled, the namespaces of an anti-affinity
// group go to different domains, not only different brokers: of four
// brokers in two domains, the second namespace of each pair lands in
// the domain without the first, although the first one's domain sibling
// is the least loaded broker left (where it goes without domains).
func TestFailureDomainAntiAffinity(t *testing.T) {
	srv := zktest.StartServer(t)
	peers := func(_ context.Context, ns string) []string {
		switch ns[len(ns)-2:] {
		case "-a":
			return []string{ns[:len(ns)-2] + "-b"}
		case "-b":
			return []string{ns[:len(ns)-2] + "-a"}
		}
		return nil
	}
	opts := func(o *Options) {
		inCluster(o)
		o.FailureDomainsEnabled = true
		o.AntiAffinityPeers = peers
	}
	var nodes []*node
	for i := 1; i <= 4; i++ {
		nodes = append(nodes, startNodeWith(t, srv, i, opts))
	}
	ctx := context.Background()
	st := isolation.NewStore(nodes[0].st)
	domainOf := map[string]string{}
	for d, ids := range map[string][]int{"rack-1": {1, 2}, "rack-2": {3, 4}} {
		var brokers []string
		for _, i := range ids {
			id := nodes[i-1].svc.o.BrokerID
			brokers = append(brokers, id)
			domainOf[id] = d
		}
		if err := st.SetFailureDomain(ctx, testCluster, d, isolation.FailureDomain{Brokers: brokers}); err != nil {
			t.Fatal(err)
		}
	}
	waitRegistered(t, nodes...)
	// rack-2's brokers carry 20 bundles each: on load alone, the second
	// namespace of a pair would go to the first one's rack-1 sibling.
	createNamespace(t, nodes[0].st, "t/filler", 64)
	for i, tp := range oneTopicPerBundle("t/filler", 64)[:40] {
		if _, err := nodes[2+i%2].svc.Lookup(ctx, tp, true); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "rack-2 reporting its bundles", func() bool {
		for _, n := range nodes[2:] {
			rep, err := nodes[0].svc.report(ctx, n.svc.o.BrokerID)
			if err != nil || rep.NumBundles != 20 {
				return false
			}
		}
		return true
	})
	var leader *node
	waitFor(t, "a leader", func() bool {
		for _, n := range nodes {
			if n.svc.IsLeader() {
				leader = n
				return true
			}
		}
		return false
	})
	full, _ := bundle.ParseRange("0x00000000_0xffffffff")
	for k := range 6 {
		first, err := leader.svc.place(ctx, BundleKey(fmt.Sprintf("t/g%d-a", k), full))
		if err != nil {
			t.Fatal(err)
		}
		second, err := leader.svc.place(ctx, BundleKey(fmt.Sprintf("t/g%d-b", k), full))
		if err != nil {
			t.Fatal(err)
		}
		if domainOf[first] == domainOf[second] {
			t.Fatalf("group %d: both namespaces in %s (%s, %s)", k, domainOf[first], first, second)
		}
	}
}

// A standalone (the only broker) serves a topic of an unowned bundle by
// taking the bundle; a clustered broker refuses it until a lookup
// places it.
func TestStandaloneTakesBundleOnCheck(t *testing.T) {
	srv := zktest.StartServer(t)
	alone := startNodeWith(t, srv, 1, func(o *Options) { o.Standalone = true })
	createNamespace(t, alone.st, "t/one", 4)
	ctx := context.Background()
	key, err := alone.svc.CheckTopic(ctx, "persistent://t/one/x")
	if err != nil || !alone.svc.Owns(key) {
		t.Fatalf("standalone CheckTopic = %q, %v; owns %v", key, err, alone.svc.Owns(key))
	}
	ns, r, _ := splitKey(key)
	other, _ := bundle.Even(4)
	for _, rg := range other.Ranges() {
		if rg != r {
			if owned, err := alone.svc.ClaimUnowned(ctx, ns, rg); err != nil || !owned {
				t.Fatalf("ClaimUnowned %s = %v, %v", rg, owned, err)
			}
			break
		}
	}

	srv2 := zktest.StartServer(t)
	member := startNode(t, srv2, 2)
	createNamespace(t, member.st, "t/one", 4)
	if _, err := member.svc.CheckTopic(ctx, "persistent://t/one/x"); !errors.Is(err, ErrNotOwned) {
		t.Fatalf("clustered CheckTopic of an unowned bundle: %v, want ErrNotOwned", err)
	}
	if owned, err := member.svc.ClaimUnowned(ctx, ns, r); err != nil || owned {
		t.Fatalf("clustered ClaimUnowned = %v, %v; want false", owned, err)
	}
}
