package selector

import "slices"

// Consumer is what a selector reads of a consumer. Values are compared
// with == (pointers to the subscription's consumers); the zero value is
// "no consumer".
type Consumer interface {
	comparable
	// Available reports whether the consumer can take an entry now.
	Available() bool
	// Priority is the consumer's priority level (Failover: the lowest
	// level is active).
	Priority() int
	// Name is the consumer's name.
	Name() string
	// Arrival numbers the consumers of a subscription in the order they
	// were added (Failover's tie-break, the consistent-hashing ring's
	// salt).
	Arrival() uint64
	// Ranges are the Key_Shared slot ranges the consumer declared
	// (sticky mode).
	Ranges() []Range
}

// Selector picks the consumer of each entry.
type Selector[C Consumer] interface {
	// Add registers c. A non-empty result refuses it (Pulsar's reason).
	Add(c C) (refusal string)
	// Remove unregisters c.
	Remove(c C)
	// Pick returns the consumer that must receive an entry routed by
	// key, or the zero C if that consumer (or every consumer) cannot
	// take it now.
	Pick(key []byte) C
	// List returns the registered consumers in selection order.
	List() []C
}

// Type is a subscription type.
type Type int

// The subscription types.
const (
	TypeExclusive Type = iota
	TypeShared
	TypeFailover
	TypeKeyShared
)

// New returns the selector of a subscription of type typ on partition
// (-1 or 0 for a non-partitioned topic); sticky and consistent choose the
// Key_Shared mode.
func New[C Consumer](typ Type, partition int, sticky, consistent bool) Selector[C] {
	switch typ {
	case TypeShared:
		return &Shared[C]{}
	case TypeFailover:
		return &Failover[C]{partition: max(partition, 0)}
	case TypeKeyShared:
		return &KeyShared[C]{sticky: sticky, consistent: consistent}
	}
	return &Exclusive[C]{}
}

// Exclusive serves one consumer.
type Exclusive[C Consumer] struct {
	c   C
	has bool
}

// Add implements Selector.
func (s *Exclusive[C]) Add(c C) string {
	if s.has {
		return "Exclusive consumer is already connected"
	}
	s.c, s.has = c, true
	return ""
}

// Remove implements Selector.
func (s *Exclusive[C]) Remove(c C) {
	if s.has && s.c == c {
		var zero C
		s.c, s.has = zero, false
	}
}

// Pick implements Selector.
func (s *Exclusive[C]) Pick([]byte) C {
	if s.has && s.c.Available() {
		return s.c
	}
	var zero C
	return zero
}

// List implements Selector.
func (s *Exclusive[C]) List() []C {
	if !s.has {
		return nil
	}
	return []C{s.c}
}

// Failover delivers everything to one active consumer.
type Failover[C Consumer] struct {
	partition int
	cs        []C
}

// Add implements Selector.
func (s *Failover[C]) Add(c C) string {
	s.cs = append(s.cs, c)
	slices.SortStableFunc(s.cs, func(a, b C) int {
		if a.Priority() != b.Priority() {
			return a.Priority() - b.Priority()
		}
		if a.Name() != b.Name() {
			if a.Name() < b.Name() {
				return -1
			}
			return 1
		}
		if a.Arrival() < b.Arrival() {
			return -1
		}
		return 1
	})
	return ""
}

// Remove implements Selector.
func (s *Failover[C]) Remove(c C) {
	if i := slices.Index(s.cs, c); i >= 0 {
		s.cs = slices.Delete(s.cs, i, i+1)
	}
}

// Active returns the active consumer (the zero C when there is none).
func (s *Failover[C]) Active() C {
	if len(s.cs) == 0 {
		var zero C
		return zero
	}
	return s.cs[s.partition%len(s.cs)]
}

// Pick implements Selector.
func (s *Failover[C]) Pick([]byte) C {
	if len(s.cs) > 0 {
		if a := s.Active(); a.Available() {
			return a
		}
	}
	var zero C
	return zero
}

// List implements Selector.
func (s *Failover[C]) List() []C { return s.cs }

// Shared round-robins entries over consumers that can take one.
type Shared[C Consumer] struct {
	cs   []C
	next int
}

// Add implements Selector.
func (s *Shared[C]) Add(c C) string {
	s.cs = append(s.cs, c)
	return ""
}

// Remove implements Selector.
func (s *Shared[C]) Remove(c C) {
	if i := slices.Index(s.cs, c); i >= 0 {
		s.cs = slices.Delete(s.cs, i, i+1)
		if s.next > i {
			s.next--
		}
	}
}

// Pick implements Selector.
func (s *Shared[C]) Pick([]byte) C {
	n := len(s.cs)
	for i := 0; i < n; i++ {
		if s.next >= n {
			s.next = 0
		}
		c := s.cs[s.next]
		s.next++
		if c.Available() {
			return c
		}
	}
	var zero C
	return zero
}

// List implements Selector.
func (s *Shared[C]) List() []C { return s.cs }
