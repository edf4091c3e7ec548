package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/mledger/memstore"
)

// TestPersistencePolicyValidatedAndPersisted: E >= Qw >= Qa >= 1 is
// enforced at namespace and topic level, a good value round-trips and
// survives a restart, the topic value is what ?applied reports.
func TestPersistencePolicyValidatedAndPersisted(t *testing.T) {
	r := &restartable{dir: t.TempDir(), ledgers: memstore.New()}
	tb := r.start(t)
	t.Cleanup(func() { r.stop() })
	ns := newNamespace(t, tb)
	base := "/admin/v2/namespaces/" + ns + "/persistence"
	if got := mustHTTP(t, tb, "GET", base, "", http.StatusOK); strings.TrimSpace(got) != "null" {
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
	if got := mustHTTP(t, tb, "GET", base, "", http.StatusOK); strings.TrimSpace(got) != "null" {
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
	if got := mustHTTP(t, tb, "GET", base, "", http.StatusOK); strings.TrimSpace(got) != "null" {
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
	cl := tb.ClusterName()
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
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true, SendTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte("plain")}); err == nil {
		t.Fatal("an unencrypted message was accepted")
	}
	st, err := adminClient(t, tb).Topics().GetStats(mustTopic(t, topic))
	if err != nil || st.MsgCounterIn != 0 {
		t.Fatalf("stats after refused send: %+v %v", st, err)
	}
	mustHTTP(t, tb, "POST", base, "false", http.StatusNoContent)
	p2, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
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
