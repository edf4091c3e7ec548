package mledger_test

import (
	"context"
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/metadata/memmeta"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
)

// quorumRecorder records the quorum each Create asks for.
type quorumRecorder struct {
	*memstore.Store
	mu   sync.Mutex
	seen []any // mledger.Quorum, or nil for "store default"
}

func (r *quorumRecorder) Create(ctx context.Context) (mledger.WriteLedger, error) {
	q, ok := mledger.QuorumFrom(ctx)
	r.mu.Lock()
	if ok {
		r.seen = append(r.seen, q)
	} else {
		r.seen = append(r.seen, nil)
	}
	r.mu.Unlock()
	return r.Store.Create(ctx)
}

// TestConfigQuorumReachesEveryCreate: a managed ledger opened with a
// Quorum asks the store for it on every ledger it creates (first ledger,
// rollovers, cursor ledgers); one opened without asks for nothing.
func TestConfigQuorumReachesEveryCreate(t *testing.T) {
	rec := &quorumRecorder{Store: memstore.New()}
	f, err := mledger.NewFactory(mledger.Options{Ledgers: rec, Metadata: memmeta.New(), TickInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	q := mledger.Quorum{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2}
	ml, err := f.Open(ctx, "with-quorum", mledger.Config{Quorum: q, MaxEntriesPerLedger: 2, MinLedgerRolloverTime: -1})
	if err != nil {
		t.Fatal(err)
	}
	c, err := ml.OpenCursor(ctx, "c", mledger.InitialEarliest)
	if err != nil {
		t.Fatal(err)
	}
	addMany(t, ml, "x", 5)
	if err := c.MarkDelete(add(t, ml, "y", 1)); err != nil {
		t.Fatal(err)
	}
	if err := ml.Close(ctx); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	seen := append([]any(nil), rec.seen...)
	rec.seen = nil
	rec.mu.Unlock()
	if len(seen) < 3 {
		t.Fatalf("%d creates for 5 entries at 2 per ledger", len(seen))
	}
	for i, s := range seen {
		if s != q {
			t.Fatalf("create %d asked for %v, want %v", i, s, q)
		}
	}
	ml2, err := f.Open(ctx, "without", mledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	add(t, ml2, "x", 1)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, s := range rec.seen {
		if s != nil {
			t.Fatalf("create %d without a Quorum asked for %v", i, s)
		}
	}
}
