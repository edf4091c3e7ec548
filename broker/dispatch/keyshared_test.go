package dispatch

import (
	"fmt"
	"slices"
	"testing"

	"github.com/magnetar-mq/magnetar/broker/selector"
)

// keyInHalf returns the first key "k<i>" whose Key_Shared slot is in the
// upper (or lower) half of the hash range.
func keyInHalf(upper bool) string {
	for i := 0; ; i++ {
		if k := fmt.Sprintf("k%d", i); (selector.Slot([]byte(k)) >= 32768) == upper {
			return k
		}
	}
}

// TestKeySharedRecentlyJoinedConsumer: a consumer joining after entries
// were read gets no later entry until every earlier one is acknowledged.
func TestKeySharedRecentlyJoinedConsumer(t *testing.T) {
	cur := newFakeCursor()
	low := keyInHalf(false) // b's half once it joins
	high := keyInHalf(true) // a's half
	for i := 0; i < 10; i++ {
		cur.add(fakeEntry(1, []string{low, high}[i%2]))
	}
	s := testSub(t, KeyShared, cur)
	sink := newRecSink()
	a := newConsumer(1, "a", sink)
	addC(t, s, a, KeyShared)
	flow(s, a, 100)
	if got := sink.take(); len(got) != 10 {
		t.Fatalf("a got %d entries, want 10", len(got))
	}
	b := newConsumer(2, "b", sink)
	addC(t, s, b, KeyShared)
	for i := 10; i < 20; i++ {
		cur.add(fakeEntry(1, []string{low, high}[i%2]))
	}
	flow(s, b, 100)
	s.Wake()
	s.sync()
	for _, m := range sink.take() {
		if m.consumer == b.id {
			t.Fatalf("b got entry %d before a acknowledged what it read earlier", m.pos.EntryID)
		}
	}
	var joined string
	s.Call(func() { joined = b.joinPosString() })
	if joined != "1:10" {
		t.Fatalf("readPositionWhenJoining = %q, want 1:10", joined)
	}
	var ids []AckID
	for i := int64(0); i < 10; i++ {
		ids = append(ids, AckID{Pos: pos(i)})
	}
	s.Call(func() { s.Ack(a, false, ids) })
	s.sync()
	var toB []int64
	for _, m := range sink.take() {
		if m.consumer == b.id {
			toB = append(toB, m.pos.EntryID)
		}
	}
	if !slices.Equal(toB, []int64{10, 12, 14, 16, 18}) {
		t.Fatalf("after the acks b got %v, want its keys' entries [10 12 14 16 18]", toB)
	}
}
