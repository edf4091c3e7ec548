package dispatch

import (
	"testing"
)

func addC(t *testing.T, s *Subscription, c *Consumer, typ Type) {
	t.Helper()
	var r string
	s.Call(func() { r = s.AddConsumer(c, typ, false) })
	if r != "" {
		t.Fatalf("add consumer %s: %s", c.name, r)
	}
}

func flow(s *Subscription, c *Consumer, n int) { s.Call(func() { s.Flow(c, n) }) }

func TestSubscriptionKeySharedPerKeyOrder(t *testing.T) {
	cur := newFakeCursor()
	keys := []string{"k1", "k2", "k3", "k4", "k5", "k6"}
	for i := 0; i < 60; i++ {
		cur.add(fakeEntry(1, keys[i%len(keys)]))
	}
	s := testSub(t, KeyShared, cur)
	sink := newRecSink()
	a, b := newConsumer(1, "a", sink), newConsumer(2, "b", sink)
	addC(t, s, a, KeyShared)
	addC(t, s, b, KeyShared)
	flow(s, a, 7)
	flow(s, b, 100)
	for i := 0; i < 20; i++ {
		flow(s, a, 3)
	}
	got := sink.take()
	if len(got) != 60 {
		t.Fatalf("delivered %d, want 60", len(got))
	}
	owner := map[string]uint64{}
	last := map[string]int64{}
	for _, m := range got {
		k := keys[m.pos.EntryID%int64(len(keys))]
		if o, ok := owner[k]; ok && o != m.consumer {
			t.Fatalf("key %s delivered to %d and %d", k, o, m.consumer)
		}
		owner[k] = m.consumer
		if l, ok := last[k]; ok && l > m.pos.EntryID {
			t.Fatalf("key %s out of order: %d after %d", k, m.pos.EntryID, l)
		}
		last[k] = m.pos.EntryID
	}
}
