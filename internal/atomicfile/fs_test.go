package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

func readMem(t *testing.T, fs vfs.FS, name string) string {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	defer f.Close()
	st, _ := f.Stat()
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return string(b)
}

// TestWriteFSSurvivesCrash: once WriteFS returns, a crash (only what was
// synced survives) keeps the new contents under the name.
func TestWriteFSSurvivesCrash(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/d", 0o755); err != nil || fs.SyncDir("/") != nil {
		t.Fatal(err)
	}
	if err := WriteFS(fs, "/d", "f.tmp", "f", []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFS(fs, "/d", "f.tmp", "f", []byte("new contents")); err != nil {
		t.Fatal(err)
	}
	if got := readMem(t, fs.CrashClone(), "/d/f"); got != "new contents" {
		t.Fatalf("after a crash: %q", got)
	}
}

// TestWriteFSFailureLeavesOldOrNew: a failure at any step of WriteFS,
// then a crash, leaves the old contents or the new ones, never a part
// or nothing.
func TestWriteFSFailureLeavesOldOrNew(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpCreate, vfs.OpWrite, vfs.OpSync, vfs.OpRename, vfs.OpSyncDir} {
		mem := vfs.NewMem()
		mem.MkdirAll("/d", 0o755)
		mem.SyncDir("/")
		if err := WriteFS(mem, "/d", "f.tmp", "f", []byte("old")); err != nil {
			t.Fatal(err)
		}
		boom := errors.New("boom")
		efs := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(o vfs.Op, _ string) error {
			if o == op {
				return boom
			}
			return nil
		}))
		if err := WriteFS(efs, "/d", "f.tmp", "f", []byte("new contents")); !errors.Is(err, boom) {
			t.Fatalf("op %v: err %v, want boom", op, err)
		}
		for _, fs := range []vfs.FS{mem, mem.CrashClone()} {
			if got := readMem(t, fs, "/d/f"); got != "old" && got != "new contents" {
				t.Fatalf("op %v: %q", op, got)
			}
		}
	}
}

// TestRenameSyncsDir: Rename puts a written file under its name, and
// the temporary name is gone.
func TestRenameSyncsDir(t *testing.T) {
	dir := t.TempDir()
	tmp, dst := filepath.Join(dir, "p"+TempInfix+"1"), filepath.Join(dir, "p")
	if err := os.WriteFile(tmp, []byte("prog"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(dst); err != nil || string(b) != "prog" {
		t.Fatalf("%q %v", b, err)
	}
	assertOnly(t, dir, "p")
	if err := Rename(tmp, dst); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("rename of a missing file: %v", err)
	}
}

// TestCreateFSStaysOpen: CreateFS's file is the one under the name,
// durable with its first contents, and takes appends.
func TestCreateFSStaysOpen(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/d", 0o755); err != nil || fs.SyncDir("/") != nil {
		t.Fatal(err)
	}
	f, err := CreateFS(fs, "/d", "log.tmp", "log", []byte("head"))
	if err != nil {
		t.Fatal(err)
	}
	if got := readMem(t, fs.CrashClone(), "/d/log"); got != "head" {
		t.Fatalf("after a crash: %q", got)
	}
	if _, err := f.WriteAt([]byte("+rec"), 4); err != nil || f.Close() != nil {
		t.Fatal(err)
	}
	if got := readMem(t, fs, "/d/log"); got != "head+rec" {
		t.Fatalf("appended: %q", got)
	}
}
