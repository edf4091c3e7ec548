package admin

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// TestNamespaceExtrasThroughPulsarAdmin drives the formerly-501
// namespace and topic endpoints with pulsar-client-go's admin client, so
// that paths, bodies and JSON field names are the ones it uses:
// persistence, anti-affinity, maxConsumersPerSubscription,
// encryptionRequired and the clearBacklog variants.
func TestNamespaceExtrasThroughPulsarAdmin(t *testing.T) {
	tb := startBroker(t, nil)
	ac := adminClient(t, tb)
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
	members, err := nss.GetAntiAffinityNamespaces("public", tb.ClusterName(), "spread")
	if err != nil || !slices.Equal(members, []string{nsName}) {
		t.Fatalf("GetAntiAffinityNamespaces: %v %v", members, err)
	}
	if err := nss.DeleteNamespaceAntiAffinityGroup(nsName); err != nil {
		t.Fatal(err)
	}
	if members, err := nss.GetAntiAffinityNamespaces("public", tb.ClusterName(), "spread"); err != nil || len(members) != 0 {
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
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic.String(), DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
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
