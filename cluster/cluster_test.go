package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/bundle"
	"github.com/magnetar-mq/magnetar/internal/testenv"
	"github.com/magnetar-mq/magnetar/internal/zktest"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/zookeeper"
)

// node is one simulated broker: a ZooKeeper session and a Service.
type node struct {
	svc  *Service
	st   *zookeeper.Store
	rec  *zktest.Sessions
	mu   sync.Mutex
	lost []string
}

func (n *node) lostKeys() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.lost...)
}

const testSession = 2 * time.Second

func startNode(t *testing.T, srv *zktest.Server, id int) *node {
	t.Helper()
	return startNodeWith(t, srv, id, nil)
}

// startNodeWith is startNode with mut applied to the Options.
func startNodeWith(t *testing.T, srv *zktest.Server, id int, mut func(*Options)) *node {
	t.Helper()
	n := &node{rec: &zktest.Sessions{}}
	st, err := zookeeper.Open("zk://"+srv.Addr()+"/c", zookeeper.Options{SessionTimeout: testSession, Dialer: n.rec.Dial})
	if err != nil {
		t.Fatal(err)
	}
	n.st = st
	t.Cleanup(func() { st.Close() })
	host := fmt.Sprintf("127.0.0.%d:8080", id)
	o := Options{
		Store: st, BrokerID: host,
		ServiceURL: fmt.Sprintf("pulsar://127.0.0.%d:6650", id), WebURL: "http://" + host,
		OnBundleLost: func(ns string, r bundle.Range) {
			n.mu.Lock()
			n.lost = append(n.lost, BundleKey(ns, r))
			n.mu.Unlock()
		},
		ReportInterval: 100 * time.Millisecond, ShedInterval: -1,
		// The simulated brokers listen nowhere: alive unless a test
		// says otherwise.
		Probe: func(context.Context, string) error { return nil },
	}
	if mut != nil {
		mut(&o)
	}
	n.svc, err = Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.svc.Close() })
	return n
}

func createNamespace(t *testing.T, st metadata.Store, ns string, n int) {
	t.Helper()
	_, err := st.Put(context.Background(), "/admin/policies/"+ns, fmt.Appendf(nil, `{"bundles":{"numBundles":%d}}`, n), metadata.NotExists)
	if err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, 20*time.Second, what, cond)
}

// One owner per bundle: an authoritative lookup takes the bundle; every
// other broker's lookup then answers Connect to that owner, and only the
// owner passes CheckTopic.
func TestOwnershipExclusive(t *testing.T) {
	srv := zktest.StartServer(t)
	a, b := startNode(t, srv, 1), startNode(t, srv, 2)
	createNamespace(t, a.st, "t/ns", 4)
	ctx := context.Background()
	const topic = "persistent://t/ns/my-topic"
	res, err := a.svc.Lookup(ctx, topic, true)
	if err != nil || res.Redirect || res.Target.NativeURL != "pulsar://127.0.0.1:6650" {
		t.Fatalf("authoritative lookup on a = %+v, %v", res, err)
	}
	four, _ := bundle.Even(4)
	if res.Bundle != "t/ns/"+four.ForTopic(topic).String() {
		t.Fatalf("bundle = %s", res.Bundle)
	}
	for _, auth := range []bool{false, true} {
		res, err := b.svc.Lookup(ctx, topic, auth)
		if err != nil || res.Redirect || res.Target.NativeURL != "pulsar://127.0.0.1:6650" {
			t.Fatalf("lookup on b (authoritative=%v) = %+v, %v", auth, res, err)
		}
	}
	if _, err := a.svc.CheckTopic(ctx, topic); err != nil {
		t.Fatalf("owner CheckTopic: %v", err)
	}
	if _, err := b.svc.CheckTopic(ctx, topic); !errors.Is(err, ErrNotOwned) {
		t.Fatalf("non-owner CheckTopic err = %v", err)
	}
	// Concurrent authoritative lookups for another bundle: one winner.
	const other = "persistent://t/ns/my-topic-partition-1"
	var wg sync.WaitGroup
	urls := make([]string, 2)
	for i, n := range []*node{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := n.svc.Lookup(ctx, other, true)
			if err != nil {
				t.Error(err)
			}
			urls[i] = r.Target.NativeURL
		}()
	}
	wg.Wait()
	if urls[0] != urls[1] {
		t.Fatalf("two owners: %v", urls)
	}
	key := res.Bundle
	_, r, _ := splitKey(key)
	if err := b.svc.Unload(ctx, "t/ns", r); !errors.Is(err, ErrNotOwned) {
		t.Fatalf("unload by a non-owner err = %v", err)
	}
}

