package broker

import (
	"fmt"
	"slices"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
)

func TestKeySharedAutoSplitRanges(t *testing.T) {
	s := &keySharedSelector{}
	a, b, c := mkConsumer(1, "a", 100), mkConsumer(2, "b", 100), mkConsumer(3, "c", 100)
	want := func(what string, c *consumer, ranges ...string) {
		t.Helper()
		if got := s.rangesOf(c); !slices.Equal(got, ranges) {
			t.Fatalf("%s: ranges of %s = %v, want %v", what, c.name, got, ranges)
		}
	}
	for _, x := range []*consumer{a, b, c} {
		if r := s.add(x); r != "" {
			t.Fatal(r)
		}
	}
	// a had everything; b took the lower half; c the lower half of the
	// first largest range (b's).
	want("three", a, "[32768, 65535]")
	want("three", b, "[16384, 32767]")
	want("three", c, "[0, 16383]")
	for _, k := range []string{"x", "y", "z", "key-1", "key-2", "key-3", "key-4"} {
		slot := keySlot([]byte(k))
		exp := a
		switch {
		case slot <= 16383:
			exp = c
		case slot <= 32767:
			exp = b
		}
		if got := s.pick([]byte(k)); got != exp {
			t.Fatalf("key %q slot %d -> %s, want %s", k, slot, got.name, exp.name)
		}
	}
	// b leaves: its range goes to the next range's consumer (a).
	s.remove(b)
	want("b left", a, "[16384, 65535]")
	want("b left", c, "[0, 16383]")
	// a (the last range) leaves: the previous consumer takes it.
	s.remove(a)
	want("a left", c, "[0, 65535]")
	if s.pick([]byte("anything")) != c {
		t.Fatal("the remaining consumer does not own every key")
	}
	s.remove(c)
	if s.pick([]byte("anything")) != nil {
		t.Fatal("a key has an owner with no consumers")
	}
}

func TestKeySharedStickyRangeBounds(t *testing.T) {
	s := &keySharedSelector{sticky: true}
	a := mkConsumer(1, "a", 10)
	a.ranges = []hashRange{{0, 65536}}
	if r := s.add(a); r == "" {
		t.Fatal("a range past slot 65535 was accepted")
	}
	a.ranges = []hashRange{{10, 5}}
	if r := s.add(a); r == "" {
		t.Fatal("an inverted range was accepted")
	}
	a.ranges = []hashRange{{0, 65535}}
	if r := s.add(a); r != "" {
		t.Fatal(r)
	}
}

// keysIn returns n keys whose slots are in [lo, hi].
func keysIn(n, lo, hi int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		k := fmt.Sprintf("k%d", i)
		if s := keySlot([]byte(k)); s >= lo && s <= hi {
			out = append(out, k)
		}
	}
	return out
}

