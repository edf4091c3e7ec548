package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/brokeradmin"
)

// TestPersistencePolicyValidatedAndPersisted: E >= Qw >= Qa >= 1 is
// enforced at namespace and topic level, a good value round-trips and
// survives a restart, the topic value is what ?applied reports.
func TestPersistencePolicyValidatedAndPersisted(t *testing.T) {
	r, tb := startRestartable(t)
	ns := newNamespace(t, tb)
	base := "/admin/v2/namespaces/" + ns + "/persistence"
	if got := mustHTTP(t, tb, "GET", base, "", http.StatusNoContent); got != "" {
		t.Fatalf("unset persistence: %s", got)
	}
	for _, bad := range []string{
		`{"bookkeeperEnsemble":2,"bookkeeperWriteQuorum":3,"bookkeeperAckQuorum":1}`,
		`{"bookkeeperEnsemble":3,"bookkeeperWriteQuorum":2,"bookkeeperAckQuorum":3}`,
		`{"bookkeeperEnsemble":1,"bookkeeperWriteQuorum":1,"bookkeeperAckQuorum":0}`,
		`{"bookkeeperEnsemble":2147483648,"bookkeeperWriteQuorum":1,"bookkeeperAckQuorum":1}`,
		`{"bookkeeperEnsemble":1,"bookkeeperWriteQuorum":1,"bookkeeperAckQuorum":1,"managedLedgerMaxMarkDeleteRate":-1}`,
		``, `null`, `{"bookkeeperEnsemble":"x"}`,
	} {
		code, body := httpDo(t, tb, "POST", base, bad)
		if code != http.StatusPreconditionFailed {
			t.Errorf("persistence %s: %d %s, want 412", bad, code, body)
		}
	}
	if got := mustHTTP(t, tb, "GET", base, "", http.StatusNoContent); got != "" {
		t.Fatalf("a refused value was stored: %s", got)
	}
	good := `{"bookkeeperEnsemble":3,"bookkeeperWriteQuorum":2,"bookkeeperAckQuorum":2,"managedLedgerMaxMarkDeleteRate":2.5}`
	mustHTTP(t, tb, "POST", base, good, http.StatusNoContent)
	topic := "persistent://" + ns + "/t"
	mustHTTP(t, tb, "PUT", "/admin/v2/persistent/"+ns+"/t", "", http.StatusNoContent)
	tpath := "/admin/v2/persistent/" + ns + "/t/persistence"
	mustHTTP(t, tb, "POST", tpath, `{"bookkeeperEnsemble":1,"bookkeeperWriteQuorum":2,"bookkeeperAckQuorum":1}`, http.StatusPreconditionFailed)
	mustHTTP(t, tb, "POST", tpath, `{"bookkeeperEnsemble":2,"bookkeeperWriteQuorum":2,"bookkeeperAckQuorum":1}`, http.StatusNoContent)
	tb = r.restart(t)
	if got := mustHTTP(t, tb, "GET", base, "", http.StatusOK); !jsonEq(got, good) {
		t.Fatalf("namespace persistence after restart: %s", got)
	}
	want := `{"bookkeeperEnsemble":2,"bookkeeperWriteQuorum":2,"bookkeeperAckQuorum":1,"managedLedgerMaxMarkDeleteRate":0}`
	if got := mustHTTP(t, tb, "GET", tpath+"?applied=true", "", http.StatusOK); !jsonEq(got, want) {
		t.Fatalf("topic %s applied persistence: %s", topic, got)
	}
	mustHTTP(t, tb, "DELETE", tpath, "", http.StatusNoContent)
	if got := mustHTTP(t, tb, "GET", tpath+"?applied=true", "", http.StatusOK); !jsonEq(got, good) {
		t.Fatalf("applied after topic delete: %s", got)
	}
	mustHTTP(t, tb, "DELETE", base, "", http.StatusNoContent)
	if got := mustHTTP(t, tb, "GET", base, "", http.StatusNoContent); got != "" {
		t.Fatalf("deleted persistence: %s", got)
	}
}

