package bookieinfo

import "testing"

// TestLocal: the standalone's bookie reports its id, its read-only state
// and its stats when it has them, and is writable without stats when it
// does not.
func TestLocal(t *testing.T) {
	var src Source = Local{ID: "b0"}
	if got := src.Bookies(); len(got) != 1 || got[0].BookieID != "b0" || got[0].ReadOnly || got[0].Stats != nil {
		t.Fatalf("bare Local: %+v", got)
	}
	ro := true
	src = Local{ID: "b1", ReadOnly: func() bool { return ro }, Stats: func() map[string]float64 { return map[string]float64{"x": 1} }}
	if got := src.Bookies(); !got[0].ReadOnly || got[0].Stats["x"] != 1 {
		t.Fatalf("read-only Local with stats: %+v", got)
	}
	ro = false
	if got := src.Bookies(); got[0].ReadOnly {
		t.Fatal("ReadOnly is read on each call")
	}
}
