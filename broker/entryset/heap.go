package entryset

// Ordered is an element ordered by Before (the core: an entry's
// position). Before must be a strict order.
type Ordered[E any] interface {
	Before(E) bool
}

// Heap is a binary min-heap by Before. The zero value is empty; the
// slice may be read (h[0] is the first element; ranging visits every
// element in no particular order), and rebuilt with append and Init.
type Heap[E Ordered[E]] []E

// Push adds e. O(log n).
func (h *Heap[E]) Push(e E) {
	*h = append(*h, e)
	h.up(len(*h) - 1)
}

// Pop removes and returns the first element; h must not be empty.
// O(log n).
func (h *Heap[E]) Pop() E {
	old := *h
	n := len(old) - 1
	first := old[0]
	old[0] = old[n]
	var zero E
	old[n] = zero
	*h = old[:n]
	h.down(0)
	return first
}

// Init restores the heap order after the slice was changed. O(n).
func (h Heap[E]) Init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h Heap[E]) up(i int) {
	e := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if !e.Before(h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
}

func (h Heap[E]) down(i int) {
	n := len(h)
	if n == 0 {
		return
	}
	e := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h[r].Before(h[c]) {
			c = r
		}
		if !h[c].Before(e) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = e
}

// Delayed is an element of a DelayHeap, due at At (the core: unix ms).
type Delayed[E Ordered[E]] struct {
	At int64
	E  E
}

// before orders by due time, then by the elements' order.
func (d Delayed[E]) before(o Delayed[E]) bool {
	if d.At != o.At {
		return d.At < o.At
	}
	return d.E.Before(o.E)
}

// DelayHeap is the delayed set: a min-heap by due time, then by Before.
// h[0] is the first due; the zero value is empty.
type DelayHeap[E Ordered[E]] []Delayed[E]

// Push adds e due at at. O(log n).
func (h *DelayHeap[E]) Push(at int64, e E) {
	*h = append(*h, Delayed[E]{At: at, E: e})
	s := *h
	i := len(s) - 1
	d := s[i]
	for i > 0 {
		p := (i - 1) / 2
		if !d.before(s[p]) {
			break
		}
		s[i] = s[p]
		i = p
	}
	s[i] = d
}

// Pop removes and returns the first due; h must not be empty. O(log n).
func (h *DelayHeap[E]) Pop() Delayed[E] {
	s := *h
	n := len(s) - 1
	first := s[0]
	d := s[n]
	s[n] = Delayed[E]{}
	s = s[:n]
	*h = s
	if n == 0 {
		return first
	}
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && s[r].before(s[c]) {
			c = r
		}
		if !s[c].before(d) {
			break
		}
		s[i] = s[c]
		i = c
	}
	s[i] = d
	return first
}
