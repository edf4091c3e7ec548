package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// call runs one operation of each Op through fsys on existing file "d/f".
func call(fsys FS, op Op) error {
	open := func() File {
		f, err := fsys.(*ErrorFS).Inner().OpenReadWrite("d/f")
		if err != nil {
			panic(err)
		}
		return &errorFile{fs: fsys.(*ErrorFS), f: f}
	}
	switch op {
	case OpCreate:
		_, err := fsys.Create("d/new")
		return err
	case OpOpen:
		_, err := fsys.Open("d/f")
		return err
	case OpOpenReadWrite:
		_, err := fsys.OpenReadWrite("d/f")
		return err
	case OpRemove:
		return fsys.Remove("d/f")
	case OpRename:
		return fsys.Rename("d/f", "d/g")
	case OpMkdirAll:
		return fsys.MkdirAll("d/e", 0o755)
	case OpList:
		_, err := fsys.List("d")
		return err
	case OpStat:
		_, err := fsys.Stat("d/f")
		return err
	case OpSyncDir:
		return fsys.SyncDir("d")
	case OpDiskUsage:
		_, _, err := fsys.(DiskUsager).DiskUsage("d")
		return err
	case OpRead:
		_, err := open().ReadAt(make([]byte, 1), 0)
		return err
	case OpWrite:
		_, err := open().WriteAt([]byte("xy"), 0)
		return err
	case OpSync:
		return open().Sync()
	case OpTruncate:
		return open().Truncate(0)
	case OpPreallocate:
		return open().Preallocate(0, 10)
	case OpFileStat:
		_, err := open().Stat()
		return err
	case OpClose:
		return open().Close()
	}
	panic("unknown op")
}

func newErrTestFS(t *testing.T, inj Injector) (*ErrorFS, *MemFS) {
	t.Helper()
	m := NewMem()
	m.MkdirAll("d", 0o755)
	f := mustWrite(t, m, "d/f", "abcd", true)
	f.Close()
	return NewErrorFS(m, inj), m
}

func TestErrorFSEveryOp(t *testing.T) {
	for op := Op(0); op < numOps; op++ {
		t.Run(op.String(), func(t *testing.T) {
			efs, _ := newErrTestFS(t, Error(nil, op))
			err := call(efs, op)
			if !errors.Is(err, ErrInjected) {
				t.Fatalf("%v with Error(nil, %v) = %v, want ErrInjected", op, op, err)
			}
			var pe *os.PathError
			if !errors.As(err, &pe) || pe.Op != op.String() {
				t.Fatalf("%v error %#v is not a PathError with Op %q", op, err, op.String())
			}
			// Every other op succeeds.
			for other := Op(0); other < numOps; other++ {
				if other == op {
					continue
				}
				efs, _ := newErrTestFS(t, Error(nil, op))
				if err := call(efs, other); err != nil {
					t.Fatalf("%v with Error(nil, %v) = %v, want nil", other, op, err)
				}
			}
		})
	}
}

func TestErrorFSNotFder(t *testing.T) {
	efs := NewErrorFS(Default, nil)
	f, err := efs.Create(t.TempDir() + "/f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := f.(Fder); ok {
		t.Fatalf("ErrorFS file implements Fder; io_uring would bypass injection")
	}
}