// An unload closes the bundle's topics (OnBundleLost), releases the owner
// node, and another broker can take the bundle.
func TestUnloadReleases(t *testing.T) {
	srv := zktest.StartServer(t)
	a, b := startNode(t, srv, 1), startNode(t, srv, 2)
	createNamespace(t, a.st, "t/ns", 4)
	ctx := context.Background()
	const topic = "persistent://t/ns/x"
	res, err := a.svc.Lookup(ctx, topic, true)
	if err != nil {
		t.Fatal(err)
	}
	ns, r, _ := splitKey(res.Bundle)
	if err := a.svc.Unload(ctx, ns, r); err != nil {
		t.Fatal(err)
	}
	if got := a.lostKeys(); len(got) != 1 || got[0] != res.Bundle {
		t.Fatalf("OnBundleLost calls = %v", got)
	}
	if a.svc.Owns(res.Bundle) {
		t.Fatal("still owned after unload")
	}
	res2, err := b.svc.Lookup(ctx, topic, true)
	if err != nil || res2.Target.NativeURL != "pulsar://127.0.0.2:6650" {
		t.Fatalf("lookup after unload = %+v, %v", res2, err)
	}
}

// Session expiry: the owner stops serving (OnBundleLost, Owns false)
// and the other broker takes the bundle.
func TestSessionExpiryDropsBundles(t *testing.T) {
	srv := zktest.StartServer(t)
	a, b := startNode(t, srv, 1), startNode(t, srv, 2)
	createNamespace(t, a.st, "t/ns", 4)
	ctx := context.Background()
	const topic = "persistent://t/ns/x"
	res, err := a.svc.Lookup(ctx, topic, true)
	if err != nil {
		t.Fatal(err)
	}
	srv.ExpireSession(t, a.rec.Last())
	waitFor(t, "bundle dropped", func() bool { return !a.svc.Owns(res.Bundle) && len(a.lostKeys()) == 1 })
	waitFor(t, "b takes over", func() bool {
		r, err := b.svc.Lookup(ctx, topic, true)
		return err == nil && r.Target.NativeURL == "pulsar://127.0.0.2:6650"
	})
	// a, on its new session, sees b as owner.
	waitFor(t, "a sees the new owner", func() bool {
		r, err := a.svc.Lookup(ctx, topic, false)
		return err == nil && r.Target.NativeURL == "pulsar://127.0.0.2:6650"
	})
}

// The lease lapses without any session event when the store cannot be
// reached: here ZooKeeper stops; Owns turns false within the lease.
func TestLeaseLapsesWithoutStore(t *testing.T) {
	srv := zktest.StartServer(t)
	a := startNode(t, srv, 1)
	createNamespace(t, a.st, "t/ns", 4)
	res, err := a.svc.Lookup(context.Background(), "persistent://t/ns/x", true)
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	t0 := time.Now()
	waitFor(t, "lease lapse", func() bool { return !a.svc.Owns(res.Bundle) })
	if d := time.Since(t0); d > testSession {
		t.Fatalf("still serving %v after losing the store (session %v)", d, testSession)
	}
}

// One leader; when it closes, the other takes over.
func TestLeaderElection(t *testing.T) {
	srv := zktest.StartServer(t)
	a, b := startNode(t, srv, 1), startNode(t, srv, 2)
	waitFor(t, "a leader", func() bool { return a.svc.IsLeader() != b.svc.IsLeader() })
	leader, follower := a, b
	if b.svc.IsLeader() {
		leader, follower = b, a
	}
	li, err := follower.svc.Leader(context.Background())
	if err != nil || li.BrokerID != leader.svc.o.BrokerID {
		t.Fatalf("Leader() = %+v, %v", li, err)
	}
	leader.svc.Close()
	waitFor(t, "new leader", follower.svc.IsLeader)
}

