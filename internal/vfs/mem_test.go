package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

func mustWrite(t *testing.T, fsys FS, name string, data string, sync bool) File {
	t.Helper()
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatalf("Create(%s): %v", name, err)
	}
	if _, err := f.WriteAt([]byte(data), 0); err != nil {
		t.Fatalf("WriteAt: %v", err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatalf("Sync: %v", err)
		}
	}
	return f
}

// readAll returns the content of name, or "<missing>".
func readAll(t *testing.T, fsys FS, name string) string {
	t.Helper()
	f, err := fsys.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		t.Fatalf("Open(%s): %v", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil && len(b) > 0 {
		t.Fatalf("ReadAt(%s): %v", name, err)
	}
	return string(b)
}

func TestMemFSCrashClone(t *testing.T) {
	type want map[string]string // path -> content or "<missing>"
	tests := []struct {
		name string
		run  func(t *testing.T, m *MemFS)
		want want
	}{
		{
			name: "unsynced file and entry lost",
			run: func(t *testing.T, m *MemFS) {
				mustWrite(t, m, "f", "data", false)
			},
			want: want{"f": "<missing>"},
		},
		{
			name: "synced data without SyncDir lost",
			run: func(t *testing.T, m *MemFS) {
				mustWrite(t, m, "f", "data", true)
			},
			want: want{"f": "<missing>"},
		},
		{
			name: "SyncDir without Sync keeps empty file",
			run: func(t *testing.T, m *MemFS) {
				mustWrite(t, m, "f", "data", false)
				m.SyncDir("/")
			},
			want: want{"f": ""},
		},
		{
			name: "Sync and SyncDir keep file",
			run: func(t *testing.T, m *MemFS) {
				mustWrite(t, m, "f", "data", true)
				m.SyncDir("/")
			},
			want: want{"f": "data"},
		},
		{
			name: "writes after Sync lost",
			run: func(t *testing.T, m *MemFS) {
				f := mustWrite(t, m, "f", "data", true)
				m.SyncDir("/")
				f.WriteAt([]byte("more"), 4)
				f.WriteAt([]byte("D"), 0)
			},
			want: want{"f": "data"},
		},
		{
			name: "truncate after Sync lost",
			run: func(t *testing.T, m *MemFS) {
				f := mustWrite(t, m, "f", "data", true)
				m.SyncDir("/")
				f.Truncate(1)
			},
			want: want{"f": "data"},
		},
		{
			name: "synced truncate kept",
			run: func(t *testing.T, m *MemFS) {
				f := mustWrite(t, m, "f", "data", true)
				m.SyncDir("/")
				f.Truncate(2)
				f.Truncate(6)
				f.Sync()
			},
			want: want{"f": "da\x00\x00\x00\x00"},
		},
		{
			name: "Create truncation unsynced",
			run: func(t *testing.T, m *MemFS) {
				mustWrite(t, m, "f", "old", true)
				m.SyncDir("/")
				mustWrite(t, m, "f", "new", false)
			},
			want: want{"f": "old"},
		},
		{
			name: "rename without SyncDir keeps old name",
			run: func(t *testing.T, m *MemFS) {
				mustWrite(t, m, "tmp", "v1", true)
				m.SyncDir("/")
				m.Rename("tmp", "final")
			},
			want: want{"tmp": "v1", "final": "<missing>"},
		},
		{
			name: "rename with SyncDir",
			run: func(t *testing.T, m *MemFS) {
				mustWrite(t, m, "tmp", "v1", true)
				m.SyncDir("/")
				m.Rename("tmp", "final")
				m.SyncDir("/")
			},
			want: want{"tmp": "<missing>", "final": "v1"},
		},
		{
			name: "rename replacing file atomically",
			run: func(t *testing.T, m *MemFS) {
				mustWrite(t, m, "cur", "v1", true)
				mustWrite(t, m, "cur.tmp", "v2", true)
				m.SyncDir("/")
				m.Rename("cur.tmp", "cur")
			},
			want: want{"cur": "v1", "cur.tmp": "v2"},
		},
		{
			name: "remove without SyncDir undone",
			run: func(t *testing.T, m *MemFS) {
				mustWrite(t, m, "f", "x", true)
				m.SyncDir("/")
				m.Remove("f")
			},
			want: want{"f": "x"},
		},
		{
			name: "remove with SyncDir",
			run: func(t *testing.T, m *MemFS) {
				mustWrite(t, m, "f", "x", true)
				m.SyncDir("/")
				m.Remove("f")
				m.SyncDir("/")
			},
			want: want{"f": "<missing>"},
		},
		{
			name: "new directory needs parent SyncDir",
			run: func(t *testing.T, m *MemFS) {
				m.MkdirAll("d/e", 0o755)
				mustWrite(t, m, "d/e/f", "x", true)
				m.SyncDir("d/e")
				m.SyncDir("d")
			},
			want: want{"d/e/f": "<missing>"},
		},
		{
			name: "directory chain synced",
			run: func(t *testing.T, m *MemFS) {
				m.MkdirAll("d/e", 0o755)
				mustWrite(t, m, "d/e/f", "x", true)
				m.SyncDir("d/e")
				m.SyncDir("d")
				m.SyncDir("/")
			},
			want: want{"d/e/f": "x"},
		},
		{
			name: "cross-directory rename durable in both",
			run: func(t *testing.T, m *MemFS) {
				m.MkdirAll("a", 0o755)
				m.MkdirAll("b", 0o755)
				m.SyncDir("/")
				mustWrite(t, m, "a/f", "x", true)
				m.SyncDir("a")
				m.Rename("a/f", "b/f")
				m.SyncDir("b")
			},
			want: want{"a/f": "x", "b/f": "x"},
		},
		{
			name: "writes through removed file's handle",
			run: func(t *testing.T, m *MemFS) {
				f := mustWrite(t, m, "f", "x", true)
				m.SyncDir("/")
				m.Remove("f")
				m.SyncDir("/")
				f.WriteAt([]byte("y"), 0)
				f.Sync()
			},
			want: want{"f": "<missing>"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMem()
			tc.run(t, m)
			c := m.CrashClone()
			for p, w := range tc.want {
				if got := readAll(t, c, p); got != w {
					t.Errorf("after crash %s = %q, want %q", p, got, w)
				}
			}
			// A clone of a clone is the same: everything in it is durable.
			cc := c.CrashClone()
			for p, w := range tc.want {
				if got := readAll(t, cc, p); got != w {
					t.Errorf("after second crash %s = %q, want %q", p, got, w)
				}
			}
		})
	}
}

func TestMemFSCrashCloneIndependent(t *testing.T) {
	m := NewMem()
	f := mustWrite(t, m, "f", "abc", true)
	m.SyncDir("/")
	c := m.CrashClone()
	f.WriteAt([]byte("X"), 0)
	f.Sync()
	if got := readAll(t, c, "f"); got != "abc" {
		t.Fatalf("clone changed by a write to the original: %q", got)
	}
	g, _ := c.OpenReadWrite("f")
	g.WriteAt([]byte("Y"), 1)
	if got := readAll(t, m, "f"); got != "Xbc" {
		t.Fatalf("original changed by a write to the clone: %q", got)
	}
}

func TestMemFSCrashCloneRandom(t *testing.T) {
	m := NewMem()
	f := mustWrite(t, m, "j", "synced|", true)
	m.SyncDir("/")
	appends := []string{"aaaa|", "bbbb|", "cccc|", "dddd|"}
	off := int64(len("synced|"))
	full := "synced|"
	for _, a := range appends {
		f.WriteAt([]byte(a), off)
		off += int64(len(a))
		full += a
	}
	seen := map[string]bool{}
	for seed := range uint64(200) {
		c := m.CrashCloneRandom(rand.New(rand.NewPCG(seed, 1)))
		got := readAll(t, c, "j")
		if !bytes.HasPrefix([]byte(full), []byte(got)) || len(got) < len("synced|") {
			t.Fatalf("seed %d: crash left %q, want a prefix of %q at least as long as the synced part", seed, got, full)
		}
		seen[got] = true
		// Determinism.
		if again := readAll(t, m.CrashCloneRandom(rand.New(rand.NewPCG(seed, 1))), "j"); again != got {
			t.Fatalf("seed %d: not deterministic: %q vs %q", seed, got, again)
		}
	}
	// Whole-op prefixes (5 of them) plus torn ones.
	if len(seen) < 8 {
		t.Fatalf("only %d distinct crash states over 200 seeds: %v", len(seen), slices.Sorted(func(y func(string) bool) {
			for k := range seen {
				if !y(k) {
					return
				}
			}
		}))
	}
	if !seen["synced|"] || !seen[full] {
		t.Fatalf("crash states missing the extremes: synced-only %v, all %v", seen["synced|"], seen[full])
	}
}

func TestMemFSErrors(t *testing.T) {
	m := NewMem()
	m.MkdirAll("d", 0o755)
	mustWrite(t, m, "d/f", "x", false).Close()
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"open missing", func() error { _, err := m.Open("nope"); return err }(), unix.ENOENT},
		{"create in missing dir", func() error { _, err := m.Create("nope/f"); return err }(), unix.ENOENT},
		{"create through file", func() error { _, err := m.Create("d/f/g"); return err }(), unix.ENOTDIR},
		{"open dir", func() error { _, err := m.Open("d"); return err }(), unix.EISDIR},
		{"remove non-empty", m.Remove("d"), unix.ENOTEMPTY},
		{"remove missing", m.Remove("d/nope"), unix.ENOENT},
		{"rename missing", m.Rename("d/nope", "d/x"), unix.ENOENT},
		{"rename dir into itself", m.Rename("d", "d/sub"), unix.EINVAL},
		{"mkdir through file", m.MkdirAll("d/f/g", 0o755), unix.ENOTDIR},
		{"list file", func() error { _, err := m.List("d/f"); return err }(), unix.ENOTDIR},
		{"syncdir missing", m.SyncDir("nope"), unix.ENOENT},
	}
	for _, tc := range tests {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	f, _ := m.OpenReadWrite("d/f")
	f.Close()
	if _, err := f.WriteAt([]byte("x"), 0); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("WriteAt after Close: %v, want ErrClosed", err)
	}
	if err := f.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
	r, _ := m.Open("d/f")
	if _, err := r.WriteAt([]byte("x"), 0); !errors.Is(err, unix.EBADF) {
		t.Errorf("WriteAt on read-only: %v, want EBADF", err)
	}
}

