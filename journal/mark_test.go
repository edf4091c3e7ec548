package journal

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"path"
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestMarkInPlace: after the first checkpoint wrote the two-slot lastMark
// file, checkpoints overwrite one slot in place, alternating, and sync it:
// no create, rename or directory sync (so no metadata to commit).
func TestMarkInPlace(t *testing.T) {
	mem := vfs.NewMem()
	var (
		mu  sync.Mutex
		ops []vfs.Op
	)
	rec := vfs.InjectorFunc(func(op vfs.Op, p string) error {
		if path.Base(p) == markName || path.Base(p) == markTmpName || (op == vfs.OpSyncDir && path.Clean(p) == testDir) {
			mu.Lock()
			ops = append(ops, op)
			mu.Unlock()
		}
		return nil
	})
	j := mustOpen(t, testOptions(vfs.NewErrorFS(mem, rec)))
	defer j.Close()
	pos := appendAll(t, j, makeRecords(6, 10, 0))
	if err := j.Checkpoint(pos[0]); err != nil {
		t.Fatal(err)
	}
	if b := readFile(t, mem, path.Join(testDir, markName)); len(b) != markFileSize {
		t.Fatalf("lastMark is %d bytes, want %d", len(b), markFileSize)
	}
	mu.Lock()
	ops = nil
	mu.Unlock()
	var slots []int
	for _, p := range pos[1:] {
		if err := j.Checkpoint(p); err != nil {
			t.Fatal(err)
		}
		m, slot, err := readMark(mem, testDir)
		if err != nil || m != p {
			t.Fatalf("readMark = %v, %v, want %v", m, err, p)
		}
		slots = append(slots, slot)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, op := range ops {
		if op == vfs.OpCreate || op == vfs.OpRename || op == vfs.OpSyncDir {
			t.Fatalf("in-place checkpoints made op %v (all: %v)", op, ops)
		}
	}
	if want := []vfs.Op{vfs.OpOpenReadWrite, vfs.OpWrite, vfs.OpSync, vfs.OpClose}; !opsRepeat(ops, want, len(pos)-1) {
		t.Fatalf("in-place checkpoints made %v, want %v per checkpoint", ops, want)
	}
	for i := 1; i < len(slots); i++ {
		if slots[i] == slots[i-1] {
			t.Fatalf("slots written %v: not alternating", slots)
		}
	}
}

func opsRepeat(ops, unit []vfs.Op, n int) bool {
	if len(ops) != n*len(unit) {
		return false
	}
	for i, op := range ops {
		if op != unit[i%len(unit)] {
			return false
		}
	}
	return true
}

// TestMarkTornSlot: a crash during an in-place mark write (written, not
// yet synced) leaves either mark, never none: crash clones that keep any
// prefix of the write, torn or not, open with the previous mark or the new
// one. A slot torn by hand falls back to the other.
func TestMarkTornSlot(t *testing.T) {
	mem := vfs.NewMem()
	toggle := vfs.NewToggle(vfs.PathMatch(markName, vfs.IOError(vfs.OpSync)))
	j := mustOpen(t, testOptions(vfs.NewErrorFS(mem, toggle)))
	pos := appendAll(t, j, makeRecords(4, 10, 0))
	for _, p := range pos[:3] {
		if err := j.Checkpoint(p); err != nil {
			t.Fatal(err)
		}
	}
	toggle.Enable()
	if err := j.Checkpoint(pos[3]); err == nil {
		t.Fatal("Checkpoint with a failing sync succeeded")
	}
	seen := map[Position]int{}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 200 {
		var c *vfs.MemFS
		if i%2 == 0 {
			c = mem.CrashCloneRandom(rng)
		} else {
			c = mem.CrashCloneSubset(rng)
		}
		m, _, err := readMark(c, testDir)
		if err != nil || (m != pos[2] && m != pos[3]) {
			t.Fatalf("clone %d: readMark = %v, %v; want %v or %v", i, m, err, pos[2], pos[3])
		}
		seen[m]++
		j2, err := Open(testOptions(c))
		if err != nil {
			t.Fatalf("clone %d: Open = %v", i, err)
		}
		if j2.LastMark() != m {
			t.Fatalf("clone %d: LastMark %v, file %v", i, j2.LastMark(), m)
		}
		j2.Close()
	}
	if seen[pos[2]] == 0 || seen[pos[3]] == 0 {
		t.Fatalf("marks after the crash clones: %v; want both the old and the new", seen)
	}
	toggle.Disable()
	j.Close()

	// Tear the newer slot by hand: its second half (offset, checksum)
	// zeroed, as if only the first half of the write had landed.
	p := path.Join(testDir, markName)
	b := readFile(t, mem, p)
	_, newer, err := readMark(mem, testDir)
	if err != nil {
		t.Fatal(err)
	}
	other := 1 - newer
	torn := bytes.Clone(b)
	clear(torn[newer*markSlot+markSize/2 : newer*markSlot+markSize])
	if bytes.Equal(torn, b) {
		t.Fatal("tearing changed nothing")
	}
	writeFile(t, mem, p, torn)
	_, older, _ := decodeMark(b[other*markSlot : other*markSlot+markSize])
	if m, slot, err := readMark(mem, testDir); err != nil || m != older || slot != other {
		t.Fatalf("readMark with slot %d torn = %v, slot %d, %v; want %v from slot %d", newer, m, slot, err, older, other)
	}
	// Both torn: corruption, named as such.
	copy(torn[other*markSlot:], []byte("garbage!"))
	writeFile(t, mem, p, torn)
	if _, _, err := readMark(mem, testDir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("readMark with both slots torn = %v, want ErrCorrupt", err)
	}
}

// TestMarkLegacyFile: a one-slot lastMark (older versions) is read, and
// the next checkpoint replaces it with a two-slot file.
func TestMarkLegacyFile(t *testing.T) {
	mem := vfs.NewMem()
	j := mustOpen(t, testOptions(mem))
	pos := appendAll(t, j, makeRecords(3, 10, 0))
	j.Close()
	mem.MkdirAll(testDir, 0o755)
	writeFile(t, mem, path.Join(testDir, markName), appendMark(nil, pos[1]))
	j = mustOpen(t, testOptions(mem))
	defer j.Close()
	if j.LastMark() != pos[1] {
		t.Fatalf("LastMark from a one-slot file = %v, want %v", j.LastMark(), pos[1])
	}
	if err := j.Checkpoint(pos[2]); err != nil {
		t.Fatal(err)
	}
	b := readFile(t, mem, path.Join(testDir, markName))
	if len(b) != markFileSize {
		t.Fatalf("lastMark after a checkpoint is %d bytes, want %d", len(b), markFileSize)
	}
	for _, off := range []int{0, markSlot} {
		if _, m, err := decodeMark(b[off : off+markSize]); err != nil || m != pos[2] {
			t.Fatalf("slot at %d = %v, %v; want %v", off, m, err, pos[2])
		}
	}
}