// TestKeySharedRecentlyJoinedConsumer: a consumer joining after entries
// were read gets no later entry until every earlier one is acknowledged.
func TestKeySharedRecentlyJoinedConsumer(t *testing.T) {
	cur := newFakeCursor()
	low := keysIn(2, 0, 32767)[0]      // b's half once it joins
	high := keysIn(1, 32768, 65535)[0] // a's half
	for i := 0; i < 10; i++ {
		cur.add(fakeEntry(1, []string{low, high}[i%2]))
	}
	s := testSub(t, SubKeyShared, cur)
	sink := newRecSink()
	a := newConsumer(1, "a", sink)
	addC(t, s, a, SubKeyShared)
	flow(s, a, 100)
	if got := sink.take(); len(got) != 10 {
		t.Fatalf("a got %d entries, want 10", len(got))
	}
	b := newConsumer(2, "b", sink)
	addC(t, s, b, SubKeyShared)
	for i := 10; i < 20; i++ {
		cur.add(fakeEntry(1, []string{low, high}[i%2]))
	}
	flow(s, b, 100)
	s.wake()
	s.sync()
	for _, m := range sink.take() {
		if m.consumer == b.id {
			t.Fatalf("b got entry %d before a acknowledged what it read earlier", m.pos.EntryID)
		}
	}
	var joined string
	s.call(func() { joined = b.joinPosString() })
	if joined != "1:10" {
		t.Fatalf("readPositionWhenJoining = %q, want 1:10", joined)
	}
	var ids []AckID
	for i := int64(0); i < 10; i++ {
		ids = append(ids, AckID{Pos: pos(i)})
	}
	s.call(func() { s.ackLocked(a, false, ids) })
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

// TestE2EKeySharedAutoSplitThreeKeys: in the default auto-split mode two
// consumers share three keys spread over both halves of the hash range:
// both receive, each key stays on one consumer, in order.
func TestE2EKeySharedAutoSplitThreeKeys(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("ks")
	keys := []string{"alpha", "beta", "gamma"}
	var lower, upper int
	for _, k := range keys {
		if keySlot([]byte(k)) < keySlots/2 {
			lower++
		} else {
			upper++
		}
	}
	if lower == 0 || upper == 0 {
		t.Fatalf("test keys do not span both halves (%d/%d)", lower, upper)
	}
	var cs []pulsar.Consumer
	for i := 0; i < 2; i++ {
		cs = append(cs, mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.KeyShared,
			Name: fmt.Sprintf("c%d", i)}))
	}
	p := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	const n = 30
	sendAsyncAll(t, p, n, func(i int) *pulsar.ProducerMessage {
		return &pulsar.ProducerMessage{Key: keys[i%3], Payload: []byte(fmt.Sprint(i))}
	})
	owner := map[string]int{}
	last := map[string]int{}
	counts := make([]int, 2)
	receiveAcross(t, cs, n, func(i int, m pulsar.Message) {
		counts[i]++
		k := m.Key()
		if o, ok := owner[k]; ok && o != i {
			t.Errorf("key %s went to consumers %d and %d", k, o, i)
		}
		owner[k] = i
		var seq int
		fmt.Sscan(string(m.Payload()), &seq)
		if l, ok := last[k]; ok && seq < l {
			t.Errorf("key %s out of order: %d after %d", k, seq, l)
		}
		last[k] = seq
		cs[i].Ack(m)
	})
	t.Logf("three keys over two consumers: %v", counts)
	if counts[0] == 0 || counts[1] == 0 {
		t.Fatalf("a consumer received nothing: %v", counts)
	}
}

// TestE2EKeySharedStickyRanges: consumers declaring sticky hash ranges
// in their KeySharedMeta get exactly the keys of their ranges; a consumer
// whose range overlaps another's is refused.
func TestE2EKeySharedStickyRanges(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("sticky")
	sticky := func(lo, hi int) *pulsar.KeySharedPolicy {
		p, err := pulsar.NewKeySharedPolicySticky([]int{lo, hi})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	low := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.KeyShared, KeySharedPolicy: sticky(0, 32767)})
	high := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.KeyShared, KeySharedPolicy: sticky(32768, 65535)})
	if c, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.KeyShared,
		KeySharedPolicy: sticky(30000, 40000)}); err == nil {
		c.Close()
		t.Fatal("a consumer with an overlapping sticky range was accepted")
	}
	keys := append(keysIn(3, 0, 32767), keysIn(3, 32768, 65535)...)
	p := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendAsyncAll(t, p, len(keys)*4, func(i int) *pulsar.ProducerMessage {
		return &pulsar.ProducerMessage{Key: keys[i%len(keys)], Payload: []byte("x")}
	})
	receiveAcross(t, []pulsar.Consumer{low, high}, len(keys)*4, func(i int, m pulsar.Message) {
		slot := keySlot([]byte(m.Key()))
		if (i == 0) != (slot <= 32767) {
			t.Errorf("key %s (slot %d) went to consumer %d", m.Key(), slot, i)
		}
	})
}