// Placement spreads unowned bundles over the live brokers; a follower's
// non-authoritative lookup redirects to the leader.
func TestPlacementSpreads(t *testing.T) {
	srv := zktest.StartServer(t)
	a, b := startNode(t, srv, 1), startNode(t, srv, 2)
	createNamespace(t, a.st, "t/ns", 16)
	waitFor(t, "a leader", func() bool { return a.svc.IsLeader() != b.svc.IsLeader() })
	waitFor(t, "both registered", func() bool {
		ids, _ := a.svc.Brokers(context.Background())
		return len(ids) == 2
	})
	leader, follower := a, b
	if b.svc.IsLeader() {
		leader, follower = b, a
	}
	ctx := context.Background()
	bs, _ := bundle.Even(16)
	// Find 10 topics in distinct bundles.
	var topics []string
	seen := map[bundle.Range]bool{}
	for i := 0; len(topics) < 10; i++ {
		tp := fmt.Sprintf("persistent://t/ns/p%d", i)
		if r := bs.ForTopic(tp); !seen[r] {
			seen[r] = true
			topics = append(topics, tp)
		}
	}
	count := map[string]int{}
	for _, tp := range topics {
		res, err := follower.svc.Lookup(ctx, tp, false)
		if err != nil || !res.Redirect || res.Authoritative || res.Target.NativeURL != leader.svc.o.ServiceURL {
			t.Fatalf("follower lookup = %+v, %v; want redirect to the leader", res, err)
		}
		res, err = leader.svc.Lookup(ctx, tp, false)
		if err != nil {
			t.Fatal(err)
		}
		if res.Redirect {
			if !res.Authoritative {
				t.Fatalf("leader redirect not authoritative: %+v", res)
			}
			res, err = follower.svc.Lookup(ctx, tp, true)
			if err != nil || res.Redirect {
				t.Fatalf("authoritative lookup on the chosen broker = %+v, %v", res, err)
			}
		}
		count[res.Target.NativeURL]++
	}
	if len(count) != 2 || count[a.svc.o.ServiceURL] < 4 || count[b.svc.o.ServiceURL] < 4 {
		t.Fatalf("placement = %v, want about 5 each", count)
	}
}

