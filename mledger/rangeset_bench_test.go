package mledger

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// rangeSet is the alternative to per-ledger roaring bitmaps that the
// benchmarks below compare against: a sorted slice of disjoint, non-adjacent
// inclusive entry ranges of one ledger (what Pulsar's
// individuallyDeletedMessages is, as a RangeSet of positions).
type rangeSet struct{ r [][2]int64 }

func (s *rangeSet) add(x int64) {
	i := sort.Search(len(s.r), func(i int) bool { return s.r[i][1] >= x-1 })
	if i < len(s.r) && s.r[i][0] <= x+1 {
		// Touches or contains r[i].
		if x >= s.r[i][0] && x <= s.r[i][1] {
			return
		}
		if x == s.r[i][1]+1 {
			s.r[i][1] = x
			if i+1 < len(s.r) && s.r[i+1][0] == x+1 {
				s.r[i][1] = s.r[i+1][1]
				s.r = slices.Delete(s.r, i+1, i+2)
			}
			return
		}
		s.r[i][0] = x // x == r[i][0]-1
		return
	}
	s.r = slices.Insert(s.r, i, [2]int64{x, x})
}

func (s *rangeSet) bytes() int { return 16 * cap(s.r) }

// BenchmarkAckSetStructures compares the acked-set structures on the
// access patterns that matter: in-order acks (one growing run), scattered
// acks (every other entry: the worst case, one range per ack) arriving in
// order and in random order. It reports ns per ack and the in-memory bytes
// per ack; the persisted size is reported by TestMillionScatteredAcks.
func BenchmarkAckSetStructures(b *testing.B) {
	const n = 1 << 20
	patterns := map[string]func() []int64{
		"in-order": func() []int64 {
			xs := make([]int64, n)
			for i := range xs {
				xs[i] = int64(i)
			}
			return xs
		},
		"scattered-in-order": func() []int64 {
			xs := make([]int64, n/2)
			for i := range xs {
				xs[i] = int64(2 * i)
			}
			return xs
		},
		"scattered-random-64k": func() []int64 {
			xs := make([]int64, n/16)
			for i := range xs {
				xs[i] = int64(2 * i)
			}
			rand.New(rand.NewPCG(1, 1)).Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
			return xs
		},
		"scattered-random": func() []int64 {
			xs := make([]int64, n/2)
			for i := range xs {
				xs[i] = int64(2 * i)
			}
			rand.New(rand.NewPCG(1, 1)).Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
			return xs
		},
	}
	for _, name := range []string{"in-order", "scattered-in-order", "scattered-random-64k", "scattered-random"} {
		xs := patterns[name]()
		b.Run(fmt.Sprintf("roaring/%s", name), func(b *testing.B) {
			var st *ackState
			for b.Loop() {
				st = newAckState(Position{1, -2})
				for _, x := range xs {
					st.ack(Position{1, x})
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(xs)), "ns/ack")
			st.acked[1].RunOptimize()
			b.ReportMetric(float64(st.acked[1].GetSizeInBytes())/float64(len(xs)), "B/ack")
		})
		b.Run(fmt.Sprintf("rangeset/%s", name), func(b *testing.B) {
			if name == "scattered-random" {
				b.Skip("quadratic (O(n) memmove per insert): see scattered-random-64k")
			}
			var s *rangeSet
			for b.Loop() {
				s = &rangeSet{}
				for _, x := range xs {
					s.add(x)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(xs)), "ns/ack")
			b.ReportMetric(float64(s.bytes())/float64(len(xs)), "B/ack")
		})
	}
}
