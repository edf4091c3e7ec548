package broker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// quorumRecorder records the quorum each ledger Create asks for (nil:
// the store's default).
type quorumRecorder struct {
	*memstore.Store
	mu   sync.Mutex
	seen []any
}

func (r *quorumRecorder) Create(ctx context.Context) (mledger.WriteLedger, error) {
	var v any
	if q, ok := mledger.QuorumFrom(ctx); ok {
		v = q
	}
	r.mu.Lock()
	r.seen = append(r.seen, v)
	r.mu.Unlock()
	return r.Store.Create(ctx)
}

// take returns and forgets what was recorded.
func (r *quorumRecorder) take() []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.seen
	r.seen = nil
	return out
}

// TestPersistencePolicyQuorumOfNewLedgers: a topic of a namespace with a
// persistence policy creates its ledgers with that E/Qw/Qa; a topic
// without one leaves the store's default; changing the policy unloads
// the topic (its producer gets CLOSE_PRODUCER) and the reloaded topic's
// new ledger has the new quorum.
func TestPersistencePolicyQuorumOfNewLedgers(t *testing.T) {
	rec := &quorumRecorder{Store: memstore.New()}
	tb := startBrokerOpts(t, brokerOpts{ledgers: rec, use: []func(*Broker) error{followPolicies}})
	ctx := context.Background()
	pols := tb.Policies()
	first := &policy.PersistencePolicies{BookkeeperEnsemble: 3, BookkeeperWriteQuorum: 2, BookkeeperAckQuorum: 2}
	if err := pols.CreateNamespace(ctx, "public/pers", &policy.Policies{NamespaceExtras: policy.NamespaceExtras{Persistence: first}}); err != nil {
		t.Fatal(err)
	}
	if err := pols.CreateNamespace(ctx, "public/plain", &policy.Policies{}); err != nil {
		t.Fatal(err)
	}
	check := func(what string, want any) {
		t.Helper()
		got := rec.take()
		if len(got) == 0 {
			t.Fatalf("%s: no ledger was created", what)
		}
		for i, q := range got {
			if q != want {
				t.Fatalf("%s: create %d asked for %v, want %v (all: %v)", what, i, q, want, got)
			}
		}
	}
	dialRaw(t, tb, true).producer("persistent://public/plain/t")
	check("no policy", nil)
	r := dialRaw(t, tb, true)
	r.producer("persistent://public/pers/t")
	check("namespace policy", mledger.Quorum{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2})

	if err := pols.Update(ctx, "public/pers", func(p *policy.Policies) error {
		p.Persistence = &policy.PersistencePolicies{BookkeeperEnsemble: 2, BookkeeperWriteQuorum: 2, BookkeeperAckQuorum: 1}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for f := r.next(); f.Type != pb.BaseCommand_CLOSE_PRODUCER; f = r.next() {
	}
	dialRaw(t, tb, true).producer("persistent://public/pers/t")
	check("changed policy", mledger.Quorum{Ensemble: 2, WriteQuorum: 2, AckQuorum: 1})
}

// TestInactiveTopicNoMinimum: a negative
// DeleteInactiveTopicsMaxInactiveDuration (Pulsar's
// brokerDeleteInactiveTopicsMaxInactiveDurationSeconds=0) is a broker
// default of no minimum inactivity, not the frequency.
func TestInactiveTopicNoMinimum(t *testing.T) {
	for _, c := range []struct {
		set  time.Duration
		want int
	}{{-1, 0}, {0, 60}, {90 * time.Second, 90}} {
		tb := startBroker(t, func(cfg *brokerconf.Config) { cfg.DeleteInactiveTopicsMaxInactiveDuration = c.set })
		if got := tb.PolicyDefaults().InactiveTopic.MaxInactiveDurationSeconds; got != c.want {
			t.Errorf("MaxInactiveDuration %v: default policy %d s, want %d", c.set, got, c.want)
		}
	}
}
