package broker

import "slices"

// keyed is what named holds: a producer or a subscription, by its name.
type keyed interface {
	comparable
	key() string
}

func (p *producer) key() string     { return p.name }
func (s *subscription) key() string { return s.Name() }

// named is a topic's producers or subscriptions by name: a slice searched
// linearly rather than a map, since nearly every topic has one or two (one
// entry costs 8 B here, ~256 B in a map: issue 35, 8 KiB a live topic).
// Ranging and len work as on any slice. A removal builds a new slice and
// put only appends, so a copy of the slice taken under the owner's lock
// (topic.subList) stays valid without it.
type named[T keyed] []T

// get returns the entry called name, or the zero T.
func (n named[T]) get(name string) T {
	for _, v := range n {
		if v.key() == name {
			return v
		}
	}
	var zero T
	return zero
}

// put adds v, replacing the entry of the same name (in a new slice).
func (n *named[T]) put(v T) {
	if i := n.index(v.key()); i >= 0 {
		c := slices.Clone(*n)
		c[i] = v
		*n = c
		return
	}
	*n = append(*n, v)
}

// del removes the entry called name, if any; the slice becomes nil when
// it empties.
func (n *named[T]) del(name string) {
	i := n.index(name)
	if i < 0 {
		return
	}
	if len(*n) == 1 {
		*n = nil
		return
	}
	c := make(named[T], 0, len(*n)-1)
	c = append(c, (*n)[:i]...)
	*n = append(c, (*n)[i+1:]...)
}

func (n named[T]) index(name string) int {
	for i, v := range n {
		if v.key() == name {
			return i
		}
	}
	return -1
}