func TestMemFSDiskUsage(t *testing.T) {
	m := NewMem()
	mustWrite(t, m, "f", "12345", false)
	total, free, err := m.DiskUsage("/")
	if err != nil || total != memDefaultTotal || free != memDefaultTotal-5 {
		t.Fatalf("DiskUsage = %d, %d, %v; want %d, %d", total, free, err, memDefaultTotal, memDefaultTotal-5)
	}
	m.SetDiskUsage(100, 3)
	if total, free, _ = m.DiskUsage("/"); total != 100 || free != 3 {
		t.Fatalf("DiskUsage after SetDiskUsage = %d, %d; want 100, 3", total, free)
	}
	if _, _, err := m.DiskUsage("missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("DiskUsage(missing) err = %v", err)
	}
}

func TestMemFSConcurrent(t *testing.T) {
	m := NewMem()
	m.MkdirAll("d", 0o755)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			name := fmt.Sprintf("d/f%d", g)
			f, err := m.Create(name)
			if err != nil {
				t.Error(err)
				return
			}
			buf := make([]byte, 64)
			for i := range 200 {
				f.WriteAt(buf, int64(i*64))
				f.ReadAt(buf, int64(i*32))
				if i%50 == 0 {
					f.Sync()
					m.SyncDir("d")
					m.CrashClone()
					m.List("d")
					m.Stat(name)
					m.DiskUsage("d")
				}
			}
			f.Close()
		})
	}
	wg.Wait()
	names, _ := m.List("d")
	if len(names) != 4 {
		t.Fatalf("List = %v, want 4 files", names)
	}
	for _, n := range names {
		fi, _ := m.Stat("d/" + n)
		if fi.Size() != 200*64 {
			t.Fatalf("%s size %d, want %d", n, fi.Size(), 200*64)
		}
	}
}

