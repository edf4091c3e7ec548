package bundle

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// FullUpper is the (inclusive) upper end of the hash space.
const FullUpper = 0xffffffff

// DefaultCount is the number of bundles a namespace gets when neither its
// creation nor its policies say otherwise (Pulsar's
// defaultNumberOfNamespaceBundles).
const DefaultCount = 4

// MaxCount bounds the bundles of one namespace (Pulsar's
// loadBalancerNamespaceMaximumBundles).
const MaxCount = 128

// Errors. Callers use errors.Is.
var (
	// ErrInvalid: a malformed range string, boundary list or count. Final.
	ErrInvalid = errors.New("bundle: invalid")
	// ErrCannotSplit: the split point is not strictly inside the bundle, or
	// the namespace already has MaxCount bundles. Final.
	ErrCannotSplit = errors.New("bundle: cannot split")
	// ErrNotFound: no bundle of the namespace has the given range. Final.
	ErrNotFound = errors.New("bundle: no such bundle")
)

// Range is one bundle's hash range: [Lower, Upper), or [Lower, Upper] when
// Upper is FullUpper.
type Range struct {
	Lower, Upper uint32
}

// String returns Pulsar's range string, e.g. "0x00000000_0x40000000".
func (r Range) String() string { return fmt.Sprintf("0x%08x_0x%08x", r.Lower, r.Upper) }

// Contains reports whether hash h falls in r.
func (r Range) Contains(h uint32) bool {
	if r.Upper == FullUpper {
		return h >= r.Lower
	}
	return h >= r.Lower && h < r.Upper
}

// ParseRange parses a range string "0xLLLLLLLL_0xUUUUUUUU" (Java's
// Long.decode accepts other spellings; so do we: any base prefix).
func ParseRange(s string) (Range, error) {
	lo, hi, ok := strings.Cut(s, "_")
	if !ok {
		return Range{}, fmt.Errorf("%w: range %q", ErrInvalid, s)
	}
	l, err1 := parseBound(lo)
	u, err2 := parseBound(hi)
	if err1 != nil || err2 != nil || l >= u {
		return Range{}, fmt.Errorf("%w: range %q", ErrInvalid, s)
	}
	return Range{uint32(l), uint32(u)}, nil
}

func parseBound(s string) (uint64, error) {
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil || v > FullUpper {
		return 0, fmt.Errorf("%w: boundary %q", ErrInvalid, s)
	}
	return v, nil
}

// Hash returns the bundle hash of a canonical topic name.
func Hash(topic string) uint32 { return crc32.ChecksumIEEE([]byte(topic)) }

// Bundles is one namespace's bundle boundaries (immutable once made).
type Bundles struct {
	bounds []uint32 // strictly increasing, bounds[0]=0, last=FullUpper
}

// Even returns n bundles of equal width (see the package doc).
func Even(n int) (Bundles, error) {
	if n < 1 || n > MaxCount {
		return Bundles{}, fmt.Errorf("%w: %d bundles (want 1..%d)", ErrInvalid, n, MaxCount)
	}
	seg := uint64(1<<32) / uint64(n)
	b := make([]uint32, 0, n+1)
	for i := range uint64(n) {
		b = append(b, uint32(i*seg))
	}
	return Bundles{bounds: append(b, FullUpper)}, nil
}

// FromBoundaries validates and wraps a boundary list.
func FromBoundaries(bounds []uint32) (Bundles, error) {
	if len(bounds) < 2 || bounds[0] != 0 || bounds[len(bounds)-1] != FullUpper {
		return Bundles{}, fmt.Errorf("%w: boundaries must run from 0x00000000 to 0xffffffff: %v", ErrInvalid, bounds)
	}
	for i := 1; i < len(bounds); i++ {
		if bounds[i] <= bounds[i-1] {
			return Bundles{}, fmt.Errorf("%w: boundaries not increasing at %d", ErrInvalid, i)
		}
	}
	return Bundles{bounds: slices.Clone(bounds)}, nil
}

// Count returns the number of bundles.
func (b Bundles) Count() int { return len(b.bounds) - 1 }

