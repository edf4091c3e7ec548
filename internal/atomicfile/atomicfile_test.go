package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := WriteBytes(p, []byte("old"), Options{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteBytes(p, []byte("new contents"), Options{Perm: 0o755, SyncDir: true}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != "new contents" {
		t.Fatalf("read %q, %v", got, err)
	}
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v, want 0755", st.Mode().Perm())
	}
	assertOnly(t, dir, "f")
}

func TestWriteFailureLeavesOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := WriteBytes(p, []byte("old"), Options{}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(p, Options{}, func(f *os.File) error {
		f.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	got, _ := os.ReadFile(p)
	if string(got) != "old" {
		t.Fatalf("destination changed to %q", got)
	}
	assertOnly(t, dir, "f")
}

func TestWriteMissingDir(t *testing.T) {
	if err := WriteBytes(filepath.Join(t.TempDir(), "no", "f"), nil, Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err %v, want not exist", err)
	}
}

// assertOnly checks no temporary file is left behind.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(names) {
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		t.Fatalf("directory holds %v, want %v", got, names)
	}
}
