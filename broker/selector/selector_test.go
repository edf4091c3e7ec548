package selector

import (
	"fmt"
	"slices"
	"testing"
)

// fake is a consumer as a selector sees it.
type fake struct {
	name     string
	priority int
	permits  int
	arrival  uint64
	ranges   []Range
}

func (c *fake) Available() bool { return c.permits > 0 }
func (c *fake) Priority() int   { return c.priority }
func (c *fake) Name() string    { return c.name }
func (c *fake) Arrival() uint64 { return c.arrival }
func (c *fake) Ranges() []Range { return c.ranges }

func mk(id uint64, name string, permits int) *fake {
	return &fake{name: name, permits: permits, arrival: id}
}

func TestExclusiveSelector(t *testing.T) {
	s := &Exclusive[*fake]{}
	a, b := mk(1, "a", 1), mk(2, "b", 1)
	if r := s.Add(a); r != "" {
		t.Fatalf("add a: %q", r)
	}
	if r := s.Add(b); r == "" {
		t.Fatalf("second consumer on exclusive accepted")
	}
	if got := s.Pick(nil); got != a {
		t.Fatalf("pick = %v, want a", got)
	}
	a.permits = 0
	if got := s.Pick(nil); got != nil {
		t.Fatalf("pick without permits = %v, want nil", got)
	}
	s.Remove(a)
	if r := s.Add(b); r != "" {
		t.Fatalf("add after remove: %q", r)
	}
}

func TestFailoverSelectorOrder(t *testing.T) {
	s := &Failover[*fake]{}
	c := mk(3, "c", 5)
	b := mk(2, "b", 5)
	a := mk(1, "a", 5)
	s.Add(c)
	if s.Active() != c {
		t.Fatalf("active = %s, want c", s.Active().name)
	}
	s.Add(b)
	s.Add(a)
	if s.Active() != a {
		t.Fatalf("active = %s, want a (lowest name)", s.Active().name)
	}
	a.priority, b.priority = 1, 0
	s.Remove(a)
	s.Add(a)
	if s.Active() != b {
		t.Fatalf("active = %s, want b (lowest priority level)", s.Active().name)
	}
	// Partition 1 of a partitioned topic takes index 1 % n.
	p := &Failover[*fake]{partition: 1}
	x, y := mk(1, "x", 1), mk(2, "y", 1)
	p.Add(x)
	p.Add(y)
	if p.Active() != y {
		t.Fatalf("partition 1 active = %s, want y", p.Active().name)
	}
}

func TestSharedSelectorRoundRobin(t *testing.T) {
	s := &Shared[*fake]{}
	cs := []*fake{mk(1, "a", 2), mk(2, "b", 2), mk(3, "c", 0)}
	for _, c := range cs {
		s.Add(c)
	}
	var got []string
	for i := 0; i < 5; i++ {
		c := s.Pick(nil)
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
	s := &KeyShared[*fake]{consistent: true}
	cs := []*fake{mk(1, "a", 100), mk(2, "b", 100), mk(3, "c", 100)}
	for _, c := range cs {
		if r := s.Add(c); r != "" {
			t.Fatal(r)
		}
	}
	owners := map[string]*fake{}
	used := map[*fake]int{}
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("key-%d", i)
		c := s.Pick([]byte(k))
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
		if again := s.Pick([]byte(k)); again != c {
			t.Fatalf("key %s moved from %s to %s", k, c.name, again.name)
		}
	}
	// Removing a consumer only moves its own keys.
	s.Remove(cs[2])
	for k, c := range owners {
		if c != cs[2] && s.Pick([]byte(k)) != c {
			t.Fatalf("key %s of a surviving consumer moved", k)
		}
	}
	// An owner without permits blocks its keys (nil), not reroutes them.
	cs[0].permits = 0
	for k, c := range owners {
		if c == cs[0] && s.Pick([]byte(k)) != nil {
			t.Fatalf("key %s rerouted while its owner has no permits", k)
		}
	}
}

func TestKeySharedSticky(t *testing.T) {
	s := &KeyShared[*fake]{sticky: true}
	a, b := mk(1, "a", 10), mk(2, "b", 10)
	a.ranges = []Range{{0, 32767}}
	b.ranges = []Range{{32000, 65535}}
	if r := s.Add(a); r != "" {
		t.Fatal(r)
	}
	if r := s.Add(b); r == "" {
		t.Fatal("overlapping sticky ranges accepted")
	}
	b.ranges = []Range{{32768, 65535}}
	if r := s.Add(b); r != "" {
		t.Fatal(r)
	}
	for i := 0; i < 100; i++ {
		k := []byte(fmt.Sprint(i))
		want := a
		if Slot(k) > 32767 {
			want = b
		}
		if got := s.Pick(k); got != want {
			t.Fatalf("key %s slot %d -> %s", k, Slot(k), got.name)
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
		if got := Murmur3([]byte(tc.in)); got != tc.want {
			t.Errorf("Murmur3(%q) = %#x, want %#x", tc.in, got, tc.want)
		}
	}
}

func TestKeySharedAutoSplitRanges(t *testing.T) {
	s := &KeyShared[*fake]{}
	a, b, c := mk(1, "a", 100), mk(2, "b", 100), mk(3, "c", 100)
	want := func(what string, c *fake, ranges ...string) {
		t.Helper()
		if got := s.RangesOf(c); !slices.Equal(got, ranges) {
			t.Fatalf("%s: ranges of %s = %v, want %v", what, c.name, got, ranges)
		}
	}
	for _, x := range []*fake{a, b, c} {
		if r := s.Add(x); r != "" {
			t.Fatal(r)
		}
	}
	// a had everything; b took the lower half; c the lower half of the
	// first largest range (b's).
	want("three", a, "[32768, 65535]")
	want("three", b, "[16384, 32767]")
	want("three", c, "[0, 16383]")
	for _, k := range []string{"x", "y", "z", "key-1", "key-2", "key-3", "key-4"} {
		slot := Slot([]byte(k))
		exp := a
		switch {
		case slot <= 16383:
			exp = c
		case slot <= 32767:
			exp = b
		}
		if got := s.Pick([]byte(k)); got != exp {
			t.Fatalf("key %q slot %d -> %s, want %s", k, slot, got.name, exp.name)
		}
	}
	// b leaves: its range goes to the next range's consumer (a).
	s.Remove(b)
	want("b left", a, "[16384, 65535]")
	want("b left", c, "[0, 16383]")
	// a (the last range) leaves: the previous consumer takes it.
	s.Remove(a)
	want("a left", c, "[0, 65535]")
	if s.Pick([]byte("anything")) != c {
		t.Fatal("the remaining consumer does not own every key")
	}
	s.Remove(c)
	if s.Pick([]byte("anything")) != nil {
		t.Fatal("a key has an owner with no consumers")
	}
}

func TestKeySharedStickyRangeBounds(t *testing.T) {
	s := &KeyShared[*fake]{sticky: true}
	a := mk(1, "a", 10)
	a.ranges = []Range{{0, 65536}}
	if r := s.Add(a); r == "" {
		t.Fatal("a range past slot 65535 was accepted")
	}
	a.ranges = []Range{{10, 5}}
	if r := s.Add(a); r == "" {
		t.Fatal("an inverted range was accepted")
	}
	a.ranges = []Range{{0, 65535}}
	if r := s.Add(a); r != "" {
		t.Fatal(r)
	}
}
