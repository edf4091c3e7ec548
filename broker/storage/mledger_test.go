package storage

import (
	"context"
	"errors"
	"testing"

	"github.com/magnetar-mq/magnetar/metadata/memmeta"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/mledger/memstore"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"google.golang.org/protobuf/proto"
)

// openLedger opens a managed ledger through Opener over in-memory
// storage and appends entries published at the given times (unix ms).
func openLedger(t *testing.T, published ...int64) ManagedLedger {
	t.Helper()
	f, err := mledger.NewFactory(mledger.Options{Ledgers: memstore.New(), Metadata: memmeta.New()})
	if err != nil {
		t.Fatal(err)
	}
	ml, err := Opener(f, mledger.Config{})(context.Background(), "persistent://t/ns/backlog")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ml.Close() })
	for i, ts := range published {
		md, err := proto.Marshal(&pb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(uint64(i)), PublishTime: proto.Uint64(uint64(ts))})
		if err != nil {
			t.Fatal(err)
		}
		entry := pulsarproto.AppendEntry(make([]byte, mledger.EntryHeadroom, 256), md, []byte("x"))
		done := make(chan error, 1)
		ml.AddEntry(entry, mledger.EntryHeadroom, 1, func(_ Position, err error) { done <- err })
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	return ml
}

// TestLedgerCursorBacklogOps: the storage side of the admin API's skip
// and expire and of the stats' earliest publish time, on a real managed
// ledger: expiry acknowledges exactly the entries published before the
// cutoff, never moving back; skipping takes entries off the front;
// skipping everything empties the backlog.
func TestLedgerCursorBacklogOps(t *testing.T) {
	ml := openLedger(t, 1000, 2000, 3000, 4000, 5000)
	c, err := ml.OpenCursor("s", InitialEarliest)
	if err != nil {
		t.Fatal(err)
	}
	lc, ok := c.(*LedgerCursor)
	if !ok || ManagedCursor(c) == nil || lc.Ledger() == nil {
		t.Fatalf("cursor %T is not Opener's", c)
	}
	backlog := func() int64 { n, _ := c.Backlog(); return n }
	if got := lc.EarliestPublish(); got != 1000 || backlog() != 5 {
		t.Fatalf("earliest %d, backlog %d; want 1000, 5", got, backlog())
	}
	ctx := context.Background()
	p, found, err := lc.FirstPublishedAt(ctx, 2500)
	if err != nil || !found {
		t.Fatalf("FirstPublishedAt(2500) = %v, %v, %v", p, found, err)
	}
	if err := lc.AckBefore(p, found); err != nil {
		t.Fatal(err)
	}
	if got := lc.EarliestPublish(); got != 3000 || backlog() != 3 {
		t.Fatalf("after expiring before 2500: earliest %d, backlog %d; want 3000, 3", got, backlog())
	}
	// An earlier cutoff does not move the cursor back.
	p, found, _ = lc.FirstPublishedAt(ctx, 1500)
	if err := lc.AckBefore(p, found); err != nil || backlog() != 3 {
		t.Fatalf("expiring before 1500 again: %v, backlog %d, want 3", err, backlog())
	}
	if err := lc.Skip(1); err != nil || backlog() != 2 || lc.EarliestPublish() != 4000 {
		t.Fatalf("skip 1: %v, backlog %d, earliest %d", err, backlog(), lc.EarliestPublish())
	}
	if _, found, _ := lc.FirstPublishedAt(ctx, 9000); found {
		t.Fatal("an entry published at or after 9000 was found")
	}
	if err := lc.AckBefore(Position{}, false); err != nil || backlog() != 0 || lc.EarliestPublish() != 0 {
		t.Fatalf("expiring everything: %v, backlog %d, earliest %d", err, backlog(), lc.EarliestPublish())
	}
	if err := lc.Skip(-1); err != nil {
		t.Fatalf("skipping an empty backlog: %v", err)
	}
}

// TestErrorsMapped: the adapter's errors match the storage errors the
// core tests for.
func TestErrorsMapped(t *testing.T) {
	ml := openLedger(t, 1000)
	if err := ml.DeleteCursor("none"); !errors.Is(err, ErrCursorNotFound) {
		t.Fatalf("DeleteCursor of a missing cursor: %v, want ErrCursorNotFound", err)
	}
	if _, err := ml.Terminate(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	ml.AddEntry(make([]byte, mledger.EntryHeadroom+8), mledger.EntryHeadroom, 1, func(_ Position, err error) { done <- err })
	if err := <-done; !errors.Is(err, ErrTerminated) {
		t.Fatalf("add after Terminate: %v, want ErrTerminated", err)
	}
	if _, err := ml.ReadEntry(Position{LedgerID: 1 << 40, EntryID: 0}); err == nil {
		t.Fatal("reading a position never stored succeeded")
	}
}
