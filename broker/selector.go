package broker

import (
	"fmt"
	"slices"
	"strconv"
)

// A selector decides which consumer of a subscription receives an entry.
// One implementation per subscription type. Selectors are owned by their
// subscription's loop goroutine and are not safe for concurrent use; they
// see consumers only through the dispatchTarget view so tests can drive
// them without sockets or storage.
type selector interface {
	// add registers c. It returns ErrConsumerBusy-style refusals as a
	// non-empty reason.
	add(c *consumer) (refusal string)
	// remove unregisters c.
	remove(c *consumer)
	// pick returns the consumer that must receive an entry routed by key,
	// or nil if that consumer (or every consumer) has no permits now.
	pick(key []byte) *consumer
	// list returns the registered consumers in selection order.
	list() []*consumer
}

// exclusiveSelector serves one consumer.
type exclusiveSelector struct{ c *consumer }

func (s *exclusiveSelector) add(c *consumer) string {
	if s.c != nil {
		return "Exclusive consumer is already connected"
	}
	s.c = c
	return ""
}

func (s *exclusiveSelector) remove(c *consumer) {
	if s.c == c {
		s.c = nil
	}
}

func (s *exclusiveSelector) pick([]byte) *consumer {
	if s.c != nil && s.c.available() {
		return s.c
	}
	return nil
}

func (s *exclusiveSelector) list() []*consumer {
	if s.c == nil {
		return nil
	}
	return []*consumer{s.c}
}

// failoverSelector delivers everything to one active consumer: the one at
// index partition % n of the consumers sorted by (priority, name, arrival);
// partition is 0 for a non-partitioned topic.
type failoverSelector struct {
	partition int
	cs        []*consumer
	seq       uint64
}

func (s *failoverSelector) add(c *consumer) string {
	s.seq++
	c.arrival = s.seq
	s.cs = append(s.cs, c)
	slices.SortStableFunc(s.cs, func(a, b *consumer) int {
		if a.priority != b.priority {
			return a.priority - b.priority
		}
		if a.name != b.name {
			if a.name < b.name {
				return -1
			}
			return 1
		}
		if a.arrival < b.arrival {
			return -1
		}
		return 1
	})
	return ""
}

func (s *failoverSelector) remove(c *consumer) {
	if i := slices.Index(s.cs, c); i >= 0 {
		s.cs = slices.Delete(s.cs, i, i+1)
	}
}

// active returns the active consumer, or nil when there is none.
func (s *failoverSelector) active() *consumer {
	if len(s.cs) == 0 {
		return nil
	}
	return s.cs[s.partition%len(s.cs)]
}

func (s *failoverSelector) pick([]byte) *consumer {
	if a := s.active(); a != nil && a.available() {
		return a
	}
	return nil
}

func (s *failoverSelector) list() []*consumer { return s.cs }

// sharedSelector round-robins entries over consumers that have permits.
type sharedSelector struct {
	cs   []*consumer
	next int
}

func (s *sharedSelector) add(c *consumer) string {
	s.cs = append(s.cs, c)
	return ""
}

func (s *sharedSelector) remove(c *consumer) {
	if i := slices.Index(s.cs, c); i >= 0 {
		s.cs = slices.Delete(s.cs, i, i+1)
		if s.next > i {
			s.next--
		}
	}
}

func (s *sharedSelector) pick([]byte) *consumer {
	n := len(s.cs)
	for i := 0; i < n; i++ {
		if s.next >= n {
			s.next = 0
		}
		c := s.cs[s.next]
		s.next++
		if c.available() {
			return c
		}
	}
	return nil
}

func (s *sharedSelector) list() []*consumer { return s.cs }

// hashRange is an inclusive range of Key_Shared slots.
type hashRange struct{ start, end int }

// keySharedSelector routes every key to one consumer, by the key's slot
// (murmur3 % keySlots) in one of three modes:
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
type keySharedSelector struct {
	sticky     bool
	consistent bool
	cs         []*consumer
	ring       []ringPoint  // consistent: sorted by hash
	splits     []splitRange // auto-split: sorted by end
}

// splitRange is the auto-split range (previous end, end] of c.
type splitRange struct {
	end int
	c   *consumer
}

type ringPoint struct {
	hash uint32
	c    *consumer
}

const pointsPerConsumer = 100

func (s *keySharedSelector) add(c *consumer) string {
	if s.sticky {
		if len(c.ranges) == 0 {
			return "Key_Shared sticky consumer declared no hash ranges"
		}
		for _, r := range c.ranges {
			if r.start < 0 || r.end >= keySlots || r.start > r.end {
				return fmt.Sprintf("Key_Shared hash range [%d, %d] is not within [0, %d]", r.start, r.end, keySlots-1)
			}
		}
		for _, o := range s.cs {
			for _, a := range o.ranges {
				for _, b := range c.ranges {
					if a.start <= b.end && b.start <= a.end {
						return "Range conflict with consumer " + o.name
					}
				}
			}
		}
		s.cs = append(s.cs, c)
		return ""
	}
	if len(s.cs) > 0 && len(c.ranges) > 0 {
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
		b = append(b[:0], c.name...)
		b = strconv.AppendUint(b, c.arrivalKey, 10)
		b = append(b, '/')
		b = strconv.AppendInt(b, int64(i), 10)
		s.ring = append(s.ring, ringPoint{murmur3(b), c})
	}
	slices.SortStableFunc(s.ring, func(a, b ringPoint) int {
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
func (s *keySharedSelector) split(c *consumer) string {
	if len(s.splits) == 0 {
		s.splits = []splitRange{{keySlots - 1, c}}
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
	s.splits = slices.Insert(s.splits, best, splitRange{mid, c})
	return ""
}

// rangesOf returns the slot ranges c owns ("[start, end]"), for stats.
func (s *keySharedSelector) rangesOf(c *consumer) []string {
	var out []string
	if s.sticky {
		for _, r := range c.ranges {
			out = append(out, fmt.Sprintf("[%d, %d]", r.start, r.end))
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

func (s *keySharedSelector) remove(c *consumer) {
	if i := slices.Index(s.cs, c); i >= 0 {
		s.cs = slices.Delete(s.cs, i, i+1)
	}
	s.ring = slices.DeleteFunc(s.ring, func(p ringPoint) bool { return p.c == c })
	if i := slices.IndexFunc(s.splits, func(r splitRange) bool { return r.c == c }); i >= 0 {
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

// owner returns the consumer owning key regardless of permits.
func (s *keySharedSelector) owner(key []byte) *consumer {
	if len(s.cs) == 0 {
		return nil
	}
	if s.sticky {
		slot := keySlot(key)
		for _, c := range s.cs {
			for _, r := range c.ranges {
				if slot >= r.start && slot <= r.end {
					return c
				}
			}
		}
		return nil
	}
	if !s.consistent {
		slot := keySlot(key)
		i, _ := slices.BinarySearchFunc(s.splits, slot, func(r splitRange, slot int) int { return r.end - slot })
		if i == len(s.splits) {
			return nil
		}
		return s.splits[i].c
	}
	h := murmur3(key)
	i, _ := slices.BinarySearchFunc(s.ring, h, func(p ringPoint, h uint32) int {
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
	return s.ring[i].c
}

func (s *keySharedSelector) pick(key []byte) *consumer {
	if c := s.owner(key); c != nil && c.available() {
		return c
	}
	return nil
}

func (s *keySharedSelector) list() []*consumer { return s.cs }
