package mledger

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

func bitmapOf(vs ...uint32) *roaring.Bitmap { return roaring.BitmapOf(vs...) }

func rangeBitmap(lo, hi uint64) *roaring.Bitmap {
	bm := roaring.New()
	bm.AddRange(lo, hi+1)
	return bm
}

// The cases that lost acknowledged messages: a run that ends at a 65,536
// boundary in the bitmap's last container.
func TestRunEndContainerBoundaries(t *testing.T) {
	const top = math.MaxUint32
	for _, tc := range []struct {
		name string
		bm   *roaring.Bitmap
		x    uint32
		want int64
	}{
		{"last container ends at 65535", rangeBitmap(65000, 65535), 65000, 65535},
		{"single 65535", bitmapOf(65535), 65535, 65535},
		{"run crosses into next container", bitmapOf(65535, 65536), 65535, 65536},
		{"run ends at 65535 before a gap", func() *roaring.Bitmap {
			bm := rangeBitmap(0, 65535)
			bm.Add(65537)
			return bm
		}(), 0, 65535},
		{"two full containers", rangeBitmap(0, 131071), 0, 131071},
		{"run ends at 131071, then 131073", func() *roaring.Bitmap {
			bm := rangeBitmap(70000, 131071)
			bm.Add(131073)
			return bm
		}(), 70000, 131071},
		{"several containers", rangeBitmap(5, 200000), 17, 200000},
		{"absent", bitmapOf(1, 3), 2, 1},
		{"absent at zero", bitmapOf(1), 0, -1},
		{"top of the range", bitmapOf(top), top, top},
		{"run to the top", rangeBitmap(top-70000, top), top - 70000, top},
		{"run optimised", func() *roaring.Bitmap {
			bm := rangeBitmap(65000, 65535)
			bm.RunOptimize()
			return bm
		}(), 65100, 65535},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := runEnd(tc.bm, tc.x); got != tc.want {
				t.Fatalf("runEnd(%d) = %d, want %d", tc.x, got, tc.want)
			}
		})
	}
}

// boundaryValue picks values near container boundaries (k*65536 ± 2), near
// the top of the uint32 range, and a few elsewhere.
func boundaryValue(rng *rand.Rand) uint32 {
	switch rng.IntN(4) {
	case 0:
		return math.MaxUint32 - uint32(rng.IntN(5))
	case 1:
		return uint32(rng.IntN(300000))
	default:
		k := uint64(rng.IntN(5))
		v := int64(k<<16) + int64(rng.IntN(5)) - 2
		if v < 0 {
			v = 0
		}
		return uint32(v)
	}
}

// modelRunEnd is runEnd over a plain set.
func modelRunEnd(m map[uint32]bool, x uint32) int64 {
	last := int64(x) - 1
	for v := int64(x); v <= math.MaxUint32 && m[uint32(v)]; v++ {
		last = v
	}
	return last
}

// TestRoaringCallsAgainstModel checks every roaring call the ack state and
// its codec rely on (CheckedAdd, Add/RemoveRange, Contains, cardinality,
// Minimum/Maximum, iteration, Clone, RunOptimize, serialisation) against a
// plain set, with values at container boundaries, where v2.30.0's
// NextAbsentValue was found wrong.
func TestRoaringCallsAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 65536))
	for round := range 100 {
		bm := roaring.New()
		model := map[uint32]bool{}
		for range 40 {
			v := boundaryValue(rng)
			switch rng.IntN(4) {
			case 0, 1:
				if got, want := bm.CheckedAdd(v), !model[v]; got != want {
					t.Fatalf("round %d: CheckedAdd(%d) = %v, want %v", round, v, got, want)
				}
				model[v] = true
			case 2:
				n := uint64(rng.IntN(3000))
				hi := min(uint64(v)+n, math.MaxUint32)
				bm.AddRange(uint64(v), hi+1)
				for w := uint64(v); w <= hi; w++ {
					model[uint32(w)] = true
				}
			case 3:
				hi := min(uint64(v)+uint64(rng.IntN(70000)), math.MaxUint32)
				bm.RemoveRange(uint64(v), hi+1)
				for w := uint64(v); w <= hi; w++ {
					delete(model, uint32(w))
				}
			}
			if rng.IntN(5) == 0 {
				bm.RunOptimize()
			}
		}
		checkAgainstModel(t, round, bm, model, rng)
		var buf bytes.Buffer
		if _, err := bm.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		back := roaring.New()
		if _, err := back.ReadFrom(bytes.NewReader(buf.Bytes())); err != nil {
			t.Fatal(err)
		}
		if err := back.Validate(); err != nil {
			t.Fatal(err)
		}
		checkAgainstModel(t, round, back, model, rng)
		checkAgainstModel(t, round, bm.Clone(), model, rng)
	}
}