// TestAntiAffinityGroup: set, get, list by group (and tenant), delete.
func TestAntiAffinityGroup(t *testing.T) {
	tb := startBroker(t, nil)
	ns1, ns2, ns3 := newNamespace(t, tb), newNamespace(t, tb), newNamespace(t, tb)
	for _, ns := range []string{ns1, ns2} {
		mustHTTP(t, tb, "POST", "/admin/v2/namespaces/"+ns+"/antiAffinity", "group-a", http.StatusNoContent)
	}
	mustHTTP(t, tb, "POST", "/admin/v2/namespaces/"+ns3+"/antiAffinity", "group-b", http.StatusNoContent)
	mustHTTP(t, tb, "POST", "/admin/v2/namespaces/"+ns3+"/antiAffinity", "", http.StatusPreconditionFailed)
	if got := mustHTTP(t, tb, "GET", "/admin/v2/namespaces/"+ns1+"/antiAffinity", "", http.StatusOK); got != "group-a" {
		t.Fatalf("group of %s: %q", ns1, got)
	}
	cl := brokeradmin.For(tb.Broker).Node.ClusterName()
	got := mustHTTP(t, tb, "GET", "/admin/v2/namespaces/"+cl+"/antiAffinity/group-a?property=public", "", http.StatusOK)
	if !jsonEq(got, `["`+min(ns1, ns2)+`","`+max(ns1, ns2)+`"]`) {
		t.Fatalf("group-a members: %s", got)
	}
	mustHTTP(t, tb, "GET", "/admin/v2/namespaces/no-such-cluster/antiAffinity/group-a", "", http.StatusPreconditionFailed)
	mustHTTP(t, tb, "DELETE", "/admin/v2/namespaces/"+ns1+"/antiAffinity", "", http.StatusNoContent)
	got = mustHTTP(t, tb, "GET", "/admin/v2/namespaces/"+cl+"/antiAffinity/group-a", "", http.StatusOK)
	if !jsonEq(got, `["`+ns2+`"]`) {
		t.Fatalf("group-a after delete: %s", got)
	}
	if got := mustHTTP(t, tb, "GET", "/admin/v2/namespaces/"+ns1+"/antiAffinity", "", http.StatusOK); got != "" {
		t.Fatalf("deleted group: %q", got)
	}
}

// TestMaxConsumersPerSubscription: the namespace limit refuses the
// consumer above it with Pulsar's ConsumerBusy error, per subscription;
// a topic value overrides it.
func TestMaxConsumersPerSubscription(t *testing.T) {
	tb := startBroker(t, nil)
	c := tb.client(t)
	ns := newNamespace(t, tb)
	mustHTTP(t, tb, "POST", "/admin/v2/namespaces/"+ns+"/maxConsumersPerSubscription", "-1", http.StatusPreconditionFailed)
	mustHTTP(t, tb, "POST", "/admin/v2/namespaces/"+ns+"/maxConsumersPerSubscription", "1", http.StatusNoContent)
	topic := "persistent://" + ns + "/mc"
	sub := func(name string) (pulsar.Consumer, error) {
		co, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: name, Type: pulsar.Shared})
		if err == nil {
			t.Cleanup(co.Close)
		}
		return co, err
	}
	if _, err := sub("s1"); err != nil {
		t.Fatal(err)
	}
	_, err := sub("s1")
	if err == nil || !strings.Contains(err.Error(), "Subscription reached max consumers limit") {
		t.Fatalf("second consumer on s1: %v", err)
	}
	if _, err := sub("s2"); err != nil {
		t.Fatalf("first consumer of another subscription: %v", err)
	}
	mustHTTP(t, tb, "POST", "/admin/v2/persistent/"+ns+"/mc/maxConsumersPerSubscription", "2", http.StatusNoContent)
	if got := mustHTTP(t, tb, "GET", "/admin/v2/persistent/"+ns+"/mc/maxConsumersPerSubscription?applied=true", "", http.StatusOK); strings.TrimSpace(got) != "2" {
		t.Fatalf("applied: %s", got)
	}
	if _, err := sub("s1"); err != nil {
		t.Fatalf("second consumer under the topic limit 2: %v", err)
	}
	if _, err := sub("s1"); err == nil || !strings.Contains(err.Error(), "Subscription reached max consumers limit") {
		t.Fatalf("third consumer on s1: %v", err)
	}
}

