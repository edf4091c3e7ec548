package metadata

import (
	"errors"
	"slices"
	"testing"
)

func TestValidatePath(t *testing.T) {
	for _, p := range []string{"/", "/a", "/a/b", "/ledgers/00/0000/L0123", "/a.b", "/...", "/a b"} {
		if err := ValidatePath(p); err != nil {
			t.Errorf("ValidatePath(%q) = %v, want nil", p, err)
		}
	}
	for _, p := range []string{"", "a", "a/b", "/a/", "//", "//a", "/a//b", "/.", "/a/..", "/a\x00"} {
		if err := ValidatePath(p); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("ValidatePath(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
}

func TestPathHelpers(t *testing.T) {
	for _, tc := range []struct{ p, parent, base string }{
		{"/", "/", ""}, {"/a", "/", "a"}, {"/a/b", "/a", "b"}, {"/a/b/c", "/a/b", "c"},
	} {
		if got := Parent(tc.p); got != tc.parent {
			t.Errorf("Parent(%q) = %q, want %q", tc.p, got, tc.parent)
		}
		if got := Base(tc.p); got != tc.base {
			t.Errorf("Base(%q) = %q, want %q", tc.p, got, tc.base)
		}
		if tc.p != "/" {
			if got := Join(tc.parent, tc.base); got != tc.p {
				t.Errorf("Join(%q, %q) = %q, want %q", tc.parent, tc.base, got, tc.p)
			}
		}
	}
	if got := Ancestors("/a/b/c"); !slices.Equal(got, []string{"/a", "/a/b"}) {
		t.Errorf("Ancestors(/a/b/c) = %q", got)
	}
	if got := Ancestors("/a"); len(got) != 0 {
		t.Errorf("Ancestors(/a) = %q, want none", got)
	}
}

func TestSplitSequential(t *testing.T) {
	for _, tc := range []struct{ in, parent, prefix string }{
		{"/q/job-", "/q", "job-"}, {"/q/", "/q", ""}, {"/x", "/", "x"}, {"/a/b/c-", "/a/b", "c-"},
	} {
		parent, prefix, err := SplitSequential(tc.in)
		if err != nil || parent != tc.parent || prefix != tc.prefix {
			t.Errorf("SplitSequential(%q) = %q, %q, %v; want %q, %q", tc.in, parent, prefix, err, tc.parent, tc.prefix)
		}
	}
	for _, in := range []string{"", "noslash", "//x", "/a/.."} {
		if _, _, err := SplitSequential(in); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("SplitSequential(%q) = %v, want ErrInvalidPath", in, err)
		}
	}
	if got := SequentialName("id-", 42); got != "id-0000000042" {
		t.Errorf("SequentialName = %q", got)
	}
}
