package broker

import (
	"container/heap"
	"slices"
)

// The sets below hold what a subscription's loop keeps per entry: the
// replay set (entries to (re)deliver before new ones), the pending order
// of an Exclusive or Failover subscription (for cumulative acks) and the
// delayed set. Their sizes follow what clients do (a consumer that never
// acks, a nack of every message, a million delayed messages), so every
// operation on them is O(log n) or amortised O(1), never O(n): a sorted
// slice with inserts in the middle made a consumer holding 1M unacked
// messages take minutes to leave.

// entryHeap is a binary min-heap of pending entries by position
// (container/heap's interface; use the functions of that package).
type entryHeap []*pendingEntry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return h[i].pos.Compare(h[j].pos) < 0 }
func (h entryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entryHeap) Push(x any)        { *h = append(*h, x.(*pendingEntry)) }
func (h *entryHeap) Pop() any {
	old := *h
	pe := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return pe
}

// replaySet is the replay set: entries to (re)deliver before new ones,
// taken in position order.
//
// Layout: front is a sorted slice of entries a Key_Shared pass looked at
// and held back (their consumer had no permits); heap is a min-heap of
// everything added since; the set's order merges the two. An entry is in
// the set at most once (its queued flag; a position has one pending
// entry, see pendingEntry) and leaves it only from the front of that
// order (scan, removeThrough) or all at once (reset), so front and heap
// never hold a stale copy. add and taking the first entry are O(log n);
// a pass that looks at k held entries again costs O(k), as a scan of a
// slice would.
//
// Not safe for concurrent use: the subscription's loop owns it.
type replaySet struct {
	front []*pendingEntry // sorted by position
	heap  entryHeap
	n     int // entries in front and heap
	bytes int // sum of len(data) over the entries
}

// len returns the number of entries in the set.
func (r *replaySet) len() int { return r.n }

// add puts pe in the set unless it is there already; it reports whether
// pe was added.
func (r *replaySet) add(pe *pendingEntry) bool {
	if pe.queued {
		return false
	}
	r.enter(pe)
	heap.Push(&r.heap, pe)
	return true
}

// addAll adds many entries at once: O(k) to build when the set was
// empty, O(k log n) otherwise.
func (r *replaySet) addAll(pes []*pendingEntry) {
	if r.n > 0 {
		for _, pe := range pes {
			r.add(pe)
		}
		return
	}
	for _, pe := range pes {
		if !pe.queued {
			r.enter(pe)
			r.heap = append(r.heap, pe)
		}
	}
	heap.Init(&r.heap)
}

// enter and leave count pe in and out of the set.
func (r *replaySet) enter(pe *pendingEntry) {
	pe.queued = true
	r.n++
	r.bytes += len(pe.data)
}

func (r *replaySet) leave(pe *pendingEntry) {
	pe.queued = false
	r.n--
	r.bytes -= len(pe.data)
}

// removeThrough takes every entry at or before target out of the set,
// calling drop for each. O(k log n) for the k entries removed.
func (r *replaySet) removeThrough(target position, drop func(*pendingEntry)) {
	i, _ := slices.BinarySearchFunc(r.front, target, func(pe *pendingEntry, t position) int {
		if pe.pos.Compare(t) <= 0 {
			return -1
		}
		return 1
	})
	for _, pe := range r.front[:i] {
		r.leave(pe)
		drop(pe)
	}
	clear(r.front[:i])
	r.front = r.front[i:]
	for len(r.heap) > 0 && r.heap[0].pos.Compare(target) <= 0 {
		pe := heap.Pop(&r.heap).(*pendingEntry)
		r.leave(pe)
		drop(pe)
	}
}

// reset empties the set.
func (r *replaySet) reset() {
	for _, pe := range r.front {
		pe.queued = false
	}
	for _, pe := range r.heap {
		pe.queued = false
	}
	*r = replaySet{}
}

// replayScan is one dispatch pass over a replaySet, in position order.
// No other method of the set may run during a pass.
type replayScan struct {
	r    *replaySet
	i    int             // next index of r.front
	held []*pendingEntry // entries looked at and kept, in order
}

// scan starts a pass over the set. next returns the first entry not yet
// looked at, taken out of the set; the caller hands back the entries it
// does not deliver with hold, in the order next returned them, and ends
// the pass with done.
func (r *replaySet) scan() *replayScan { return &replayScan{r: r} }

// next returns the next entry in position order, taken out of the set,
// or nil at the end.
func (sc *replayScan) next() *pendingEntry {
	r := sc.r
	var pe *pendingEntry
	switch {
	case sc.i < len(r.front) && (len(r.heap) == 0 || r.front[sc.i].pos.Compare(r.heap[0].pos) < 0):
		pe = r.front[sc.i]
		r.front[sc.i] = nil
		sc.i++
	case len(r.heap) > 0:
		pe = heap.Pop(&r.heap).(*pendingEntry)
	default:
		return nil
	}
	r.leave(pe)
	return pe
}

// hold puts back an entry next returned (to stay first in the set).
func (sc *replayScan) hold(pe *pendingEntry) { sc.held = append(sc.held, pe) }

// done ends the pass: the held entries go back to the front, ahead of
// the front entries not looked at (every held entry precedes them).
func (sc *replayScan) done() {
	r := sc.r
	for _, pe := range sc.held {
		r.enter(pe)
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

// delayedEntry is an entry of the delayed set, due at unix ms at.
type delayedEntry struct {
	at int64
	pe *pendingEntry
}

// delayHeap is the delayed set: a min-heap by due time, then position
// (container/heap's interface).
type delayHeap []delayedEntry

func (h delayHeap) Len() int { return len(h) }
func (h delayHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].pe.pos.Compare(h[j].pe.pos) < 0
}
func (h delayHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *delayHeap) Push(x any)   { *h = append(*h, x.(delayedEntry)) }
func (h *delayHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	old[len(old)-1] = delayedEntry{}
	*h = old[:len(old)-1]
	return d
}
