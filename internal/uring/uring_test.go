package uring

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

func TestABISizes(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"io_uring_sqe", unsafe.Sizeof(sqe{}), 64},
		{"io_uring_cqe", unsafe.Sizeof(cqe{}), 16},
		{"io_uring_params", unsafe.Sizeof(params{}), 120},
		{"sqe.userData offset", unsafe.Offsetof(sqe{}.userData), 32},
		{"sqe.addr3 offset", unsafe.Offsetof(sqe{}.addr3), 48},
		{"params.sqOff offset", unsafe.Offsetof(params{}.sqOff), 40},
		{"params.cqOff offset", unsafe.Offsetof(params{}.cqOff), 80},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

// pattern returns n deterministic bytes for seed.
func pattern(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 99))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

type writerCase struct {
	name string
	mode Mode
	open func(t *testing.T) vfs.File
	want string // Writer.String()
}

func osFile(t *testing.T) vfs.File {
	f, err := vfs.Default.Create(filepath.Join(t.TempDir(), "j"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func memFile(t *testing.T) vfs.File {
	f, err := vfs.NewMem().Create("j")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// writerCases are the Writer paths this machine offers. Without io_uring the
// uring cases are replaced by a check that ModeUring refuses and ModeAuto
// falls back (TestUnavailableFallback).
func writerCases() []writerCase {
	cs := []writerCase{
		{"pwrite/os", ModePwrite, osFile, "pwrite"},
		{"pwrite/mem", ModePwrite, memFile, "pwrite"},
		{"auto/mem", ModeAuto, memFile, "pwrite"},
	}
	if Available() {
		cs = append(cs,
			writerCase{"uring/os", ModeUring, osFile, "io_uring"},
			writerCase{"auto/os", ModeAuto, osFile, "io_uring+pwrite"},
		)
	} else {
		cs = append(cs, writerCase{"auto/os", ModeAuto, osFile, "pwrite"})
	}
	return cs
}

func TestUnavailableFallback(t *testing.T) {
	// ModeUring on a file without a descriptor always fails.
	if _, err := NewWriter(memFile(t), ModeUring); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("NewWriter(mem, ModeUring) = %v, want ErrUnavailable", err)
	}
	w, err := NewWriter(osFile(t), ModeUring)
	if Available() {
		if err != nil || fmt.Sprint(w) != "io_uring" {
			t.Fatalf("NewWriter(os, ModeUring) = %v, %v with io_uring available", w, err)
		}
		w.Close()
	} else if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("NewWriter(os, ModeUring) = %v without io_uring, want ErrUnavailable", err)
	}
	if _, err := NewWriter(osFile(t), Mode(42)); !errors.Is(err, ErrBadMode) {
		t.Fatalf("NewWriter(Mode(42)) = %v, want ErrBadMode", err)
	}
}

func TestWriterGroups(t *testing.T) {
	groups := []struct {
		name  string
		sizes []int
		sync  bool
	}{
		{"one 64KiB", []int{64 << 10}, true},
		{"16x4KiB", []int{16: 0}, true}, // sizes filled below
		{"odd sizes no sync", []int{1, 3, 5000, 7, 0, 12}, false},
		{"empty buffers", []int{0, 0, 9, 0}, true},
		{"sync only", nil, true},
		{"nothing", nil, false},
		{"over IOV_MAX", make([]int, 2500), true},
	}
	for i := range groups[1].sizes {
		groups[1].sizes[i] = 4096
	}
	for i := range groups[6].sizes {
		groups[6].sizes[i] = 1 + i%97
	}
	for _, wc := range writerCases() {
		t.Run(wc.name, func(t *testing.T) {
			f := wc.open(t)
			w, err := NewWriter(f, wc.mode)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(w); got != wc.want {
				t.Fatalf("writer = %s, want %s", got, wc.want)
			}
			var want []byte
			for round := range 2 {
				for gi, g := range groups {
					var bufs [][]byte
					for bi, n := range g.sizes {
						bufs = append(bufs, pattern(uint64(round*1000+gi*100+bi), n))
					}
					if err := w.Submit(int64(len(want)), bufs, g.sync); err != nil {
						t.Fatalf("%s: Submit: %v", g.name, err)
					}
					if err := w.Wait(); err != nil {
						t.Fatalf("%s: Wait: %v", g.name, err)
					}
					for _, b := range bufs {
						want = append(want, b...)
					}
				}
			}
			got := make([]byte, len(want)+10)
			n, err := f.ReadAt(got, 0)
			if n != len(want) || err != io.EOF {
				t.Fatalf("ReadAt = %d, %v; want %d, EOF", n, err, len(want))
			}
			if !bytes.Equal(got[:n], want) {
				t.Fatalf("file content differs from what was submitted")
			}
			if err := w.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		})
	}
}

func TestWriterOverwriteAndOffsets(t *testing.T) {
	for _, wc := range writerCases() {
		t.Run(wc.name, func(t *testing.T) {
			f := wc.open(t)
			w, err := NewWriter(f, wc.mode)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			steps := []struct {
				off  int64
				bufs []string
			}{
				{0, []string{"aaaa", "bbbb"}},
				{10, []string{"cc"}},
				{2, []string{"X", "Y"}},
			}
			for _, s := range steps {
				var bufs [][]byte
				for _, b := range s.bufs {
					bufs = append(bufs, []byte(b))
				}
				if err := w.Submit(s.off, bufs, true); err != nil {
					t.Fatal(err)
				}
				if err := w.Wait(); err != nil {
					t.Fatal(err)
				}
			}
			got := make([]byte, 12)
			f.ReadAt(got, 0)
			if want := "aaXYbbbb\x00\x00cc"; string(got) != want {
				t.Fatalf("content %q, want %q", got, want)
			}
		})
	}
}

func TestWriterProtocolErrors(t *testing.T) {
	for _, wc := range writerCases() {
		t.Run(wc.name, func(t *testing.T) {
			w, err := NewWriter(wc.open(t), wc.mode)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Wait(); err != nil {
				t.Fatalf("Wait without Submit = %v", err)
			}
			if err := w.Submit(0, [][]byte{[]byte("x")}, true); err != nil {
				t.Fatal(err)
			}
			if err := w.Submit(1, [][]byte{[]byte("y")}, true); !errors.Is(err, ErrBusy) {
				t.Fatalf("second Submit = %v, want ErrBusy", err)
			}
			if err := w.Wait(); err != nil {
				t.Fatal(err)
			}
			if err := w.Wait(); err != nil {
				t.Fatalf("second Wait = %v", err)
			}
			// Close with a submission outstanding waits for it.
			if err := w.Submit(1, [][]byte{[]byte("y")}, true); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatalf("Close with outstanding group = %v", err)
			}
			if err := w.Close(); !errors.Is(err, ErrClosed) {
				t.Fatalf("second Close = %v, want ErrClosed", err)
			}
			if err := w.Submit(0, nil, true); !errors.Is(err, ErrClosed) {
				t.Fatalf("Submit after Close = %v, want ErrClosed", err)
			}
		})
	}
}

// TestWriterReadOnlyFd: writes to a read-only descriptor fail with EBADF on
// both descriptor paths; on io_uring the fdatasync linked after the write is
// cancelled, and the write's EBADF, not ECANCELED, is reported.
func TestWriterReadOnlyFd(t *testing.T) {
	modes := []Mode{ModePwrite}
	if Available() {
		modes = append(modes, ModeUring)
	}
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "ro")
			if err := os.WriteFile(name, []byte("hello"), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := vfs.Default.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			w, err := NewWriter(f, mode)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			for _, bufs := range [][][]byte{{[]byte("x")}, {[]byte("ab"), []byte("cd")}} {
				if err := w.Submit(0, bufs, true); err != nil {
					t.Fatalf("Submit = %v", err)
				}
				err = w.Wait()
				if !errors.Is(err, unix.EBADF) {
					t.Fatalf("Wait = %v, want EBADF", err)
				}
			}
			// The writer is still usable for a sync-only group.
			if err := w.Submit(0, nil, true); err != nil {
				t.Fatal(err)
			}
			if err := w.Wait(); err != nil {
				t.Fatalf("sync-only group on read-only fd = %v", err)
			}
		})
	}
}

