package broker

import (
	"slices"
	"testing"
)

func addC(t *testing.T, s *subscription, c *consumer, typ SubType) {
	t.Helper()
	var r string
	s.call(func() { r = s.addConsumerLocked(c, typ, false) })
	if r != "" {
		t.Fatalf("add consumer %s: %s", c.name, r)
	}
}

func flow(s *subscription, c *consumer, n int) { s.call(func() { s.flowLocked(c, n) }) }

func positions(ms []sentMsg) []int64 {
	var out []int64
	for _, m := range ms {
		out = append(out, m.pos.EntryID)
	}
	return out
}

func TestSubscriptionExclusivePermitsCountMessages(t *testing.T) {
	cur := newFakeCursor()
	for i := 0; i < 5; i++ {
		cur.add(fakeEntry(3, "")) // batches of 3 messages
	}
	s := testSub(t, SubExclusive, cur)
	sink := newRecSink()
	c := newConsumer(7, "c", sink)
	addC(t, s, c, SubExclusive)
	s.sync()
	if got := sink.take(); len(got) != 0 {
		t.Fatalf("sent %d messages before FLOW", len(got))
	}
	flow(s, c, 4) // 4 permits: batch 0 (3), batch 1 (overshoot to -2)
	if got := positions(sink.take()); !slices.Equal(got, []int64{0, 1}) {
		t.Fatalf("after FLOW 4 sent %v, want [0 1]", got)
	}
	flow(s, c, 2) // permits back to 0: nothing
	if got := sink.take(); len(got) != 0 {
		t.Fatalf("sent %v with no net permits", positions(got))
	}
	flow(s, c, 100)
	if got := positions(sink.take()); !slices.Equal(got, []int64{2, 3, 4}) {
		t.Fatalf("sent %v, want [2 3 4]", got)
	}
	// New entries arrive and are dispatched on wake.
	cur.add(fakeEntry(1, ""))
	s.wake()
	s.sync()
	if got := positions(sink.take()); !slices.Equal(got, []int64{5}) {
		t.Fatalf("after wake sent %v, want [5]", got)
	}
	var unacked int
	s.call(func() { unacked = c.unackedMsg })
	if unacked != 16 {
		t.Fatalf("unacked = %d, want 16", unacked)
	}
	s.call(func() { s.ackLocked(c, true, []AckID{{Pos: pos(3)}}) })
	s.call(func() { unacked = c.unackedMsg })
	if unacked != 4 {
		t.Fatalf("unacked after cumulative ack = %d, want 4", unacked)
	}
}

func TestSubscriptionSharedRedeliveryOnClose(t *testing.T) {
	cur := newFakeCursor()
	for i := 0; i < 6; i++ {
		cur.add(fakeEntry(1, ""))
	}
	s := testSub(t, SubShared, cur)
	sink := newRecSink()
	a, b := newConsumer(1, "a", sink), newConsumer(2, "b", sink)
	addC(t, s, a, SubShared)
	addC(t, s, b, SubShared)
	flow(s, a, 3)
	flow(s, b, 10)
	got := sink.take()
	per := map[uint64][]int64{}
	for _, m := range got {
		per[m.consumer] = append(per[m.consumer], m.pos.EntryID)
	}
	if len(per[1]) != 3 || len(per[2]) != 3 {
		t.Fatalf("distribution %v, want 3 each", per)
	}
	// a acks one and closes: its other two go to b with redelivery count 1.
	s.call(func() { s.ackLocked(a, false, []AckID{{Pos: pos(per[1][0])}}) })
	var empty bool
	s.call(func() { empty = s.removeConsumerLocked(a) })
	if empty {
		t.Fatal("subscription reported empty with b attached")
	}
	got = sink.take()
	if len(got) != 2 {
		t.Fatalf("redelivered %d entries, want 2", len(got))
	}
	for _, m := range got {
		if m.consumer != 2 || m.redelivered != 1 {
			t.Fatalf("redelivery %+v, want consumer 2 count 1", m)
		}
		if !slices.Contains(per[1][1:], m.pos.EntryID) {
			t.Fatalf("redelivered %d which a did not hold unacked", m.pos.EntryID)
		}
	}
}

func TestSubscriptionNackShared(t *testing.T) {
	cur := newFakeCursor()
	for i := 0; i < 3; i++ {
		cur.add(fakeEntry(1, ""))
	}
	s := testSub(t, SubShared, cur)
	sink := newRecSink()
	a := newConsumer(1, "a", sink)
	addC(t, s, a, SubShared)
	flow(s, a, 10)
	sink.take()
	s.call(func() { s.redeliverLocked(a, []position{pos(1)}) })
	got := sink.take()
	if len(got) != 1 || got[0].pos != pos(1) || got[0].redelivered != 1 {
		t.Fatalf("nack redelivery = %+v, want entry 1 with count 1", got)
	}
	s.call(func() { s.redeliverLocked(a, []position{pos(1)}) })
	if got := sink.take(); len(got) != 1 || got[0].redelivered != 2 {
		t.Fatalf("second nack = %+v, want count 2", got)
	}
}