func TestMemFSCrashCloneSubset(t *testing.T) {
	m := NewMem()
	f := mustWrite(t, m, "j", "synced|", true)
	m.SyncDir("/")
	appends := []string{"aaaa|", "bbbb|", "cccc|"}
	off := int64(len("synced|"))
	for _, a := range appends {
		f.WriteAt([]byte(a), off)
		off += int64(len(a))
	}
	// Every byte after the synced part is either the written byte or zero
	// (a hole left by a lost earlier write); the synced part is intact.
	full := "synced|aaaa|bbbb|cccc|"
	holes := false
	for seed := range uint64(300) {
		got := readAll(t, m.CrashCloneSubset(rand.New(rand.NewPCG(seed, 2))), "j")
		if len(got) < len("synced|") || got[:7] != "synced|" || len(got) > len(full) {
			t.Fatalf("seed %d: %q", seed, got)
		}
		for i := 7; i < len(got); i++ {
			if got[i] != full[i] && got[i] != 0 {
				t.Fatalf("seed %d: byte %d = %q in %q, want %q or zero", seed, i, got[i], got, full[i])
			}
			if got[i] == 0 {
				holes = true
			}
		}
	}
	if !holes {
		t.Fatalf("no crash state with a hole (later write kept, earlier lost) in 300 seeds")
	}
}
