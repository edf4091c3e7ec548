package entryset

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// el is a test element: position p, size sz.
type el struct {
	p      int
	sz     int
	queued bool
}

func (e *el) Before(o *el) bool { return e.p < o.p }
func (e *el) Queued() bool      { return e.queued }
func (e *el) SetQueued(q bool)  { e.queued = q }
func (e *el) Size() int         { return e.sz }

func els(ps ...int) []*el {
	out := make([]*el, len(ps))
	for i, p := range ps {
		out[i] = &el{p: p, sz: 10}
	}
	return out
}

func TestHeapPopsInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h Heap[*el]
	var want []int
	for range 1000 {
		p := rng.IntN(500)
		h.Push(&el{p: p})
		want = append(want, p)
	}
	slices.Sort(want)
	for i, w := range want {
		if got := h.Pop().p; got != w {
			t.Fatalf("pop %d = %d, want %d", i, got, w)
		}
	}
	if len(h) != 0 {
		t.Fatalf("%d left", len(h))
	}
}

func TestHeapInit(t *testing.T) {
	h := Heap[*el](els(9, 3, 7, 1, 8, 2))
	h.Init()
	h = append(h, &el{p: 0})
	h.Init()
	var got []int
	for len(h) > 0 {
		got = append(got, h.Pop().p)
	}
	if !slices.Equal(got, []int{0, 1, 2, 3, 7, 8, 9}) {
		t.Fatalf("popped %v", got)
	}
}

func TestDelayHeapByTimeThenOrder(t *testing.T) {
	var h DelayHeap[*el]
	h.Push(20, &el{p: 1})
	h.Push(10, &el{p: 5})
	h.Push(10, &el{p: 2})
	h.Push(30, &el{p: 0})
	h.Push(20, &el{p: 0})
	type tp struct {
		at int64
		p  int
	}
	var got []tp
	for len(h) > 0 {
		if h[0].At > 20 && len(got) < 4 {
			t.Fatalf("first due %d with earlier ones left", h[0].At)
		}
		d := h.Pop()
		got = append(got, tp{d.At, d.E.p})
	}
	want := []tp{{10, 2}, {10, 5}, {20, 0}, {20, 1}, {30, 0}}
	if !slices.Equal(got, want) {
		t.Fatalf("popped %v, want %v", got, want)
	}
}

// drain takes every element of r in order through a scan.
func drain(r *Replay[*el]) []int {
	var out []int
	sc := r.Scan()
	for e, ok := sc.Next(); ok; e, ok = sc.Next() {
		out = append(out, e.p)
	}
	sc.Done()
	return out
}

func TestReplayAddOnceAndBytes(t *testing.T) {
	var r Replay[*el]
	es := els(5, 1, 3)
	for _, e := range es {
		if !r.Add(e) {
			t.Fatalf("Add(%d) refused", e.p)
		}
	}
	if r.Add(es[0]) {
		t.Fatal("an element was added twice")
	}
	if r.Len() != 3 || r.Bytes() != 30 {
		t.Fatalf("Len %d Bytes %d, want 3 and 30", r.Len(), r.Bytes())
	}
	if got := drain(&r); !slices.Equal(got, []int{1, 3, 5}) {
		t.Fatalf("order %v", got)
	}
	if r.Len() != 0 || r.Bytes() != 0 || es[0].queued {
		t.Fatalf("after draining: Len %d Bytes %d, queued %v", r.Len(), r.Bytes(), es[0].queued)
	}
}

// TestReplayHeldStayFirst: elements held back in a pass come first in the
// next, merged in order with what was added meanwhile.
func TestReplayHeldStayFirst(t *testing.T) {
	var r Replay[*el]
	r.AddAll(els(2, 4, 6, 8))
	sc := r.Scan()
	for e, ok := sc.Next(); ok; e, ok = sc.Next() {
		if e.p == 2 || e.p == 6 {
			sc.Hold(e)
		}
	}
	sc.Done()
	if r.Len() != 2 {
		t.Fatalf("Len %d after holding 2", r.Len())
	}
	r.AddAll(els(1, 5, 9))
	if got := drain(&r); !slices.Equal(got, []int{1, 2, 5, 6, 9}) {
		t.Fatalf("order %v", got)
	}
}

// TestReplayPartialPass: a pass that stops early leaves the rest in
// place, the held ones ahead of it.
func TestReplayPartialPass(t *testing.T) {
	var r Replay[*el]
	r.AddAll(els(1, 2, 3, 4, 5))
	sc := r.Scan()
	for range 3 {
		e, _ := sc.Next()
		sc.Hold(e)
	}
	sc.Done() // front: 1 2 3 (held), 4 5 still in the heap
	sc = r.Scan()
	e, _ := sc.Next() // 1, delivered
	if e.p != 1 {
		t.Fatalf("first %d", e.p)
	}
	e, _ = sc.Next() // 2, held
	sc.Hold(e)
	sc.Done()
	if got := drain(&r); !slices.Equal(got, []int{2, 3, 4, 5}) {
		t.Fatalf("order %v", got)
	}
}