func TestSubscriptionExclusiveRedeliverAllInOrder(t *testing.T) {
	cur := newFakeCursor()
	for i := 0; i < 4; i++ {
		cur.add(fakeEntry(1, ""))
	}
	s := testSub(t, SubExclusive, cur)
	sink := newRecSink()
	a := newConsumer(1, "a", sink)
	addC(t, s, a, SubExclusive)
	flow(s, a, 2)
	sink.take()
	s.call(func() { s.ackLocked(a, false, []AckID{{Pos: pos(0)}}) })
	s.call(func() { s.redeliverLocked(a, []position{pos(1)}) })
	flow(s, a, 10)
	if got := positions(sink.take()); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Fatalf("after redeliver-all sent %v, want [1 2 3]", got)
	}
}

func TestSubscriptionFailoverActiveChange(t *testing.T) {
	cur := newFakeCursor()
	for i := 0; i < 4; i++ {
		cur.add(fakeEntry(1, ""))
	}
	s := testSub(t, SubFailover, cur)
	sink := newRecSink()
	b := newConsumer(2, "b", sink)
	addC(t, s, b, SubFailover)
	flow(s, b, 10)
	if got := positions(sink.take()); len(got) != 4 {
		t.Fatalf("b got %v, want all 4", got)
	}
	a := newConsumer(1, "a", sink)
	addC(t, s, a, SubFailover) // "a" sorts first: becomes active
	s.call(func() { s.notifyActiveLocked(a) })
	sink.mu.Lock()
	act := map[uint64]bool{1: sink.active[1], 2: sink.active[2]}
	sink.mu.Unlock()
	if !act[1] || act[2] {
		t.Fatalf("active flags %v, want a active, b inactive", act)
	}
	flow(s, a, 10)
	got := sink.take()
	if len(got) != 4 {
		t.Fatalf("new active got %d entries, want 4 moved from b", len(got))
	}
	for _, m := range got {
		if m.consumer != 1 {
			t.Fatalf("entry %v went to %d after the change", m.pos, m.consumer)
		}
	}
}