// TestClearBacklog: the namespace, namespace+subscription and bundle
// variants skip backlogs to the end; consumers then get only messages
// published after.
func TestClearBacklog(t *testing.T) {
	tb := startBroker(t, nil)
	c := tb.client(t)
	ns := newNamespace(t, tb)
	topics := []string{"persistent://" + ns + "/a", "persistent://" + ns + "/b"}
	consumers := map[string]pulsar.Consumer{}
	for _, tp := range topics {
		for _, s := range []string{"x", "y"} {
			co, err := c.Subscribe(pulsar.ConsumerOptions{Topic: tp, SubscriptionName: s, Type: pulsar.Shared})
			if err != nil {
				t.Fatal(err)
			}
			co.Close() // keep the durable subscription, no consumer
		}
	}
	produce := func(tag string, n int) {
		for _, tp := range topics {
			p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: tp, DisableBatching: true})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				if _, err := p.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte(tag)}); err != nil {
					t.Fatal(err)
				}
			}
			p.Close()
		}
	}
	backlog := func(tp, s string) int64 {
		st, err := adminClient(t, tb).Topics().GetStats(mustTopic(t, tp))
		if err != nil {
			t.Fatal(err)
		}
		return st.Subscriptions[s].MsgBacklog
	}
	produce("old", 5)
	base := "/admin/v2/namespaces/" + ns
	mustHTTP(t, tb, "POST", base+"/clearBacklog/nope", "", http.StatusNotFound)
	mustHTTP(t, tb, "POST", base+"/clearBacklog/x", "", http.StatusNoContent)
	for _, tp := range topics {
		if bx, by := backlog(tp, "x"), backlog(tp, "y"); bx != 0 || by != 5 {
			t.Fatalf("%s after clearing x: backlog x %d y %d", tp, bx, by)
		}
	}
	mustHTTP(t, tb, "POST", base+"/0x00000000_0x40000000/clearBacklog", "", http.StatusNoContent) // one bundle of four
	mustHTTP(t, tb, "POST", base+"/0x00000000_0x12345678/clearBacklog", "", http.StatusPreconditionFailed)
	mustHTTP(t, tb, "POST", base+"/clearBacklog", "", http.StatusNoContent)
	produce("new", 3)
	for _, tp := range topics {
		for _, s := range []string{"x", "y"} {
			co, err := c.Subscribe(pulsar.ConsumerOptions{Topic: tp, SubscriptionName: s, Type: pulsar.Shared})
			if err != nil {
				t.Fatal(err)
			}
			consumers[tp+s] = co
			for _, m := range receiveN(t, co, 3) {
				if string(m.Payload()) != "new" {
					t.Fatalf("%s/%s got %q after clearBacklog", tp, s, m.Payload())
				}
				_ = co.Ack(m)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			m, err := co.Receive(ctx)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%s/%s: a fourth message %v %v", tp, s, m, err)
			}
			co.Close()
		}
	}
}

// TestEncryptionRequired: an unencrypted send to a namespace requiring
// encryption fails and stores nothing; the policy reads back.
func TestEncryptionRequired(t *testing.T) {
	tb := startBroker(t, nil)
	c := tb.client(t)
	ns := newNamespace(t, tb)
	base := "/admin/v2/namespaces/" + ns + "/encryptionRequired"
	mustHTTP(t, tb, "POST", base, "maybe", http.StatusPreconditionFailed)
	mustHTTP(t, tb, "POST", base, "true", http.StatusNoContent)
	if got := mustHTTP(t, tb, "GET", base, "", http.StatusOK); strings.TrimSpace(got) != "true" {
		t.Fatalf("encryptionRequired: %s", got)
	}
	topic := "persistent://" + ns + "/enc"
	p := brokertest.Producer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true, SendTimeout: time.Second})
	if _, err := p.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte("plain")}); err == nil {
		t.Fatal("an unencrypted message was accepted")
	}
	st, err := adminClient(t, tb).Topics().GetStats(mustTopic(t, topic))
	if err != nil || st.MsgCounterIn != 0 {
		t.Fatalf("stats after refused send: %+v %v", st, err)
	}
	mustHTTP(t, tb, "POST", base, "false", http.StatusNoContent)
	p2 := brokertest.Producer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if _, err := p2.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte("plain")}); err != nil {
		t.Fatalf("send after encryptionRequired=false: %v", err)
	}
}