// Split: the owner takes both halves, the boundaries gain one, the
// parent's topics are closed and the parent is released.
func TestSplit(t *testing.T) {
	srv := zktest.StartServer(t)
	a := startNode(t, srv, 1)
	createNamespace(t, a.st, "t/ns", 4)
	ctx := context.Background()
	res, err := a.svc.Lookup(ctx, "persistent://t/ns/x", true)
	if err != nil {
		t.Fatal(err)
	}
	ns, r, _ := splitKey(res.Bundle)
	halves, err := a.svc.Split(ctx, ns, r, SplitRangeEqually, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := a.svc.Bundles(ctx, ns)
	if err != nil || bs.Count() != 5 {
		t.Fatalf("bundles after split = %d, %v", bs.Count(), err)
	}
	for _, h := range halves {
		if !a.svc.Owns(BundleKey(ns, h)) {
			t.Fatalf("half %s not owned", h)
		}
	}
	if a.svc.Owns(res.Bundle) {
		t.Fatal("parent still owned")
	}
	if got := a.lostKeys(); len(got) != 1 || got[0] != res.Bundle {
		t.Fatalf("OnBundleLost = %v", got)
	}
	if _, ok, _ := a.svc.Owner(ctx, ns, r); ok {
		t.Fatal("parent owner node left behind")
	}
}

// The leader splits a bundle whose stats pass a threshold.
func TestAutoSplit(t *testing.T) {
	svc := startFiveTopicBundles(t, Options{ReportInterval: 50 * time.Millisecond, ShedInterval: 100 * time.Millisecond, SplitMaxTopics: 4})
	waitFor(t, "auto split", func() bool {
		bs, err := svc.Bundles(context.Background(), "t/ns")
		return err == nil && bs.Count() > 4
	})
}

// TestDeadOwnerReleased: a broker whose process died keeps its session
// (and so its registration and owner nodes) until the session expires,
// but its service port refuses connections. A lookup on another broker
// probes it, deletes its owner node and places the bundle on a live
// broker at once; a broker whose port answers (or whose registration is
// gone: a clean unload in progress) keeps its bundle; a dead leader is
// passed over and a dead broker is never chosen by placement.
func TestDeadOwnerReleased(t *testing.T) {
	srv := zktest.StartServer(t)
	var dead atomic.Value // service URL that refuses
	dead.Store("")
	probe := func(o *Options) {
		o.Probe = func(_ context.Context, u string) error {
			if u == dead.Load().(string) {
				return syscall.ECONNREFUSED
			}
			return nil
		}
	}
	a := startNodeWith(t, srv, 1, probe)
	b := startNodeWith(t, srv, 2, probe)
	c := startNodeWith(t, srv, 3, probe)
	createNamespace(t, a.st, "t/ns", 16)
	ctx := context.Background()
	const topic = "persistent://t/ns/owned-by-a"
	if res, err := a.svc.Lookup(ctx, topic, true); err != nil || res.Target.NativeURL != "pulsar://127.0.0.1:6650" {
		t.Fatalf("authoritative lookup on a = %+v, %v", res, err)
	}
	// a answers: b sends the client to a.
	if res, err := b.svc.Lookup(ctx, topic, false); err != nil || res.Target.NativeURL != "pulsar://127.0.0.1:6650" {
		t.Fatalf("lookup on b with a alive = %+v, %v", res, err)
	}
	// a's process dies; its session (and nodes) live on. b's last probe
	// of a is trusted for probeTTL: past it, b probes again.
	dead.Store("pulsar://127.0.0.1:6650")
	time.Sleep(probeTTL)
	res, err := b.svc.Lookup(ctx, topic, false)
	for err == nil && res.Redirect {
		next := map[string]*node{"pulsar://127.0.0.2:6650": b, "pulsar://127.0.0.3:6650": c}[res.Target.NativeURL]
		if next == nil {
			t.Fatalf("redirected to %s (the dead broker?)", res.Target.NativeURL)
		}
		res, err = next.svc.Lookup(ctx, topic, res.Authoritative)
	}
	if err != nil || res.Target.NativeURL == "pulsar://127.0.0.1:6650" {
		t.Fatalf("lookup after a died = %+v, %v; want a live owner", res, err)
	}
	od, ok, err := b.svc.TopicOwner(ctx, topic)
	if err != nil || !ok || od.NativeURL != res.Target.NativeURL {
		t.Fatalf("owner node after the takeover = %+v %v %v, want %s", od, ok, err, res.Target.NativeURL)
	}
	// Placement never picks the dead broker, though it owns nothing.
	for i := range 20 {
		tp := fmt.Sprintf("persistent://t/ns/fresh-%d", i)
		res, err := c.svc.Lookup(ctx, tp, false)
		for err == nil && res.Redirect {
			next := map[string]*node{"pulsar://127.0.0.2:6650": b, "pulsar://127.0.0.3:6650": c}[res.Target.NativeURL]
			if next == nil {
				t.Fatalf("%s redirected to %s", tp, res.Target.NativeURL)
			}
			res, err = next.svc.Lookup(ctx, tp, res.Authoritative)
		}
		if err != nil || res.Target.NativeURL == "pulsar://127.0.0.1:6650" {
			t.Fatalf("%s placed on %+v, %v", tp, res, err)
		}
	}
}

// TestSilentOwnerLookupWaits: an owner that does not answer (partitioned)
// keeps its bundle until its session ends; a lookup meanwhile is held
// rather than sent to it, and answered with a live owner as soon as the
// old one's node is gone.
func TestSilentOwnerLookupWaits(t *testing.T) {
	srv := zktest.StartServer(t)
	silent := func(o *Options) {
		o.Probe = func(_ context.Context, u string) error {
			if u == "pulsar://127.0.0.1:6650" {
				return context.DeadlineExceeded
			}
			return nil
		}
	}
	a := startNodeWith(t, srv, 1, silent)
	b := startNodeWith(t, srv, 2, silent)
	createNamespace(t, a.st, "t/ns", 4)
	ctx := context.Background()
	const topic = "persistent://t/ns/silent"
	if _, err := a.svc.Lookup(ctx, topic, true); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		res LookupResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := b.svc.Lookup(ctx, topic, true)
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		t.Fatalf("lookup answered %+v, %v while the silent owner's session lives", a.res, a.err)
	case <-time.After(500 * time.Millisecond):
	}
	t0 := time.Now()
	a.st.Close() // its session ends: the owner node goes
	select {
	case ans := <-done:
		if ans.err != nil || ans.res.Target.NativeURL != "pulsar://127.0.0.2:6650" {
			t.Fatalf("lookup after the owner's session ended = %+v, %v", ans.res, ans.err)
		}
		t.Logf("answered %v after the owner's node went", time.Since(t0))
	case <-time.After(testSession + 3*time.Second):
		t.Fatal("lookup not answered after the silent owner's session ended")
	}
}