func checkAgainstModel(t *testing.T, round int, bm *roaring.Bitmap, model map[uint32]bool, rng *rand.Rand) {
	t.Helper()
	if got := bm.GetCardinality(); got != uint64(len(model)) {
		t.Fatalf("round %d: cardinality %d, want %d", round, got, len(model))
	}
	if bm.IsEmpty() != (len(model) == 0) {
		t.Fatalf("round %d: IsEmpty %v with %d values", round, bm.IsEmpty(), len(model))
	}
	vals := make([]uint32, 0, len(model))
	for v := range model {
		vals = append(vals, v)
	}
	slices.Sort(vals)
	if len(vals) > 0 {
		if bm.Minimum() != vals[0] || bm.Maximum() != vals[len(vals)-1] {
			t.Fatalf("round %d: min/max %d/%d, want %d/%d", round, bm.Minimum(), bm.Maximum(), vals[0], vals[len(vals)-1])
		}
	}
	if got := bm.ToArray(); !slices.Equal(got, vals) {
		t.Fatalf("round %d: iteration gives %d values, want %d", round, len(got), len(vals))
	}
	var probe []uint32
	for range 100 {
		if len(vals) > 0 {
			probe = append(probe, vals[rng.IntN(len(vals))])
		}
		probe = append(probe, boundaryValue(rng))
	}
	for range 20 {
		probe = append(probe, boundaryValue(rng))
	}
	for _, v := range probe {
		if bm.Contains(v) != model[v] {
			t.Fatalf("round %d: Contains(%d) = %v", round, v, bm.Contains(v))
		}
		if got, want := runEnd(bm, v), modelRunEnd(model, v); got != want {
			t.Fatalf("round %d: runEnd(%d) = %d, want %d", round, v, got, want)
		}
	}
}

// ackStateFor returns a state over ledger 1 of n entries followed by
// ledger 2 of 10 entries, mark-delete before everything.
func ackStateFor(n int64) (*ackState, ledgerList) {
	return newAckState(Position{1, -1}), ledgerList{{LedgerID: 1, Entries: n}, {LedgerID: 2, Entries: 10}}
}