// jsonEq reports whether two JSON texts hold equal values.
func jsonEq(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// TestNamespaceExtrasThroughPulsarAdmin drives the formerly-501
// namespace and topic endpoints with pulsar-client-go's admin client, so
// that paths, bodies and JSON field names are the ones it uses:
// persistence, anti-affinity, maxConsumersPerSubscription,
// encryptionRequired and the clearBacklog variants.
func TestNamespaceExtrasThroughPulsarAdmin(t *testing.T) {
	tb, ac := startAdmin(t)
	nsName := newNamespace(t, tb)
	ns, err := utils.GetNamespaceName(nsName)
	if err != nil {
		t.Fatal(err)
	}
	nss := ac.Namespaces()

	// persistence
	pp := utils.NewPersistencePolicies(3, 2, 1, 1.5)
	if err := nss.SetPersistence(nsName, pp); err != nil {
		t.Fatal(err)
	}
	if got, err := nss.GetPersistence(nsName); err != nil || *got != pp {
		t.Fatalf("GetPersistence: %+v %v, want %+v", got, err, pp)
	}
	if err := nss.SetPersistence(nsName, utils.NewPersistencePolicies(1, 2, 1, 0)); err == nil {
		t.Fatal("E < Qw was accepted")
	}
	if err := nss.RemovePersistence(nsName); err != nil {
		t.Fatal(err)
	}
	topic := mustTopic(t, "persistent://"+nsName+"/extras")
	if err := ac.Topics().Create(topic, 0); err != nil {
		t.Fatal(err)
	}
	td := utils.PersistenceData{BookkeeperEnsemble: 2, BookkeeperWriteQuorum: 2, BookkeeperAckQuorum: 2}
	if err := ac.Topics().SetPersistence(topic, td); err != nil {
		t.Fatal(err)
	}
	if got, err := ac.Topics().GetPersistence(topic); err != nil || *got != td {
		t.Fatalf("topic GetPersistence: %+v %v", got, err)
	}

	// anti-affinity
	if err := nss.SetNamespaceAntiAffinityGroup(nsName, "spread"); err != nil {
		t.Fatal(err)
	}
	if g, err := nss.GetNamespaceAntiAffinityGroup(nsName); err != nil || g != "spread" {
		t.Fatalf("GetNamespaceAntiAffinityGroup: %q %v", g, err)
	}
	members, err := nss.GetAntiAffinityNamespaces("public", brokeradmin.For(tb.Broker).Node.ClusterName(), "spread")
	if err != nil || !slices.Equal(members, []string{nsName}) {
		t.Fatalf("GetAntiAffinityNamespaces: %v %v", members, err)
	}
	if err := nss.DeleteNamespaceAntiAffinityGroup(nsName); err != nil {
		t.Fatal(err)
	}
	if members, err := nss.GetAntiAffinityNamespaces("public", brokeradmin.For(tb.Broker).Node.ClusterName(), "spread"); err != nil || len(members) != 0 {
		t.Fatalf("after delete: %v %v", members, err)
	}

	// maxConsumersPerSubscription
	if err := nss.SetMaxConsumersPerSubscription(*ns, 4); err != nil {
		t.Fatal(err)
	}
	if n, err := nss.GetMaxConsumersPerSubscription(*ns); err != nil || n != 4 {
		t.Fatalf("GetMaxConsumersPerSubscription: %d %v", n, err)
	}
	if err := ac.Topics().SetMaxConsumersPerSubscription(topic, 2); err != nil {
		t.Fatal(err)
	}
	if n, err := ac.Topics().GetMaxConsumersPerSubscription(topic); err != nil || n != 2 {
		t.Fatalf("topic GetMaxConsumersPerSubscription: %d %v", n, err)
	}
	if err := nss.RemoveMaxConsumersPerSubscription(*ns); err != nil {
		t.Fatal(err)
	}

	// encryptionRequired
	if err := nss.SetEncryptionRequiredStatus(*ns, true); err != nil {
		t.Fatal(err)
	}
	if got := mustHTTP(t, tb, "GET", "/admin/v2/namespaces/"+nsName+"/encryptionRequired", "", 200); strings.TrimSpace(got) != "true" {
		t.Fatalf("encryptionRequired: %s", got)
	}
	if err := nss.SetEncryptionRequiredStatus(*ns, false); err != nil {
		t.Fatal(err)
	}

	// clearBacklog, all four variants, on a real backlog
	c := tb.client(t)
	co, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic.String(), SubscriptionName: "sub"})
	if err != nil {
		t.Fatal(err)
	}
	co.Close()
	p := brokertest.Producer(t, c, pulsar.ProducerOptions{Topic: topic.String(), DisableBatching: true})
	clears := []struct {
		name string
		run  func() error
	}{
		{"namespace", func() error { return nss.ClearNamespaceBacklog(*ns) }},
		{"namespace+sub", func() error { return nss.ClearNamespaceBacklogForSubscription(*ns, "sub") }},
		{"every bundle", func() error {
			bs, err := bundlesOf(nss, nsName)
			if err != nil {
				return err
			}
			for i := 0; i+1 < len(bs.Boundaries); i++ {
				if err := nss.ClearNamespaceBundleBacklog(*ns, bs.Boundaries[i]+"_"+bs.Boundaries[i+1]); err != nil {
					return err
				}
			}
			return nil
		}},
		{"every bundle+sub", func() error {
			bs, err := bundlesOf(nss, nsName)
			if err != nil {
				return err
			}
			for i := 0; i+1 < len(bs.Boundaries); i++ {
				err := nss.ClearNamespaceBundleBacklogForSubscription(*ns, bs.Boundaries[i]+"_"+bs.Boundaries[i+1], "sub")
				if err != nil && !isStatus(err, 404) { // bundles without the topic have no "sub"
					return err
				}
			}
			return nil
		}},
	}
	for _, cl := range clears {
		for range 3 {
			if _, err := p.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
				t.Fatal(err)
			}
		}
		st, err := ac.Topics().GetStats(topic)
		if err != nil || st.Subscriptions["sub"].MsgBacklog != 3 {
			t.Fatalf("%s: backlog before %v %v", cl.name, st.Subscriptions["sub"].MsgBacklog, err)
		}
		if err := cl.run(); err != nil {
			t.Fatalf("%s: %v", cl.name, err)
		}
		if st, err := ac.Topics().GetStats(topic); err != nil || st.Subscriptions["sub"].MsgBacklog != 0 {
			t.Fatalf("%s: backlog after %v %v", cl.name, st.Subscriptions["sub"].MsgBacklog, err)
		}
	}
}

