package bundle

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
)

func TestEvenFour(t *testing.T) {
	b, err := Even(4)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"0x00000000_0x40000000", "0x40000000_0x80000000", "0x80000000_0xc0000000", "0xc0000000_0xffffffff"}
	rs := b.Ranges()
	if len(rs) != len(want) {
		t.Fatalf("Even(4) = %v", rs)
	}
	for i, r := range rs {
		if r.String() != want[i] {
			t.Fatalf("range %d = %s, want %s", i, r, want[i])
		}
	}
	js, _ := json.Marshal(b)
	if got := string(js); got != `{"boundaries":["0x00000000","0x40000000","0x80000000","0xc0000000","0xffffffff"],"numBundles":4}` {
		t.Fatalf("json = %s", got)
	}
}

func TestEvenOddCountLastAbsorbsRest(t *testing.T) {
	b, _ := Even(3)
	rs := b.Ranges()
	// seg = 2^32/3 = 0x55555555
	if rs[1].Lower != 0x55555555 || rs[2].Lower != 0xaaaaaaaa || rs[2].Upper != FullUpper {
		t.Fatalf("Even(3) = %v", rs)
	}
	if _, err := Even(0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Even(0) err = %v", err)
	}
	if _, err := Even(MaxCount + 1); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Even(129) err = %v", err)
	}
}

// The worked example of docs/cluster.md, computed with the same CRC-32 as
// Pulsar's Guava Hashing.crc32().
func TestTopicHashMatchesPulsar(t *testing.T) {
	b, _ := Even(4)
	cases := []struct {
		topic string
		hash  uint32
		rng   string
	}{
		{"persistent://public/default/my-topic", 0x2bad45f7, "0x00000000_0x40000000"},
		{"persistent://public/default/my-topic-partition-1", 0x4a4c72a3, "0x40000000_0x80000000"},
	}
	for _, c := range cases {
		if h := Hash(c.topic); h != c.hash {
			t.Fatalf("Hash(%q) = %#x, want %#x", c.topic, h, c.hash)
		}
		if r := b.ForTopic(c.topic); r.String() != c.rng {
			t.Fatalf("ForTopic(%q) = %s, want %s", c.topic, r, c.rng)
		}
	}
}

func TestFindBoundaries(t *testing.T) {
	b, _ := Even(4)
	cases := []struct {
		h    uint32
		want string
	}{
		{0, "0x00000000_0x40000000"},
		{0x3fffffff, "0x00000000_0x40000000"},
		{0x40000000, "0x40000000_0x80000000"}, // exact hit: that bundle
		{0xbfffffff, "0x80000000_0xc0000000"},
		{0xc0000000, "0xc0000000_0xffffffff"},
		{math.MaxUint32, "0xc0000000_0xffffffff"}, // the inclusive top
	}
	for _, c := range cases {
		r := b.Find(c.h)
		if r.String() != c.want || !r.Contains(c.h) {
			t.Fatalf("Find(%#x) = %s, want %s", c.h, r, c.want)
		}
	}
	one, _ := Even(1)
	if r := one.Find(math.MaxUint32); r.String() != "0x00000000_0xffffffff" {
		t.Fatalf("full bundle Find = %s", r)
	}
}

func TestParseRange(t *testing.T) {
	r, err := ParseRange("0x40000000_0x80000000")
	if err != nil || r != (Range{0x40000000, 0x80000000}) {
		t.Fatalf("ParseRange = %v, %v", r, err)
	}
	for _, bad := range []string{"", "0x1", "0x2_0x1", "0x0_0x100000000", "zz_0x1", "0x1_0x1"} {
		if _, err := ParseRange(bad); !errors.Is(err, ErrInvalid) {
			t.Fatalf("ParseRange(%q) err = %v", bad, err)
		}
	}
}

func TestSplit(t *testing.T) {
	b, _ := Even(4)
	r := b.Ranges()[0]
	s, err := b.Split(r, Middle(r))
	if err != nil {
		t.Fatal(err)
	}
	if s.Count() != 5 || s.Ranges()[0].String() != "0x00000000_0x20000000" || s.Ranges()[1].String() != "0x20000000_0x40000000" {
		t.Fatalf("split = %v", s.Ranges())
	}
	if b.Count() != 4 {
		t.Fatal("Split modified its receiver")
	}
	for _, p := range []uint32{0, 0x40000000} {
		if _, err := b.Split(r, p); !errors.Is(err, ErrCannotSplit) {
			t.Fatalf("Split at %#x err = %v", p, err)
		}
	}
	if _, err := b.Split(Range{1, 2}, 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Split of unknown range err = %v", err)
	}
	narrow, _ := FromBoundaries([]uint32{0, 1, FullUpper})
	if _, err := narrow.Split(Range{0, 1}, Middle(Range{0, 1})); !errors.Is(err, ErrCannotSplit) {
		t.Fatalf("split of width-1 bundle err = %v", err)
	}
	// Split of the last (inclusive) bundle.
	last := b.Ranges()[3]
	s2, err := b.Split(last, Middle(last))
	if err != nil || s2.Ranges()[4].Upper != FullUpper || !s2.Ranges()[4].Contains(math.MaxUint32) {
		t.Fatalf("split last: %v %v", s2.Ranges(), err)
	}
}

func TestSplitByTopics(t *testing.T) {
	full, _ := Even(1)
	r := full.Ranges()[0]
	topics := []string{"persistent://t/n/a", "persistent://t/n/b", "persistent://t/n/c", "persistent://t/n/d"}
	p, ok := SplitByTopics(r, topics)
	if !ok {
		t.Fatal("no split point")
	}
	s, err := full.Split(r, p)
	if err != nil {
		t.Fatal(err)
	}
	n := map[Range]int{}
	for _, tp := range topics {
		n[s.ForTopic(tp)]++
	}
	for rr, c := range n {
		if c != 2 {
			t.Fatalf("after split %s holds %d topics, want 2 each (%v)", rr, c, n)
		}
	}
	if _, ok := SplitByTopics(r, topics[:1]); ok {
		t.Fatal("split point from one topic")
	}
}

func TestParseBundlesData(t *testing.T) {
	b, err := Parse([]byte(`{"boundaries":["0x00000000","0x80000000","0xffffffff"],"numBundles":2}`))
	if err != nil || b.Count() != 2 {
		t.Fatalf("Parse = %v, %v", b.Ranges(), err)
	}
	b, err = Parse([]byte(`{"numBundles":16}`))
	if err != nil || b.Count() != 16 {
		t.Fatalf("Parse count only = %v, %v", b.Count(), err)
	}
	for _, bad := range []string{`{"boundaries":["0x00000001","0xffffffff"]}`, `{"boundaries":["0x0","0x5","0x5","0xffffffff"]}`, `{"boundaries":["0x0","0xfffffffe"]}`, `[`} {
		if _, err := Parse([]byte(bad)); !errors.Is(err, ErrInvalid) {
			t.Fatalf("Parse(%s) err = %v", bad, err)
		}
	}
}
