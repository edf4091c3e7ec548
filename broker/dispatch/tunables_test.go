package dispatch

import (
	"slices"
	"testing"
)

// A change of the dispatcher read batch (dispatcherMaxReadBatchSize,
// changed at run time by the dynamic configuration) reaches a running
// subscription at its next read.
func TestSubscriptionReadBatchFollowsUpdate(t *testing.T) {
	cur := newFakeCursor()
	for range 100 {
		cur.add(fakeEntry(1, ""))
	}
	s := testSub(t, Shared, cur)
	sink := newRecSink()
	c := newConsumer(1, "c", sink)
	addC(t, s, c, Shared)
	flow(s, c, 20)
	s.sync()
	cur.mu.Lock()
	before := slices.Clone(cur.asked)
	cur.asked = nil
	cur.mu.Unlock()
	if len(before) == 0 || slices.Max(before) != 10 {
		t.Fatalf("reads before the change asked for %v, want at most 10 (the batch) and one of 10", before)
	}
	s.batch.Store(3) // what Broker.SetDispatchBatch does
	flow(s, c, 1000)
	s.sync()
	cur.mu.Lock()
	after := slices.Clone(cur.asked)
	cur.mu.Unlock()
	if len(after) == 0 || slices.Max(after) != 3 {
		t.Fatalf("reads after the change asked for %v, want at most 3 and one of 3", after)
	}
	if got := len(sink.take()); got != 100 {
		t.Fatalf("delivered %d, want 100", got)
	}
}