// TestPwriteErrorFS drives the portable path through vfs.ErrorFS.
func TestPwriteErrorFS(t *testing.T) {
	tests := []struct {
		name string
		inj  vfs.Injector
		want error
		keep string // content of the file after the failed group
	}{
		{"sync EIO", vfs.FailNth(vfs.OpSync, 1, unix.EIO), unix.EIO, "abcdef"},
		// One Submit is one write operation (as one pwritev(2) is): the
		// buffers are gathered, so a failed write leaves none of them and
		// a short write a prefix of their concatenation.
		{"write ENOSPC", vfs.FailNth(vfs.OpWrite, 1, unix.ENOSPC), unix.ENOSPC, ""},
		{"short write", vfs.FailNth(vfs.OpWrite, 1, vfs.ShortWrite(nil)), io.ErrShortWrite, "abc"},
		{"no error", nil, nil, "abcdef"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := vfs.NewMem()
			efs := vfs.NewErrorFS(m, tc.inj)
			f, err := efs.Create("j")
			if err != nil {
				t.Fatal(err)
			}
			w, err := NewWriter(f, ModeAuto)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(w) != "pwrite" {
				t.Fatalf("ErrorFS file got %s writer, want pwrite", w)
			}
			if err := w.Submit(0, [][]byte{[]byte("abc"), []byte("def")}, true); err != nil {
				t.Fatal(err)
			}
			err = w.Wait()
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Wait = %v, want %v", err, tc.want)
			}
			got := make([]byte, 10)
			n, _ := f.ReadAt(got, 0)
			if string(got[:n]) != tc.keep {
				t.Fatalf("file = %q, want %q", got[:n], tc.keep)
			}
			// Only a successful group is durable.
			m.SyncDir("/")
			c, _ := m.CrashClone().Open("j")
			n, _ = c.ReadAt(got, 0)
			durable := ""
			if tc.want == nil {
				durable = "abcdef"
			}
			if string(got[:n]) != durable {
				t.Fatalf("after crash %q, want %q", got[:n], durable)
			}
		})
	}
}

