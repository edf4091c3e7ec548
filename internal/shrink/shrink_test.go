package shrink

import (
	"fmt"
	"runtime"
	"testing"
)

// TestTrackerDue: a map churning at a small size is rebuilt once per
// MinDeletes deletes (cheap: its entries are few); one emptied is
// rebuilt once the deletes since the last rebuild outnumber twice what is
// left, and the count restarts after it.
func TestTrackerDue(t *testing.T) {
	var tr Tracker
	n := 0
	for range 10 * MinDeletes {
		if tr.Deleted(100) {
			n++
		}
	}
	if n != 10 {
		t.Fatalf("%d rebuilds over %d deletes from a 100-entry map, want 10", n, 10*MinDeletes)
	}
	tr = Tracker{}
	// 100,000 entries deleted down to 0: due once deletes > 2*left.
	left, at := 100_000, -1
	for i := 1; left > 0; i++ {
		left--
		if tr.Deleted(left) {
			at = i
			break
		}
	}
	// At i deletes, left = 100,000-i; due when i > 2*(100,000-i).
	if at != 66_667 {
		t.Fatalf("rebuild due after %d deletes, want 66,667", at)
	}
	if tr.Deleted(left - 1) {
		t.Fatal("due again right after a rebuild")
	}
	// Fewer than MinDeletes: never, even with nothing left.
	tr = Tracker{}
	for range MinDeletes - 1 {
		if tr.Deleted(0) {
			t.Fatal("due before MinDeletes deletes")
		}
	}
	if !tr.Deleted(0) {
		t.Fatal("not due at MinDeletes deletes with nothing left")
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestRebuildFrees: a map that held 200,000 entries and holds 1,000 keeps
// its room until rebuilt; the copy has every live entry and the old room
// is freed.
func TestRebuildFrees(t *testing.T) {
	m := map[string]*int{}
	for i := range 200_000 {
		m[fmt.Sprintf("persistent://public/default/t-%d", i)] = new(int)
	}
	var tr Tracker
	due := false
	for i := range 199_000 {
		delete(m, fmt.Sprintf("persistent://public/default/t-%d", i))
		due = tr.Deleted(len(m)) || due
	}
	if !due {
		t.Fatal("no rebuild due after 199,000 of 200,000 deletes")
	}
	before := heapInUse()
	r := Rebuild(m)
	m = nil
	after := heapInUse()
	if len(r) != 1000 {
		t.Fatalf("rebuilt map has %d entries, want 1000", len(r))
	}
	for i := 199_000; i < 200_000; i++ {
		if r[fmt.Sprintf("persistent://public/default/t-%d", i)] == nil {
			t.Fatalf("entry %d lost", i)
		}
	}
	// 200,000 slots of a 16-byte key and a pointer: several MB.
	if freed := int64(before) - int64(after); freed < 4<<20 {
		t.Fatalf("rebuild freed %d bytes, want at least 4 MiB", freed)
	}
	t.Logf("rebuild freed %d KiB", (int64(before)-int64(after))>>10)
	runtime.KeepAlive(r)
}