// isStatus reports whether err is an admin REST error with HTTP status
// code.
func isStatus(err error, code int) bool {
	var re rest.Error
	return errors.As(err, &re) && re.Code == code
}

// bundlesOf is the namespace's bundle split as its policies state it.
func bundlesOf(nss interface {
	GetPolicies(string) (*utils.Policies, error)
}, ns string) (*utils.BundlesData, error) {
	p, err := nss.GetPolicies(ns)
	if err != nil {
		return nil, err
	}
	if p.Bundles == nil || len(p.Bundles.Boundaries) < 2 {
		return nil, errors.New("policies state no bundles")
	}
	return p.Bundles, nil
}

// TestNamespaceProperties: PUT .../properties merges the body's keys into
// the namespace's properties, GET answers them all ({} when there are
// none), DELETE removes them all; an empty body or a property without a
// key is refused and changes nothing.
func TestNamespaceProperties(t *testing.T) {
	tb := startBroker(t, nil)
	const path = "/admin/v2/namespaces/public/default/properties"
	step := func(method, body string, wantCode int, wantBody string) {
		t.Helper()
		code, got := httpDo(t, tb, method, path, body)
		if code != wantCode || (wantBody != "" && got != wantBody) {
			t.Fatalf("%s %s %q: %d %q, want %d %q", method, path, body, code, got, wantCode, wantBody)
		}
	}
	step("GET", "", 200, `{}`)
	step("PUT", `{"a":"1"}`, 204, "")
	step("PUT", `{"b":"2","a":"3"}`, 204, "")
	step("GET", "", 200, `{"a":"3","b":"2"}`)
	step("PUT", "", 412, "")
	step("PUT", `{"":"x"}`, 412, "")
	step("GET", "", 200, `{"a":"3","b":"2"}`)
	step("DELETE", "", 204, "")
	step("GET", "", 200, `{}`)
}