// Ranges returns every bundle's range, in hash order.
func (b Bundles) Ranges() []Range {
	out := make([]Range, 0, b.Count())
	for i := 0; i+1 < len(b.bounds); i++ {
		out = append(out, Range{b.bounds[i], b.bounds[i+1]})
	}
	return out
}

// Find returns the bundle holding hash h.
func (b Bundles) Find(h uint32) Range {
	i, found := sort.Find(len(b.bounds), func(i int) int {
		switch {
		case h < b.bounds[i]:
			return -1
		case h > b.bounds[i]:
			return 1
		}
		return 0
	})
	if !found {
		i-- // insertion point - 1
	}
	if i >= b.Count() {
		i = b.Count() - 1 // the inclusive full upper bound
	}
	return Range{b.bounds[i], b.bounds[i+1]}
}

// ForTopic returns the bundle of a canonical topic name.
func (b Bundles) ForTopic(topic string) Range { return b.Find(Hash(topic)) }

// Has reports whether r is one of the bundles.
func (b Bundles) Has(r Range) bool {
	i, ok := slices.BinarySearch(b.bounds, r.Lower)
	return ok && i+1 < len(b.bounds) && b.bounds[i+1] == r.Upper
}

// Split returns the bundles with r divided at point, which must lie
// strictly inside r.
func (b Bundles) Split(r Range, point uint32) (Bundles, error) {
	if !b.Has(r) {
		return Bundles{}, fmt.Errorf("%w: %s", ErrNotFound, r)
	}
	if point <= r.Lower || point >= r.Upper {
		return Bundles{}, fmt.Errorf("%w: point 0x%08x not inside %s", ErrCannotSplit, point, r)
	}
	if b.Count() >= MaxCount {
		return Bundles{}, fmt.Errorf("%w: already %d bundles", ErrCannotSplit, b.Count())
	}
	i, _ := slices.BinarySearch(b.bounds, r.Lower)
	return Bundles{bounds: slices.Insert(slices.Clone(b.bounds), i+1, point)}, nil
}

// Middle is range_equally_divide's split point of r.
func Middle(r Range) uint32 { return r.Lower + (r.Upper-r.Lower)/2 }

// SplitByTopics is topic_count_equally_divide's split point of r: the
// midpoint between the two middle hashes of the topics in r. ok is false
// with fewer than two distinct hashes.
func SplitByTopics(r Range, topics []string) (point uint32, ok bool) {
	var hs []uint32
	for _, t := range topics {
		if h := Hash(t); r.Contains(h) {
			hs = append(hs, h)
		}
	}
	slices.Sort(hs)
	hs = slices.Compact(hs)
	if len(hs) < 2 {
		return 0, false
	}
	m := len(hs) / 2
	a, c := uint64(hs[m-1]), uint64(hs[m])
	p := uint32((a + c + 1) / 2) // > a, <= c: the upper half starts at c at the latest
	if p <= r.Lower || p >= r.Upper {
		return 0, false
	}
	return p, true
}

// data is Pulsar's BundlesData JSON.
type data struct {
	Boundaries []string `json:"boundaries"`
	NumBundles int      `json:"numBundles"`
}

// MarshalJSON writes BundlesData.
func (b Bundles) MarshalJSON() ([]byte, error) {
	d := data{NumBundles: b.Count()}
	for _, v := range b.bounds {
		d.Boundaries = append(d.Boundaries, fmt.Sprintf("0x%08x", v))
	}
	return json.Marshal(d)
}

// Parse reads BundlesData JSON. With no boundaries but numBundles > 0 it
// returns Even(numBundles), as Pulsar does for a namespace created with
// only a bundle count.
func Parse(js []byte) (Bundles, error) {
	var d data
	if err := json.Unmarshal(js, &d); err != nil {
		return Bundles{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return FromData(d.Boundaries, d.NumBundles)
}

// FromData builds Bundles from BundlesData fields.
func FromData(boundaries []string, numBundles int) (Bundles, error) {
	if len(boundaries) == 0 {
		if numBundles == 0 {
			numBundles = DefaultCount
		}
		return Even(numBundles)
	}
	bs := make([]uint32, 0, len(boundaries))
	for _, s := range boundaries {
		v, err := parseBound(s)
		if err != nil {
			return Bundles{}, err
		}
		bs = append(bs, uint32(v))
	}
	return FromBoundaries(bs)
}