func TestInjectors(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		inj  func() Injector
		ops  []Op
		path string
		want []error // per call, nil = no error
	}{
		{"Error all ops", func() Injector { return Error(boom) }, []Op{OpWrite, OpSync}, "f", []error{boom, boom}},
		{"Error nil is ErrInjected", func() Injector { return Error(nil, OpSync) }, []Op{OpWrite, OpSync}, "f", []error{nil, ErrInjected}},
		{"FailNth", func() Injector { return FailNth(OpSync, 2, boom) }, []Op{OpSync, OpWrite, OpSync, OpSync}, "f", []error{nil, nil, boom, nil}},
		{"FailAfter sticky", func() Injector { return FailAfter(OpWrite, 2, unix.EIO) }, []Op{OpWrite, OpWrite, OpSync, OpWrite}, "f", []error{nil, unix.EIO, nil, unix.EIO}},
		{"PathMatch base", func() Injector { return PathMatch("*.log", Error(boom)) }, []Op{OpWrite}, "dir/0001.log", []error{boom}},
		{"PathMatch base miss", func() Injector { return PathMatch("*.log", Error(boom)) }, []Op{OpWrite}, "dir/0001.idx", []error{nil}},
		{"PathMatch full", func() Injector { return PathMatch("j/*/x", Error(boom)) }, []Op{OpWrite, OpWrite}, "j/a/x", []error{boom, boom}},
		{"PathMatch full miss", func() Injector { return PathMatch("j/*/x", Error(boom)) }, []Op{OpWrite}, "k/a/x", []error{nil}},
		{"And all fire", func() Injector { return And(Error(nil, OpSync), Error(boom)) }, []Op{OpSync, OpWrite}, "f", []error{boom, nil}},
		{"And counts only filtered", func() Injector { return And(PathMatch("f", Never), FailNth(OpSync, 1, boom)) }, []Op{OpSync}, "f", []error{nil}},
		{"And filter then Nth", func() Injector { return And(PathMatch("*.j", Error(nil)), FailNth(OpSync, 2, boom)) }, []Op{OpSync, OpSync, OpSync}, "a.j", []error{nil, boom, nil}},
		{"Or first wins", func() Injector { return Or(Error(nil, OpWrite), Error(boom)) }, []Op{OpWrite, OpSync}, "f", []error{ErrInjected, boom}},
		{"Or none", func() Injector { return Or(Never, Error(boom, OpRead)) }, []Op{OpWrite}, "f", []error{nil}},
		{"DiskFull", DiskFull, []Op{OpWrite, OpPreallocate, OpSync, OpRead}, "f", []error{unix.ENOSPC, unix.ENOSPC, nil, nil}},
		{"IOError", func() Injector { return IOError(OpSync) }, []Op{OpSync, OpWrite}, "f", []error{unix.EIO, nil}},
		{"Randomly p=1", func() Injector { return Randomly(1, 7, Error(boom)) }, []Op{OpWrite, OpWrite}, "f", []error{boom, boom}},
		{"Randomly p=0", func() Injector { return Randomly(0, 7, Error(boom)) }, []Op{OpWrite, OpWrite}, "f", []error{nil, nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inj := tc.inj()
			for i, op := range tc.ops {
				got := inj.MaybeError(op, tc.path)
				if (got == nil) != (tc.want[i] == nil) || (got != nil && !errors.Is(got, tc.want[i])) {
					t.Fatalf("call %d (%v %s) = %v, want %v", i, op, tc.path, got, tc.want[i])
				}
			}
		})
	}
}

func TestToggle(t *testing.T) {
	tg := NewToggle(Error(unix.EIO, OpSync))
	efs, _ := newErrTestFS(t, tg)
	f, _ := efs.OpenReadWrite("d/f")
	if err := f.Sync(); err != nil {
		t.Fatalf("Sync while disabled: %v", err)
	}
	tg.Enable()
	if err := f.Sync(); !errors.Is(err, unix.EIO) || !tg.Enabled() {
		t.Fatalf("Sync while enabled: %v, want EIO", err)
	}
	tg.Disable()
	if err := f.Sync(); err != nil {
		t.Fatalf("Sync after Disable: %v", err)
	}
}

func TestRandomlyDeterministic(t *testing.T) {
	run := func() (out []bool) {
		inj := Randomly(0.3, 42, Error(nil))
		for range 100 {
			out = append(out, inj.MaybeError(OpWrite, "f") != nil)
		}
		return out
	}
	a, b := run(), run()
	hits := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("Randomly not deterministic at %d", i)
		}
		if a[i] {
			hits++
		}
	}
	if hits < 10 || hits > 60 {
		t.Fatalf("Randomly(0.3) fired %d/100 times", hits)
	}
}