func TestReplayRemoveWhileAndReset(t *testing.T) {
	var r Replay[*el]
	es := els(1, 3, 5, 7, 9)
	r.AddAll(es)
	sc := r.Scan()
	e, _ := sc.Next()
	sc.Hold(e) // 1 in the front
	e, _ = sc.Next()
	sc.Hold(e) // 3 in the front
	sc.Done()
	r.RemoveWhile(func(e *el) bool { return e.p <= 5 })
	if r.Len() != 2 || r.Bytes() != 20 || es[0].queued || es[2].queued || !es[3].queued {
		t.Fatalf("after RemoveWhile(<=5): Len %d Bytes %d", r.Len(), r.Bytes())
	}
	r.Reset()
	if r.Len() != 0 || es[3].queued || es[4].queued {
		t.Fatal("Reset left elements counted or flagged")
	}
	if !r.Add(es[3]) {
		t.Fatal("an element reset out of the set could not be added again")
	}
}

// TestReplayAgainstModel runs random adds, passes (with holds and early
// stops) and removals against a sorted slice.
func TestReplayAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	all := make([]*el, 300)
	for i := range all {
		all[i] = &el{p: i, sz: 1 + i%7}
	}
	var r Replay[*el]
	model := map[int]bool{}
	for step := range 3000 {
		switch op := rng.IntN(10); {
		case op < 4:
			e := all[rng.IntN(len(all))]
			if r.Add(e) == model[e.p] {
				t.Fatalf("step %d: Add(%d) disagrees with the model", step, e.p)
			}
			model[e.p] = true
		case op < 5:
			var batch []*el
			for range rng.IntN(20) {
				batch = append(batch, all[rng.IntN(len(all))])
			}
			r.AddAll(batch)
			for _, e := range batch {
				model[e.p] = true
			}
		case op < 9:
			want := sortedKeys(model)
			sc := r.Scan()
			stop := rng.IntN(len(want) + 1)
			for i := 0; i < stop; i++ {
				e, ok := sc.Next()
				if !ok || e.p != want[i] {
					t.Fatalf("step %d: Next = %v %v, want %d", step, e, ok, want[i])
				}
				if rng.IntN(3) == 0 {
					delete(model, e.p) // delivered
				} else {
					sc.Hold(e)
				}
			}
			sc.Done()
		default:
			cut := rng.IntN(len(all))
			r.RemoveWhile(func(e *el) bool { return e.p <= cut })
			for p := range model {
				if p <= cut {
					delete(model, p)
				}
			}
		}
		bytes := 0
		for p := range model {
			bytes += all[p].sz
		}
		if r.Len() != len(model) || r.Bytes() != bytes {
			t.Fatalf("step %d: Len %d Bytes %d, model %d and %d", step, r.Len(), r.Bytes(), len(model), bytes)
		}
		for _, e := range all {
			if e.queued != model[e.p] {
				t.Fatalf("step %d: element %d queued %v, model %v", step, e.p, e.queued, model[e.p])
			}
		}
	}
}

func sortedKeys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// TestNoAllocationsInSteadyState: once the slices have grown, adding,
// taking and removing allocate nothing (a pass without holds included).
func TestNoAllocationsInSteadyState(t *testing.T) {
	es := els(make([]int, 64)...)
	for i, e := range es {
		e.p = (i * 37) % 64
	}
	var r Replay[*el]
	var h Heap[*el]
	var d DelayHeap[*el]
	round := func() {
		for _, e := range es {
			r.Add(e)
			h.Push(e)
			d.Push(int64(e.p%4), e)
		}
		sc := r.Scan()
		for _, ok := sc.Next(); ok; _, ok = sc.Next() {
		}
		sc.Done()
		for len(h) > 0 {
			h.Pop()
			d.Pop()
		}
	}
	round()
	if n := testing.AllocsPerRun(20, round); n != 0 {
		t.Fatalf("%v allocations per round", n)
	}
}

func BenchmarkReplayAddTake(b *testing.B) {
	es := els(make([]int, 1024)...)
	for i, e := range es {
		e.p = (i * 7919) % 1024
	}
	var r Replay[*el]
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range es {
			r.Add(e)
		}
		sc := r.Scan()
		for _, ok := sc.Next(); ok; _, ok = sc.Next() {
		}
		sc.Done()
	}
}
