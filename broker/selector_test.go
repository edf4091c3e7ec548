package broker

import (
	"fmt"
	"testing"
)

func mkConsumer(id uint64, name string, permits int) *consumer {
	c := newConsumer(id, name, nil)
	c.permits = permits
	c.arrivalKey = id
	return c
}

func TestExclusiveSelector(t *testing.T) {
	s := &exclusiveSelector{}
	a, b := mkConsumer(1, "a", 1), mkConsumer(2, "b", 1)
	if r := s.add(a); r != "" {
		t.Fatalf("add a: %q", r)
	}
	if r := s.add(b); r == "" {
		t.Fatalf("second consumer on exclusive accepted")
	}
	if got := s.pick(nil); got != a {
		t.Fatalf("pick = %v, want a", got)
	}
	a.permits = 0
	if got := s.pick(nil); got != nil {
		t.Fatalf("pick without permits = %v, want nil", got)
	}
	s.remove(a)
	if r := s.add(b); r != "" {
		t.Fatalf("add after remove: %q", r)
	}
}

func TestFailoverSelectorOrder(t *testing.T) {
	s := &failoverSelector{}
	c := mkConsumer(3, "c", 5)
	b := mkConsumer(2, "b", 5)
	a := mkConsumer(1, "a", 5)
	s.add(c)
	if s.active() != c {
		t.Fatalf("active = %s, want c", s.active().name)
	}
	s.add(b)
	s.add(a)
	if s.active() != a {
		t.Fatalf("active = %s, want a (lowest name)", s.active().name)
	}
	a.priority, b.priority = 1, 0
	s.remove(a)
	s.add(a)
	if s.active() != b {
		t.Fatalf("active = %s, want b (lowest priority level)", s.active().name)
	}
	// Partition 1 of a partitioned topic takes index 1 % n.
	p := &failoverSelector{partition: 1}
	x, y := mkConsumer(1, "x", 1), mkConsumer(2, "y", 1)
	p.add(x)
	p.add(y)
	if p.active() != y {
		t.Fatalf("partition 1 active = %s, want y", p.active().name)
	}
}

func TestSharedSelectorRoundRobin(t *testing.T) {
	s := &sharedSelector{}
	cs := []*consumer{mkConsumer(1, "a", 2), mkConsumer(2, "b", 2), mkConsumer(3, "c", 0)}
	for _, c := range cs {
		s.add(c)
	}
	var got []string
	for i := 0; i < 5; i++ {
		c := s.pick(nil)
		if c == nil {
			got = append(got, "-")
			continue
		}
		c.permits--
		got = append(got, c.name)
	}
	if fmt.Sprint(got) != "[a b a b -]" {
		t.Fatalf("picks = %v, want [a b a b -]", got)
	}
}

func TestKeySharedConsistentStable(t *testing.T) {
	s := &keySharedSelector{consistent: true}
	cs := []*consumer{mkConsumer(1, "a", 100), mkConsumer(2, "b", 100), mkConsumer(3, "c", 100)}
	for _, c := range cs {
		if r := s.add(c); r != "" {
			t.Fatal(r)
		}
	}
	owners := map[string]*consumer{}
	used := map[*consumer]int{}
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("key-%d", i)
		c := s.pick([]byte(k))
		if c == nil {
			t.Fatalf("no owner for %s", k)
		}
		owners[k] = c
		used[c]++
	}
	if len(used) != 3 {
		t.Fatalf("keys spread over %d consumers, want 3", len(used))
	}
	for k, c := range owners {
		if again := s.pick([]byte(k)); again != c {
			t.Fatalf("key %s moved from %s to %s", k, c.name, again.name)
		}
	}
	// Removing a consumer only moves its own keys.
	s.remove(cs[2])
	for k, c := range owners {
		if c != cs[2] && s.pick([]byte(k)) != c {
			t.Fatalf("key %s of a surviving consumer moved", k)
		}
	}
	// An owner without permits blocks its keys (nil), not reroutes them.
	cs[0].permits = 0
	for k, c := range owners {
		if c == cs[0] && s.pick([]byte(k)) != nil {
			t.Fatalf("key %s rerouted while its owner has no permits", k)
		}
	}
}

func TestKeySharedSticky(t *testing.T) {
	s := &keySharedSelector{sticky: true}
	a, b := mkConsumer(1, "a", 10), mkConsumer(2, "b", 10)
	a.ranges = []hashRange{{0, 32767}}
	b.ranges = []hashRange{{32000, 65535}}
	if r := s.add(a); r != "" {
		t.Fatal(r)
	}
	if r := s.add(b); r == "" {
		t.Fatal("overlapping sticky ranges accepted")
	}
	b.ranges = []hashRange{{32768, 65535}}
	if r := s.add(b); r != "" {
		t.Fatal(r)
	}
	for i := 0; i < 100; i++ {
		k := []byte(fmt.Sprint(i))
		want := a
		if keySlot(k) > 32767 {
			want = b
		}
		if got := s.pick(k); got != want {
			t.Fatalf("key %s slot %d -> %s", k, keySlot(k), got.name)
		}
	}
}

func TestMurmur3KnownValues(t *testing.T) {
	// Reference values of MurmurHash3_x86_32 with seed 0.
	for _, tc := range []struct {
		in   string
		want uint32
	}{
		{"", 0},
		{"hello", 0x248bfa47},
		{"hello, world", 0x149bbb7f},
		{"The quick brown fox jumps over the lazy dog", 0x2e4ff723},
	} {
		if got := murmur3([]byte(tc.in)); got != tc.want {
			t.Errorf("murmur3(%q) = %#x, want %#x", tc.in, got, tc.want)
		}
	}
}