func TestSubscriptionKeySharedPerKeyOrder(t *testing.T) {
	cur := newFakeCursor()
	keys := []string{"k1", "k2", "k3", "k4", "k5", "k6"}
	for i := 0; i < 60; i++ {
		cur.add(fakeEntry(1, keys[i%len(keys)]))
	}
	s := testSub(t, SubKeyShared, cur)
	sink := newRecSink()
	a, b := newConsumer(1, "a", sink), newConsumer(2, "b", sink)
	addC(t, s, a, SubKeyShared)
	addC(t, s, b, SubKeyShared)
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

func TestSubscriptionBatchIndexAckSet(t *testing.T) {
	cur := newFakeCursor()
	cur.add(fakeEntry(4, ""))
	s := testSub(t, SubShared, cur)
	sink := newRecSink()
	a := newConsumer(1, "a", sink)
	addC(t, s, a, SubShared)
	flow(s, a, 10)
	sink.take()
	// Ack indexes 0 and 2 (clear bits), then nack: redelivery carries
	// the remaining set {1,3}.
	s.call(func() { s.ackLocked(a, false, []AckID{{Pos: pos(0), AckSet: []int64{0b1010}, BatchSize: 4}}) })
	s.call(func() { s.redeliverLocked(a, []position{pos(0)}) })
	got := sink.take()
	if len(got) != 1 || !slices.Equal(got[0].ackSet, []int64{0b1010}) {
		t.Fatalf("redelivery = %+v, want ack_set [0b1010]", got)
	}
	s.call(func() { s.ackLocked(a, false, []AckID{{Pos: pos(0), AckSet: []int64{0b0101}, BatchSize: 4}}) })
	var unacked int
	s.call(func() { unacked = a.unackedMsg })
	if unacked != 0 || !cur.IsAcked(pos(0)) {
		t.Fatalf("after acking all indexes unacked=%d acked=%v", unacked, cur.IsAcked(pos(0)))
	}
}

func TestSubscriptionSeekDisconnects(t *testing.T) {
	cur := newFakeCursor()
	for i := 0; i < 5; i++ {
		cur.add(fakeEntry(1, ""))
	}
	s := testSub(t, SubExclusive, cur)
	sink := newRecSink()
	a := newConsumer(1, "a", sink)
	addC(t, s, a, SubExclusive)
	flow(s, a, 10)
	sink.take()
	s.call(func() {
		if err := s.seekLocked(pos(2), false, 0); err != nil {
			t.Error(err)
		}
		s.disconnectAllLocked(true)
	})
	if !slices.Equal(sink.closed, []uint64{1}) {
		t.Fatalf("closed %v, want [1]", sink.closed)
	}
	a2 := newConsumer(1, "a", sink)
	addC(t, s, a2, SubExclusive)
	flow(s, a2, 10)
	if got := positions(sink.take()); !slices.Equal(got, []int64{2, 3, 4}) {
		t.Fatalf("after seek sent %v, want [2 3 4]", got)
	}
}

func TestSubscriptionReadsNoFurtherThanPermits(t *testing.T) {
	cur := newFakeCursor()
	for i := 0; i < 10; i++ {
		cur.add(fakeEntry(1, ""))
	}
	s := testSub(t, SubExclusive, cur)
	sink := newRecSink()
	c := newConsumer(1, "c", sink)
	addC(t, s, c, SubExclusive)
	flow(s, c, 2)
	cur.mu.Lock()
	read := cur.read
	cur.mu.Unlock()
	if got := positions(sink.take()); !slices.Equal(got, []int64{0, 1}) || read != 2 {
		t.Fatalf("sent %v, cursor read up to %d; want [0 1] and 2", got, read)
	}
}

// TestSubscriptionPendingKeepsPositions: delivered entries keep no bytes;
// a redelivery re-reads them from the cursor's storage in one read, and
// an entry no longer stored is dropped instead of blocking the others.
func TestSubscriptionPendingKeepsPositions(t *testing.T) {
	cur := newFakeCursor()
	for i := 0; i < 5; i++ {
		cur.add(fakeEntry(1, "k"))
	}
	s := testSub(t, SubShared, cur)
	sink := newRecSink()
	a := newConsumer(1, "a", sink)
	addC(t, s, a, SubShared)
	flow(s, a, 10)
	if got := positions(sink.take()); !slices.Equal(got, []int64{0, 1, 2, 3, 4}) {
		t.Fatalf("sent %v", got)
	}
	s.call(func() {
		for pos, pe := range a.pending {
			if pe.data != nil {
				t.Errorf("pending %v keeps %d bytes", pos, len(pe.data))
			}
		}
	})
	cur.mu.Lock()
	cur.entries[2] = nil // trimmed from storage
	reads := cur.reads
	cur.mu.Unlock()
	b := newConsumer(2, "b", sink)
	addC(t, s, b, SubShared)
	s.call(func() { s.removeConsumerLocked(a) })
	flow(s, b, 10)
	got := sink.take()
	if p := positions(got); !slices.Equal(p, []int64{0, 1, 3, 4}) {
		t.Fatalf("redelivered %v, want [0 1 3 4]", p)
	}
	for _, m := range got {
		if m.consumer != 2 || m.redelivered != 1 || len(m.data) != 5 {
			t.Fatalf("redelivery %+v", m)
		}
	}
	cur.mu.Lock()
	if cur.reads <= reads {
		t.Fatal("redelivery did not re-read")
	}
	cur.mu.Unlock()
	var unacked int
	s.call(func() { unacked = b.unackedMsg + s.unacked })
	if unacked != 8 {
		t.Fatalf("consumer+subscription unacked %d, want 4+4", unacked)
	}
}

// TestSubscriptionRedeliverySkipsGoneBatches: a whole dispatch batch of
// redeliveries no longer stored does not stall the rest.
func TestSubscriptionRedeliverySkipsGoneBatches(t *testing.T) {
	cur := newFakeCursor()
	for i := 0; i < 25; i++ {
		cur.add(fakeEntry(1, ""))
	}
	s := testSub(t, SubShared, cur) // dispatch batch 10
	sink := newRecSink()
	a := newConsumer(1, "a", sink)
	addC(t, s, a, SubShared)
	flow(s, a, 100)
	if got := len(sink.take()); got != 25 {
		t.Fatalf("sent %d", got)
	}
	cur.mu.Lock()
	for i := 0; i < 15; i++ {
		cur.entries[i] = nil
	}
	cur.mu.Unlock()
	b := newConsumer(2, "b", sink)
	addC(t, s, b, SubShared)
	s.call(func() { s.removeConsumerLocked(a) })
	flow(s, b, 100)
	want := []int64{15, 16, 17, 18, 19, 20, 21, 22, 23, 24}
	if got := positions(sink.take()); !slices.Equal(got, want) {
		t.Fatalf("redelivered %v, want %v", got, want)
	}
}
