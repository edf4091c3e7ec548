package selector

import (
	"fmt"
	"slices"
	"strconv"
)

// Slots is the size of the Key_Shared hash ring.
const Slots = 65536

// Slot maps a routing key onto [0, Slots).
func Slot(key []byte) int {
	return int(Murmur3(key) % Slots)
}

// Range is an inclusive range of Key_Shared slots.
type Range struct{ Start, End int }

// KeyShared routes every key to one consumer, by the key's slot
// (Murmur3 % Slots) in one of three modes:
//
//   - auto-split (Pulsar's default, subscriptionKeySharedUseConsistentHashing
//     false): the slots are cut into one contiguous range per consumer.
//     The first consumer owns [0, 65535]; a new consumer takes the lower
//     half of the largest range (the first of equal ones); a leaving
//     consumer's range goes to the consumer of the next range (the last
//     range goes to the previous one).
//   - consistent hashing: each consumer owns pointsPerConsumer points on
//     a hash ring; a key belongs to the first point at or after its hash.
//   - sticky: consumers declare their slot ranges, which must not
//     overlap; a key in no range is not delivered.
type KeyShared[C Consumer] struct {
	sticky     bool
	consistent bool
	cs         []C
	ring       []ringPoint[C]  // consistent: sorted by hash
	splits     []splitRange[C] // auto-split: sorted by end
}

// splitRange is the auto-split range (previous end, end] of c.
type splitRange[C Consumer] struct {
	end int
	c   C
}

type ringPoint[C Consumer] struct {
	hash uint32
	c    C
}

const pointsPerConsumer = 100

// Sticky reports whether the consumers declare their ranges.
func (s *KeyShared[C]) Sticky() bool { return s.sticky }

// Add implements Selector.
func (s *KeyShared[C]) Add(c C) string {
	if s.sticky {
		ranges := c.Ranges()
		if len(ranges) == 0 {
			return "Key_Shared sticky consumer declared no hash ranges"
		}
		for _, r := range ranges {
			if r.Start < 0 || r.End >= Slots || r.Start > r.End {
				return fmt.Sprintf("Key_Shared hash range [%d, %d] is not within [0, %d]", r.Start, r.End, Slots-1)
			}
		}
		for _, o := range s.cs {
			for _, a := range o.Ranges() {
				for _, b := range ranges {
					if a.Start <= b.End && b.Start <= a.End {
						return "Range conflict with consumer " + o.Name()
					}
				}
			}
		}
		s.cs = append(s.cs, c)
		return ""
	}
	if len(s.cs) > 0 && len(c.Ranges()) > 0 {
		return "Key_Shared mode mismatch"
	}
	if !s.consistent {
		if r := s.split(c); r != "" {
			return r
		}
		s.cs = append(s.cs, c)
		return ""
	}
	s.cs = append(s.cs, c)
	var b []byte
	for i := 0; i < pointsPerConsumer; i++ {
		b = append(b[:0], c.Name()...)
		b = strconv.AppendUint(b, c.Arrival(), 10)
		b = append(b, '/')
		b = strconv.AppendInt(b, int64(i), 10)
		s.ring = append(s.ring, ringPoint[C]{Murmur3(b), c})
	}
	slices.SortStableFunc(s.ring, func(a, b ringPoint[C]) int {
		switch {
		case a.hash < b.hash:
			return -1
		case a.hash > b.hash:
			return 1
		}
		return 0
	})
	return ""
}

// split gives c the lower half of the largest auto-split range.
func (s *KeyShared[C]) split(c C) string {
	if len(s.splits) == 0 {
		s.splits = []splitRange[C]{{Slots - 1, c}}
		return ""
	}
	best, bestSize, start := -1, 0, 0
	for i, r := range s.splits {
		if size := r.end - start + 1; size > bestSize {
			best, bestSize = i, size
		}
		start = r.end + 1
	}
	if bestSize < 2 {
		return "No more hash range to split for a new consumer"
	}
	lo := 0
	if best > 0 {
		lo = s.splits[best-1].end + 1
	}
	mid := lo + (s.splits[best].end-lo)/2
	s.splits = slices.Insert(s.splits, best, splitRange[C]{mid, c})
	return ""
}

// RangesOf returns the slot ranges c owns ("[start, end]"), for stats.
func (s *KeyShared[C]) RangesOf(c C) []string {
	var out []string
	if s.sticky {
		for _, r := range c.Ranges() {
			out = append(out, fmt.Sprintf("[%d, %d]", r.Start, r.End))
		}
		return out
	}
	start := 0
	for _, r := range s.splits {
		if r.c == c {
			out = append(out, fmt.Sprintf("[%d, %d]", start, r.end))
		}
		start = r.end + 1
	}
	return out
}

// Remove implements Selector.
func (s *KeyShared[C]) Remove(c C) {
	if i := slices.Index(s.cs, c); i >= 0 {
		s.cs = slices.Delete(s.cs, i, i+1)
	}
	s.ring = slices.DeleteFunc(s.ring, func(p ringPoint[C]) bool { return p.c == c })
	if i := slices.IndexFunc(s.splits, func(r splitRange[C]) bool { return r.c == c }); i >= 0 {
		if i == len(s.splits)-1 && i > 0 {
			// The last range goes to the previous consumer.
			s.splits[i].c = s.splits[i-1].c
			s.splits = slices.Delete(s.splits, i-1, i)
		} else {
			// Its range goes to the consumer of the next range.
			s.splits = slices.Delete(s.splits, i, i+1)
		}
	}
}

// owner returns the consumer owning key regardless of permits (ok false:
// none).
func (s *KeyShared[C]) owner(key []byte) (C, bool) {
	var zero C
	if len(s.cs) == 0 {
		return zero, false
	}
	if s.sticky {
		slot := Slot(key)
		for _, c := range s.cs {
			for _, r := range c.Ranges() {
				if slot >= r.Start && slot <= r.End {
					return c, true
				}
			}
		}
		return zero, false
	}
	if !s.consistent {
		slot := Slot(key)
		i, _ := slices.BinarySearchFunc(s.splits, slot, func(r splitRange[C], slot int) int { return r.end - slot })
		if i == len(s.splits) {
			return zero, false
		}
		return s.splits[i].c, true
	}
	h := Murmur3(key)
	i, _ := slices.BinarySearchFunc(s.ring, h, func(p ringPoint[C], h uint32) int {
		switch {
		case p.hash < h:
			return -1
		case p.hash > h:
			return 1
		}
		return 0
	})
	if i == len(s.ring) {
		i = 0
	}
	return s.ring[i].c, true
}

// Pick implements Selector.
func (s *KeyShared[C]) Pick(key []byte) C {
	if c, ok := s.owner(key); ok && c.Available() {
		return c
	}
	var zero C
	return zero
}

// List implements Selector.
func (s *KeyShared[C]) List() []C { return s.cs }
