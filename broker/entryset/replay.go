package entryset

import "slices"

// Member is an element of a Replay set: ordered, with a membership flag
// only the set changes (Queued reports what SetQueued set last; false
// initially) and a size counted in the set's Bytes.
type Member[E any] interface {
	Ordered[E]
	Queued() bool
	SetQueued(bool)
	Size() int
}

// Replay is the replay set: elements to (re)deliver before new ones,
// taken in Before order (see the package doc for the layout). The zero
// value is empty.
type Replay[E Member[E]] struct {
	front []E // sorted by Before
	heap  Heap[E]
	n     int // elements in front and heap
	bytes int // sum of Size over the elements, as they entered
}

// Len returns the number of elements in the set.
func (r *Replay[E]) Len() int { return r.n }

// Bytes returns the sum of the elements' sizes.
func (r *Replay[E]) Bytes() int { return r.bytes }

// Add puts e in the set unless it is there already; it reports whether
// e was added. O(log n).
func (r *Replay[E]) Add(e E) bool {
	if e.Queued() {
		return false
	}
	r.enter(e)
	r.heap.Push(e)
	return true
}

// AddAll adds many elements at once (those not in the set already):
// O(k) when the set was empty, O(k log n) otherwise.
func (r *Replay[E]) AddAll(es []E) {
	if r.n > 0 {
		for _, e := range es {
			r.Add(e)
		}
		return
	}
	for _, e := range es {
		if !e.Queued() {
			r.enter(e)
			r.heap = append(r.heap, e)
		}
	}
	r.heap.Init()
}

// enter and leave count e in and out of the set.
func (r *Replay[E]) enter(e E) {
	e.SetQueued(true)
	r.n++
	r.bytes += e.Size()
}

func (r *Replay[E]) leave(e E) {
	e.SetQueued(false)
	r.n--
	r.bytes -= e.Size()
}

// RemoveWhile takes the elements out of the set from the front of its
// order for as long as covered holds (covered must hold for a prefix of
// the order: the core removes every entry at or before a position).
// O(k log n) for the k elements removed.
func (r *Replay[E]) RemoveWhile(covered func(E) bool) {
	i, _ := slices.BinarySearchFunc(r.front, true, func(e E, _ bool) int {
		if covered(e) {
			return -1
		}
		return 1
	})
	for _, e := range r.front[:i] {
		r.leave(e)
	}
	clear(r.front[:i])
	r.front = r.front[i:]
	for len(r.heap) > 0 && covered(r.heap[0]) {
		r.leave(r.heap.Pop())
	}
}

// Reset empties the set. O(n).
func (r *Replay[E]) Reset() {
	for _, e := range r.front {
		e.SetQueued(false)
	}
	for _, e := range r.heap {
		e.SetQueued(false)
	}
	*r = Replay[E]{}
}

// Scan is one pass over a Replay set in order. No other method of the
// set may run during a pass.
type Scan[E Member[E]] struct {
	r    *Replay[E]
	i    int // next index of r.front
	held []E // elements looked at and kept, in order
}

// Scan starts a pass over the set: Next returns the first element not
// yet looked at, taken out of the set; the caller hands back the
// elements it does not deliver with Hold, in the order Next returned
// them, and ends the pass with Done.
func (r *Replay[E]) Scan() Scan[E] { return Scan[E]{r: r} }

// Next returns the next element in order, taken out of the set; ok is
// false at the end.
func (sc *Scan[E]) Next() (e E, ok bool) {
	r := sc.r
	switch {
	case sc.i < len(r.front) && (len(r.heap) == 0 || r.front[sc.i].Before(r.heap[0])):
		e = r.front[sc.i]
		var zero E
		r.front[sc.i] = zero
		sc.i++
	case len(r.heap) > 0:
		e = r.heap.Pop()
	default:
		return e, false
	}
	r.leave(e)
	return e, true
}

// Hold puts back an element Next returned (to stay first in the set).
func (sc *Scan[E]) Hold(e E) { sc.held = append(sc.held, e) }

// Done ends the pass: the held elements go back to the front, ahead of
// the front elements not looked at (every held element precedes them).
func (sc *Scan[E]) Done() {
	r := sc.r
	for _, e := range sc.held {
		r.enter(e)
	}
	kept, rest := sc.held, r.front[sc.i:]
	switch {
	case len(kept) == 0:
		r.front = rest
	case len(kept) <= sc.i:
		// Reuse the slots already passed: kept ++ rest in place.
		start := sc.i - len(kept)
		copy(r.front[start:], kept)
		r.front = r.front[start:]
	default:
		r.front = append(kept, rest...)
	}
	if len(r.front) == 0 {
		r.front = nil
	}
	sc.held = nil
}