func TestShortWrite(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"default", nil, io.ErrShortWrite},
		{"ENOSPC", unix.ENOSPC, unix.ENOSPC},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			efs, m := newErrTestFS(t, FailNth(OpWrite, 1, ShortWrite(tc.err)))
			f, _ := efs.OpenReadWrite("d/f")
			n, err := f.WriteAt([]byte("WXYZ12"), 2)
			if n != 3 || !errors.Is(err, tc.want) {
				t.Fatalf("WriteAt = %d, %v; want 3, %v", n, err, tc.want)
			}
			if got := readAll(t, m, "d/f"); got != "abWXY" {
				t.Fatalf("file = %q, want abWXY (half the write landed)", got)
			}
			if n, err := f.WriteAt([]byte("zz"), 0); n != 2 || err != nil {
				t.Fatalf("second WriteAt = %d, %v", n, err)
			}
		})
	}
	// As an error for other ops it is just the wrapped error.
	efs, _ := newErrTestFS(t, Error(ShortWrite(nil), OpSync))
	f, _ := efs.OpenReadWrite("d/f")
	if err := f.Sync(); !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("Sync = %v, want ErrShortWrite", err)
	}
}

func TestErrorFSSyncFailureLosesData(t *testing.T) {
	// A failed Sync is not performed: the data it should have made durable
	// is gone after a crash.
	efs, m := newErrTestFS(t, FailNth(OpSync, 1, unix.EIO))
	m.SyncDir("/")
	m.SyncDir("d")
	f, _ := efs.OpenReadWrite("d/f")
	f.WriteAt([]byte("ABCD"), 0)
	if err := f.Sync(); !errors.Is(err, unix.EIO) {
		t.Fatalf("Sync = %v, want EIO", err)
	}
	if got := readAll(t, m.CrashClone(), "d/f"); got != "abcd" {
		t.Fatalf("after failed sync and crash: %q, want abcd", got)
	}
}

func TestErrorFSDiskUsage(t *testing.T) {
	efs, m := newErrTestFS(t, nil)
	m.SetDiskUsage(1000, 500)
	if total, free, err := efs.DiskUsage("d"); total != 1000 || free != 500 || err != nil {
		t.Fatalf("DiskUsage passthrough = %d, %d, %v", total, free, err)
	}
	efs.SetDiskUsage(1000, 0)
	if total, free, err := efs.DiskUsage("d"); total != 1000 || free != 0 || err != nil {
		t.Fatalf("DiskUsage override = %d, %d, %v", total, free, err)
	}
	efs.ClearDiskUsage()
	if _, free, _ := efs.DiskUsage("d"); free != 500 {
		t.Fatalf("DiskUsage after Clear free = %d, want 500", free)
	}
	noDU := NewErrorFS(struct{ FS }{m}, nil)
	if _, _, err := noDU.DiskUsage("d"); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("DiskUsage on non-DiskUsager = %v, want ErrUnsupported", err)
	}
	if _, _, err := NewErrorFS(m, IOError(OpDiskUsage)).DiskUsage("d"); !errors.Is(err, unix.EIO) {
		t.Fatalf("injected DiskUsage = %v, want EIO", err)
	}
}

func TestErrorFSPassesInnerErrors(t *testing.T) {
	efs, _ := newErrTestFS(t, nil)
	if _, err := efs.Open("missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open(missing) = %v", err)
	}
	testFS(t, efs, "/x")
}

func TestOpString(t *testing.T) {
	seen := map[string]bool{}
	for op := Op(0); op < numOps; op++ {
		s := op.String()
		if s == "" || seen[s] {
			t.Fatalf("Op %d has empty or duplicate name %q", op, s)
		}
		seen[s] = true
	}
	if Op(-1).String() != "op(?)" || numOps.String() != "op(?)" {
		t.Fatalf("out-of-range Op names")
	}
}
