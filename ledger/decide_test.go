package ledger

import (
	"errors"
	"slices"
	"testing"
)

func TestWriteSet(t *testing.T) {
	for _, tc := range []struct {
		e      int64
		ens, q int
		want   []int
	}{
		{0, 3, 2, []int{0, 1}},
		{2, 3, 2, []int{2, 0}},
		{7, 5, 3, []int{2, 3, 4}},
		{9, 5, 3, []int{4, 0, 1}},
		{4, 1, 1, []int{0}},
	} {
		got := writeSet(tc.e, tc.ens, tc.q)
		if !slices.Equal(got, tc.want) {
			t.Errorf("writeSet(%d, %d, %d) = %v, want %v", tc.e, tc.ens, tc.q, got, tc.want)
		}
		for idx := range tc.ens {
			if in := inWriteSet(tc.e, idx, tc.ens, tc.q); in != slices.Contains(tc.want, idx) {
				t.Errorf("inWriteSet(%d, %d, %d, %d) = %v", tc.e, idx, tc.ens, tc.q, in)
			}
		}
	}
}

func TestFenceQuorum(t *testing.T) {
	T, F := true, false
	for _, tc := range []struct {
		name      string
		answered  []bool
		wq, aq    int
		wantStart int
	}{
		{"E3Qw2Qa2 all", []bool{T, T, T}, 2, 2, -1},
		{"E3Qw2Qa2 one down", []bool{T, F, T}, 2, 2, -1},
		{"E3Qw2Qa2 two down", []bool{F, F, T}, 2, 2, 0},
		{"E3Qw2Qa2 two down, set 1", []bool{T, F, F}, 2, 2, 1},
		{"E3Qw3Qa2 one down", []bool{T, F, T}, 3, 2, -1},
		{"E3Qw3Qa2 two down", []bool{T, F, F}, 3, 2, 0},
		{"E3Qw2Qa1 one down", []bool{T, F, T}, 2, 1, 0},
		{"E1 down", []bool{F}, 1, 1, 0},
		{"E5Qw3Qa2 one down", []bool{T, T, F, T, T}, 3, 2, -1},
		{"E5Qw3Qa2 two apart", []bool{F, T, T, F, T}, 3, 2, 3}, // {3,4,0} holds both
		{"E5Qw3Qa2 two adjacent", []bool{T, F, F, T, T}, 3, 2, 0},
	} {
		if start, _ := fenceQuorum(tc.answered, tc.wq, tc.aq); start != tc.wantStart {
			t.Errorf("%s: fenceQuorum(%v, %d, %d) = %d, want %d", tc.name, tc.answered, tc.wq, tc.aq, start, tc.wantStart)
		}
	}
}

func TestDecideEntry(t *testing.T) {
	for _, tc := range []struct {
		found, missing, failed, wq, aq int
		want                           entryOutcome
	}{
		{1, 0, 0, 2, 2, entryExists},
		{1, 1, 0, 2, 2, entryExists},
		{0, 1, 0, 2, 2, entryAbsent}, // Qw-Qa+1 = 1
		{0, 0, 1, 2, 2, entryUndecided},
		{0, 0, 2, 2, 2, entryUnknown},
		{0, 1, 0, 3, 2, entryUndecided}, // need 2 no-entry answers
		{0, 2, 0, 3, 2, entryAbsent},
		{0, 1, 2, 3, 2, entryUnknown},
		{0, 1, 1, 3, 2, entryUndecided},
		{0, 1, 0, 2, 1, entryUndecided}, // Qa=1: both must lack it
		{0, 2, 0, 2, 1, entryAbsent},
	} {
		if got := decideEntry(tc.found, tc.missing, tc.failed, tc.wq, tc.aq); got != tc.want {
			t.Errorf("decideEntry(found %d, missing %d, failed %d, Qw %d, Qa %d) = %d, want %d",
				tc.found, tc.missing, tc.failed, tc.wq, tc.aq, got, tc.want)
		}
	}
}

func TestPickBookies(t *testing.T) {
	avail := []string{"a", "b", "c", "d"}
	got, err := pickBookies(avail, 2, func(b string) bool { return b == "a" || b == "c" })
	slices.Sort(got)
	if err != nil || !slices.Equal(got, []string{"b", "d"}) {
		t.Fatalf("pickBookies = %v, %v; want [b d]", got, err)
	}
	if _, err := pickBookies(avail, 3, func(b string) bool { return b == "a" || b == "c" }); !errors.Is(err, ErrNotEnoughBookies) {
		t.Fatalf("pickBookies(3 of 2) err = %v, want ErrNotEnoughBookies", err)
	}
}

func TestMetadataValidate(t *testing.T) {
	good := Metadata{Format: MetadataFormat, EnsembleSize: 3, WriteQuorum: 2, AckQuorum: 2, State: StateOpen,
		LastEntryID: -1, Ensembles: []Segment{{0, []string{"a", "b", "c"}}, {10, []string{"a", "d", "c"}}}}
	b := encodeMetadata(&good)
	m, err := decodeMetadata(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.EnsembleAt(9).Bookies[1]; got != "b" {
		t.Errorf("EnsembleAt(9)[1] = %s, want b", got)
	}
	if got := m.EnsembleAt(10).Bookies[1]; got != "d" {
		t.Errorf("EnsembleAt(10)[1] = %s, want d", got)
	}
	for name, corrupt := range map[string]func(*Metadata){
		"format":        func(m *Metadata) { m.Format = 9 },
		"quorums":       func(m *Metadata) { m.AckQuorum = 3 },
		"no ensembles":  func(m *Metadata) { m.Ensembles = nil },
		"first not 0":   func(m *Metadata) { m.Ensembles[0].FirstEntry = 1 },
		"unsorted":      func(m *Metadata) { m.Ensembles[1].FirstEntry = 0 },
		"ensemble size": func(m *Metadata) { m.Ensembles[1].Bookies = []string{"a"} },
		"state":         func(m *Metadata) { m.State = "BROKEN" },
	} {
		c := good.clone()
		corrupt(&c)
		if _, err := decodeMetadata(encodeMetadata(&c)); !errors.Is(err, ErrBadMetadata) {
			t.Errorf("%s: decode err = %v, want ErrBadMetadata", name, err)
		}
	}
	if _, err := decodeMetadata([]byte("{")); !errors.Is(err, ErrBadMetadata) {
		t.Errorf("bad JSON: %v", err)
	}
}
