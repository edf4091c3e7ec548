package vfs

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// cuts records the syncs a Remover made and the files it removed, through an ErrorFS that injects nothing.
type cuts struct {
	mu      sync.Mutex
	syncs   int
	removed []string
}

func recordingFS() (*ErrorFS, *cuts) {
	c := &cuts{}
	efs := NewErrorFS(NewOS(), InjectorFunc(func(op Op, path string) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		switch op {
		case OpSync:
			c.syncs++
		case OpRemove:
			c.removed = append(c.removed, filepath.Base(path))
		}
		return nil
	}))
	return efs, c
}

// firstCutFS is the OS file system with a channel closed at the first
// Sync: a Remover's first cut.
func firstCutFS() (*ErrorFS, <-chan struct{}) {
	firstCut := make(chan struct{})
	var once sync.Once
	return NewErrorFS(NewOS(), InjectorFunc(func(op Op, _ string) error {
		if op == OpSync {
			once.Do(func() { close(firstCut) })
		}
		return nil
	})), firstCut
}

func writeFile(t *testing.T, path string, size int) {
	t.Helper()
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRemoverPaced: Remove renames the file to its trash name before it
// returns; the background then cuts it by one step at a time, each cut
// synced, keeping to the rate, and removes the rest. A 10-step file at
// 100 steps per second takes at least the 9 pauses between cuts.
func TestRemoverPaced(t *testing.T) {
	dir := t.TempDir()
	efs, c := recordingFS()
	const step = 64 << 10
	p := filepath.Join(dir, "00000001.log")
	writeFile(t, p, 10*step+100)
	r := NewRemover(efs, 100*step, step)
	defer r.Close()
	start := time.Now()
	if err := r.Remove(p); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("%s still there after Remove returned: %v", p, err)
	}
	r.Wait()
	elapsed := time.Since(start)
	if names, _ := efs.List(dir); len(names) != 0 {
		t.Fatalf("left in the dir: %v", names)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// 10 cuts of a step (the last leaves 100 bytes), then the remove.
	if c.syncs != 10 {
		t.Errorf("%d syncs, want one per cut (10)", c.syncs)
	}
	if !slices.Equal(c.removed, []string{"00000001.log.trash"}) {
		t.Errorf("removed %v, want the trash file", c.removed)
	}
	if min := 10 * 10 * time.Millisecond; elapsed < min {
		t.Errorf("removed in %v, faster than the rate allows (%v)", elapsed, min)
	}
}

// TestRemoverSweepAfterClose: Close stops a removal part way, leaving the
// file in the trash; a new Remover's Sweep of the dir finishes it, and
// ignores files that are not trash.
func TestRemoverSweepAfterClose(t *testing.T) {
	dir := t.TempDir()
	fsys, firstCut := firstCutFS()
	const step = 4 << 10
	p := filepath.Join(dir, "0000000000000001.txn")
	writeFile(t, p, 1000*step)
	writeFile(t, filepath.Join(dir, "0000000000000002.txn"), 10)
	r := NewRemover(fsys, step, step) // one step a second: far from done at Close
	if err := r.Remove(p); err != nil {
		t.Fatal(err)
	}
	<-firstCut
	r.Close()
	st, err := os.Stat(p + TrashSuffix)
	if err != nil {
		t.Fatalf("trash file gone after Close part way: %v", err)
	}
	if st.Size() != 999*step {
		t.Fatalf("trash file of %d bytes after Close, want one step cut (%d)", st.Size(), 999*step)
	}

	r2 := NewRemover(fsys, 1<<40, step)
	defer r2.Close()
	if err := r2.Sweep(dir); err != nil {
		t.Fatal(err)
	}
	r2.Wait()
	names, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"0000000000000002.txn"}) {
		t.Fatalf("after Sweep the dir holds %v, want only the file that was not trash", names)
	}
}

// TestRemoverUnpaced: rate 0 removes at once, and Sweep removes leftovers
// at once.
func TestRemoverUnpaced(t *testing.T) {
	dir := t.TempDir()
	fsys := NewOS()
	p := filepath.Join(dir, "a.log")
	writeFile(t, p, 1<<20)
	writeFile(t, filepath.Join(dir, "b.log"+TrashSuffix), 1<<20)
	r := NewRemover(fsys, 0, 0)
	defer r.Close()
	if err := r.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := r.Sweep(dir); err != nil {
		t.Fatal(err)
	}
	if names, _ := fsys.List(dir); len(names) != 0 {
		t.Fatalf("left: %v", names)
	}
}

// TestRemoverHurry: a removal paused for an hour finishes at once when the
// owner hurries it (a full disk), and later Removes are immediate until
// the hurry ends.
func TestRemoverHurry(t *testing.T) {
	dir := t.TempDir()
	fsys, firstCut := firstCutFS()
	const step = 4 << 10
	r := NewRemover(fsys, step/3600, step) // a step an hour
	defer r.Close()
	p := filepath.Join(dir, "a.log")
	writeFile(t, p, 100*step)
	if err := r.Remove(p); err != nil {
		t.Fatal(err)
	}
	<-firstCut
	r.Hurry(true)
	r.Wait()
	q := filepath.Join(dir, "b.log")
	writeFile(t, q, 100*step)
	if err := r.Remove(q); err != nil {
		t.Fatal(err)
	}
	if names, _ := fsys.List(dir); len(names) != 0 {
		t.Fatalf("left while hurried: %v", names)
	}
	r.Hurry(false)
	writeFile(t, q, 100*step)
	if err := r.Remove(q); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(q + TrashSuffix); err != nil {
		t.Fatalf("after the hurry a Remove is paced again (trash file): %v", err)
	}
}
