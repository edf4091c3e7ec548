package broker

import (
	"context"
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// placementRecorder records the placement each ledger Create asks for
// (nil: none).
type placementRecorder struct {
	*memstore.Store
	mu   sync.Mutex
	seen []any
}

func (r *placementRecorder) Create(ctx context.Context) (mledger.WriteLedger, error) {
	var v any
	if p, ok := mledger.PlacementFrom(ctx); ok {
		v = p
	}
	r.mu.Lock()
	r.seen = append(r.seen, v)
	r.mu.Unlock()
	return r.Store.Create(ctx)
}

func (r *placementRecorder) take() []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.seen
	r.seen = nil
	return out
}

// TestBookieAffinityOfNewLedgers: the ledgers of a topic of a namespace
// with a bookie affinity group are created with its groups (the ledger
// store places them, package ledger); a namespace without one asks for
// none; changing the group reopens the topic and its new ledgers ask for
// the new groups.
func TestBookieAffinityOfNewLedgers(t *testing.T) {
	rec := &placementRecorder{Store: memstore.New()}
	tb := startBrokerOpts(t, brokerOpts{ledgers: rec, use: []func(*Broker) error{followPolicies}})
	ctx := context.Background()
	pols := tb.Policies()
	g := &policy.BookieAffinityGroup{Primary: "g1,g2", Secondary: "g3"}
	if err := pols.CreateNamespace(ctx, "public/iso", &policy.Policies{NamespaceExtras: policy.NamespaceExtras{BookieAffinityGroup: g}}); err != nil {
		t.Fatal(err)
	}
	if err := pols.CreateNamespace(ctx, "public/any", &policy.Policies{}); err != nil {
		t.Fatal(err)
	}
	check := func(what string, want any) {
		t.Helper()
		got := rec.take()
		if len(got) == 0 {
			t.Fatalf("%s: no ledger was created", what)
		}
		for i, p := range got {
			if p != want {
				t.Fatalf("%s: create %d asked for %v, want %v (all: %v)", what, i, p, want, got)
			}
		}
	}
	dialRaw(t, tb, true).producer("persistent://public/any/t")
	check("no affinity", nil)
	r := dialRaw(t, tb, true)
	r.producer("persistent://public/iso/t")
	check("namespace affinity", mledger.Placement{Primary: "g1,g2", Secondary: "g3"})
	if err := pols.Update(ctx, "public/iso", func(p *policy.Policies) error {
		p.BookieAffinityGroup = &policy.BookieAffinityGroup{Primary: "g4"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for f := r.next(); f.Type != pb.BaseCommand_CLOSE_PRODUCER; f = r.next() {
	}
	dialRaw(t, tb, true).producer("persistent://public/iso/t")
	check("changed affinity", mledger.Placement{Primary: "g4"})
}
