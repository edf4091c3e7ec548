package vfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"
)

// testFS exercises the FS contract; both OSFS and MemFS must pass it.
func testFS(t *testing.T, fsys FS, dir string) {
	t.Helper()
	sub := filepath.Join(dir, "a", "b")
	if err := fsys.MkdirAll(sub, 0o755); err != nil {
		t.Fatalf("MkdirAll: %v", err)
	}
	name := filepath.Join(sub, "f")
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if _, err := f.WriteAt([]byte("hello world"), 0); err != nil {
		t.Fatalf("WriteAt: %v", err)
	}
	if _, err := f.WriteAt([]byte("W"), 6); err != nil {
		t.Fatalf("WriteAt: %v", err)
	}
	if err := f.Preallocate(0, 1<<20); err != nil {
		t.Fatalf("Preallocate: %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() != 11 {
		t.Fatalf("Stat after Preallocate = %v, %v; want size 11 (KEEP_SIZE)", fi, err)
	}
	buf := make([]byte, 20)
	n, err := f.ReadAt(buf, 0)
	if n != 11 || err != io.EOF || string(buf[:n]) != "hello World" {
		t.Fatalf("ReadAt = %d, %v, %q; want 11, EOF, %q", n, err, buf[:n], "hello World")
	}
	if f.Name() != name {
		t.Fatalf("Name() = %q, want %q", f.Name(), name)
	}
	if err := f.Truncate(5); err != nil {
		t.Fatalf("Truncate: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	r, err := fsys.Open(name)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, err := r.WriteAt([]byte("x"), 0); err == nil {
		t.Fatalf("WriteAt on read-only file succeeded")
	}
	n, _ = r.ReadAt(buf, 0)
	if string(buf[:n]) != "hello" {
		t.Fatalf("after Truncate(5) read %q, want hello", buf[:n])
	}
	r.Close()

	rw, err := fsys.OpenReadWrite(name)
	if err != nil {
		t.Fatalf("OpenReadWrite: %v", err)
	}
	if _, err := rw.WriteAt([]byte("J"), 0); err != nil {
		t.Fatalf("WriteAt: %v", err)
	}
	n, _ = rw.ReadAt(buf, 0)
	if string(buf[:n]) != "Jello" {
		t.Fatalf("read %q, want Jello (no truncate on OpenReadWrite)", buf[:n])
	}
	rw.Close()

	if err := fsys.Rename(name, filepath.Join(sub, "g")); err != nil {
		t.Fatalf("Rename: %v", err)
	}
	if _, err := fsys.Stat(name); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat(old) err = %v, want ErrNotExist", err)
	}
	if _, err := fsys.Open(filepath.Join(sub, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open(missing) err = %v, want ErrNotExist", err)
	}
	g, _ := fsys.Create(filepath.Join(sub, "c"))
	g.Close()
	got, err := fsys.List(sub)
	if err != nil || !slices.Equal(got, []string{"c", "g"}) {
		t.Fatalf("List = %v, %v; want [c g]", got, err)
	}
	if err := fsys.SyncDir(sub); err != nil {
		t.Fatalf("SyncDir: %v", err)
	}
	if err := fsys.Remove(filepath.Join(dir, "a")); err == nil {
		t.Fatalf("Remove(non-empty dir) succeeded")
	}
	for _, e := range []string{"c", "g"} {
		if err := fsys.Remove(filepath.Join(sub, e)); err != nil {
			t.Fatalf("Remove: %v", err)
		}
	}
	if err := fsys.Remove(sub); err != nil {
		t.Fatalf("Remove(empty dir): %v", err)
	}
	st, err := fsys.Stat(filepath.Join(dir, "a"))
	if err != nil || !st.IsDir() {
		t.Fatalf("Stat(dir) = %v, %v", st, err)
	}
	if du, ok := fsys.(DiskUsager); ok {
		total, free, err := du.DiskUsage(dir)
		if err != nil || total == 0 || free > total {
			t.Fatalf("DiskUsage = %d, %d, %v", total, free, err)
		}
	}
}

func TestOSFS(t *testing.T) { testFS(t, NewOS(), t.TempDir()) }

func TestMemFSContract(t *testing.T) { testFS(t, NewMem(), "/tmp/x") }

func TestOSFileFd(t *testing.T) {
	f, err := Default.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, ok := f.(Fder)
	if !ok || fd.Fd() == 0 {
		t.Fatalf("OS file does not implement Fder with a valid fd")
	}
	if _, ok := Default.(DiskUsager); !ok {
		t.Fatalf("OS FS does not implement DiskUsager")
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{1}, 4096), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}