// Ledgers of 65,536 × k ± 1 entries, acknowledged individually, by batch
// index and cumulatively: mark-delete lands exactly on the last acked
// entry, never past it, and the next ledger's entries stay unacked.
func TestAckStateLedgerSizesAtContainerBoundaries(t *testing.T) {
	var sizes []int64
	for k := int64(1); k <= 3; k++ {
		sizes = append(sizes, k*65536-1, k*65536, k*65536+1)
	}
	for _, n := range sizes {
		// Individual acks, the first entry last: everything waits in the
		// bitmap, then one advance walks the whole ledger.
		s, ls := ackStateFor(n)
		for e := int64(1); e < n; e++ {
			s.ack(Position{1, e})
		}
		s.advance(ls)
		if s.markDelete != (Position{1, -1}) {
			t.Fatalf("n=%d: mark-delete moved to %s with entry 0 unacked", n, s.markDelete)
		}
		s.ack(Position{1, 0})
		s.advance(ls)
		if want := (Position{1, n - 1}); s.markDelete != want {
			t.Fatalf("n=%d individual: mark-delete %s, want %s", n, s.markDelete, want)
		}
		if s.isAcked(Position{2, 0}) || s.ackedCount != 0 {
			t.Fatalf("n=%d: next ledger acked or count %d left", n, s.ackedCount)
		}

		// All but the last entry, in reverse: mark-delete stops before it.
		s, ls = ackStateFor(n)
		for e := n - 2; e >= 0; e-- {
			s.ack(Position{1, e})
			s.advance(ls)
		}
		if want := (Position{1, n - 2}); s.markDelete != want {
			t.Fatalf("n=%d all but last: mark-delete %s, want %s", n, s.markDelete, want)
		}
		if s.isAcked(Position{1, n - 1}) {
			t.Fatalf("n=%d: last entry reported acked", n)
		}

		// Batch-index acks: a partial ack keeps the entry, the full one
		// acks it.
		s, ls = ackStateFor(n)
		s.setMarkDelete(Position{1, n - 3})
		s.ackBatch(Position{1, n - 1}, []uint64{0b10})
		s.ackBatch(Position{1, n - 2}, []uint64{0})
		s.advance(ls)
		if want := (Position{1, n - 2}); s.markDelete != want {
			t.Fatalf("n=%d batch: mark-delete %s, want %s", n, s.markDelete, want)
		}
		s.ackBatch(Position{1, n - 1}, []uint64{0b01})
		s.advance(ls)
		if want := (Position{1, n - 1}); s.markDelete != want {
			t.Fatalf("n=%d batch full: mark-delete %s, want %s", n, s.markDelete, want)
		}

		// The tail of the ledger acked out of order after mark-delete
		// moved close to the end (the bitmap holds a small array
		// container, the shape the lost messages had).
		for _, tail := range []int64{1, 2, 536, 5000} {
			s, ls = ackStateFor(n)
			s.setMarkDelete(Position{1, n - tail - 1})
			for e := n - tail + 1; e < n; e++ {
				s.ack(Position{1, e})
			}
			s.advance(ls)
			if want := (Position{1, n - tail - 1}); s.markDelete != want {
				t.Fatalf("n=%d tail=%d: mark-delete %s before the gap is filled, want %s", n, tail, s.markDelete, want)
			}
			s.ack(Position{1, n - tail})
			s.advance(ls)
			if want := (Position{1, n - 1}); s.markDelete != want {
				t.Fatalf("n=%d tail=%d: mark-delete %s, want %s", n, tail, s.markDelete, want)
			}
		}

		// Cumulative to the middle of a run of individual acks.
		s, ls = ackStateFor(n)
		for e := n / 2; e < n; e++ {
			s.ack(Position{1, e})
		}
		s.setMarkDelete(Position{1, n/2 - 1})
		s.advance(ls)
		if want := (Position{1, n - 1}); s.markDelete != want {
			t.Fatalf("n=%d cumulative: mark-delete %s, want %s", n, s.markDelete, want)
		}
	}
}

// The top of the entry-id range a ledger can have (the forced rollover
// keeps every id below 2^32-1).
func TestAckStateTopOfEntryRange(t *testing.T) {
	n := maxLedgerEntries
	s, ls := ackStateFor(n)
	s.setMarkDelete(Position{1, n - 4})
	s.ack(Position{1, n - 1})
	s.ack(Position{1, n - 2})
	s.advance(ls)
	if want := (Position{1, n - 4}); s.markDelete != want {
		t.Fatalf("mark-delete %s, want %s", s.markDelete, want)
	}
	s.ack(Position{1, n - 3})
	s.advance(ls)
	if want := (Position{1, n - 1}); s.markDelete != want {
		t.Fatalf("mark-delete %s, want %s", s.markDelete, want)
	}
	if s.ack(Position{1, 1 << 32}) || s.ack(Position{1, -5}) {
		t.Fatal("ack outside the uint32 range accepted")
	}
}

// Acks recorded beyond a ledger's confirmed end (replayed from a damaged
// cursor ledger, say) never move mark-delete past the end: entries written
// there later must not count as acknowledged.
func TestAdvanceStopsAtConfirmedEnd(t *testing.T) {
	s := newAckState(Position{1, -1})
	s.ackRange(1, 0, 199)
	ls := ledgerList{{LedgerID: 1, Entries: 100}}
	s.advance(ls)
	if want := (Position{1, 99}); s.markDelete != want {
		t.Fatalf("mark-delete %s, want %s", s.markDelete, want)
	}
}
