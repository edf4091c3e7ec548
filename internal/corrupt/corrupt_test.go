package corrupt

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestSentinels: a package's sentinel keeps its text, matches itself and
// the shared marker (wrapped too), and never another package's sentinel.
func TestSentinels(t *testing.T) {
	a, b := New("a: corrupt"), New("b: corrupt")
	if a.Error() != "a: corrupt" {
		t.Fatalf("text %q", a.Error())
	}
	w := fmt.Errorf("reading: %w", At(a, "/d/f.log", 4096, "bad checksum"))
	if !errors.Is(w, a) || !errors.Is(w, Err) {
		t.Fatalf("%v: want it to be a and the marker", w)
	}
	if errors.Is(w, b) {
		t.Fatalf("%v matches another package's sentinel", w)
	}
	if errors.Is(errors.New("a: corrupt"), Err) {
		t.Fatal("an unrelated error with the same text matches the marker")
	}
	if !strings.Contains(w.Error(), "/d/f.log at offset 4096: bad checksum") {
		t.Fatalf("%q lacks path and offset", w)
	}
}