// TestGroupErrorMapping checks Wait's mapping of completion results, which
// real devices rarely let a test provoke (short writes, fsync EIO).
func TestGroupErrorMapping(t *testing.T) {
	ecanceled := -int32(unix.ECANCELED)
	w := func(want int64, res int32) req { return req{kind: reqWrite, want: want, res: res, done: true} }
	s := func(res int32) req { return req{kind: reqSync, res: res, done: true} }
	tests := []struct {
		name string
		reqs []req
		want error
	}{
		{"all ok", []req{w(10, 10), w(5, 5), s(0)}, nil},
		{"short write then cancelled", []req{w(10, 4), w(5, ecanceled), s(ecanceled)}, io.ErrShortWrite},
		{"write errno then cancelled sync", []req{w(10, -int32(unix.ENOSPC)), s(ecanceled)}, unix.ENOSPC},
		{"second write fails", []req{w(10, 10), w(5, -int32(unix.EIO)), s(ecanceled)}, unix.EIO},
		{"sync fails", []req{w(10, 10), s(-int32(unix.EIO))}, unix.EIO},
		{"sync only fails", []req{s(-int32(unix.EROFS))}, unix.EROFS},
		{"unlinked writes, later fails", []req{w(3, 3), w(3, -int32(unix.EFBIG))}, unix.EFBIG},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			uw := &uringWriter{f: memFile(t), reqs: tc.reqs, active: true}
			uw.r = &ring{} // drain with inflight 0 does not touch it
			err := uw.Wait()
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Wait = %v, want %v", err, tc.want)
			}
			if errors.Is(err, unix.ECANCELED) {
				t.Fatalf("Wait surfaced ECANCELED")
			}
		})
	}
}

func TestModeString(t *testing.T) {
	for _, m := range []Mode{ModeAuto, ModeUring, ModePwrite} {
		got, err := ParseMode(m.String())
		if err != nil || got != m {
			t.Fatalf("ParseMode(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := ParseMode("bogus"); !errors.Is(err, ErrBadMode) {
		t.Fatalf("ParseMode(bogus) = %v", err)
	}
}
