package uring

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// requireRing returns a ring, or fails: the ring-level tests run only where
// Available() said io_uring works (see ringTests).
func requireRing(t *testing.T) *ring {
	t.Helper()
	r, err := newRing(8)
	if err != nil {
		t.Fatalf("newRing with Available() true: %v", err)
	}
	t.Cleanup(func() { r.close() })
	return r
}

// TestRing covers the raw ring where io_uring works; elsewhere it checks
// that setup fails the way Available reported.
func TestRing(t *testing.T) {
	if !Available() {
		if _, err := newRing(8); err == nil {
			t.Fatalf("newRing succeeded although Available() is false")
		}
		if unavailableReason() == nil {
			t.Fatalf("Available() false without a reason")
		}
		return
	}
	t.Run("nop round trips wrap the ring", func(t *testing.T) {
		r := requireRing(t)
		if got := len(r.sqes); got != 8 {
			t.Fatalf("sq entries = %d, want 8", got)
		}
		for round := range 10 { // 10*5 > 8: indexes wrap
			for i := range 5 {
				s := r.next()
				prepNop(s)
				s.userData = uint64(round*100 + i)
			}
			if err := r.submit(); err != nil {
				t.Fatal(err)
			}
			var got []uint64
			if err := r.waitN(5, func(c *cqe) {
				if c.res != 0 {
					t.Errorf("nop res %d", c.res)
				}
				got = append(got, c.userData)
			}); err != nil {
				t.Fatal(err)
			}
			if len(got) != 5 {
				t.Fatalf("round %d: %d completions", round, len(got))
			}
			seen := map[uint64]bool{}
			for _, u := range got {
				seen[u] = true
			}
			for i := range 5 {
				if !seen[uint64(round*100+i)] {
					t.Fatalf("round %d: missing user_data %d in %v", round, round*100+i, got)
				}
			}
		}
	})
	t.Run("full SQ ring", func(t *testing.T) {
		r := requireRing(t)
		for range 8 {
			if r.next() == nil {
				t.Fatalf("next() nil before the ring is full")
			}
		}
		if r.next() != nil || r.free() != 0 {
			t.Fatalf("next() on a full ring returned an SQE")
		}
		// NOP-fill what we took and complete it so Cleanup is clean.
		if err := r.submit(); err != nil {
			t.Fatal(err)
		}
		if err := r.waitN(8, func(*cqe) {}); err != nil {
			t.Fatal(err)
		}
		if r.free() != 8 {
			t.Fatalf("free() = %d after completion, want 8", r.free())
		}
	})
	t.Run("fallocate", func(t *testing.T) {
		r := requireRing(t)
		f, err := vfs.Default.Create(filepath.Join(t.TempDir(), "f"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fd := int(f.(vfs.Fder).Fd())
		for _, c := range []struct {
			mode     uint32
			wantSize int64
		}{
			{unix.FALLOC_FL_KEEP_SIZE, 0},
			{0, 1 << 20},
		} {
			prepFallocate(r.next(), fd, c.mode, 0, 1<<20)
			if err := r.submit(); err != nil {
				t.Fatal(err)
			}
			var res int32
			r.waitN(1, func(c *cqe) { res = c.res })
			if res != 0 {
				t.Fatalf("fallocate mode %d res = %d (%v)", c.mode, res, unix.Errno(-res))
			}
			fi, _ := f.Stat()
			if fi.Size() != c.wantSize {
				t.Fatalf("size after fallocate mode %d = %d, want %d", c.mode, fi.Size(), c.wantSize)
			}
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Blocks*512 < 1<<20 {
			t.Fatalf("fstat blocks = %d, %v; want >= 1 MiB allocated", st.Blocks, err)
		}
	})
	t.Run("link breaks on failure", func(t *testing.T) {
		r := requireRing(t)
		// A write to fd -1 fails with EBADF; the NOP linked after it is
		// cancelled; the NOP after the chain runs.
		buf := []byte("x")
		s := r.next()
		prepWrite(s, -1, buf, 0)
		s.flags |= sqeIOLink
		s.userData = 1
		s = r.next()
		prepNop(s)
		s.userData = 2
		s = r.next()
		prepNop(s)
		s.userData = 3
		if err := r.submit(); err != nil {
			t.Fatal(err)
		}
		res := map[uint64]int32{}
		r.waitN(3, func(c *cqe) { res[c.userData] = c.res })
		want := map[uint64]int32{1: -int32(unix.EBADF), 2: -int32(unix.ECANCELED), 3: 0}
		if fmt.Sprint(res) != fmt.Sprint(want) {
			t.Fatalf("results %v, want %v", res, want)
		}
	})
	t.Run("fixed file writer", func(t *testing.T) {
		f, err := vfs.Default.Create(filepath.Join(t.TempDir(), "f"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		w, err := newUringWriter(f, int(f.(vfs.Fder).Fd()), uringOptions{fixedFile: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if err := w.Submit(0, [][]byte{[]byte("fixed"), []byte("file")}, true); err != nil {
			t.Fatal(err)
		}
		if err := w.Wait(); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 9)
		f.ReadAt(got, 0)
		if string(got) != "fixedfile" {
			t.Fatalf("content %q", got)
		}
	})
}

func TestUringTooLarge(t *testing.T) {
	if !Available() {
		if _, err := NewWriter(memFile(t), ModeUring); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("ModeUring without io_uring = %v", err)
		}
		return
	}
	f := osFile(t)
	w, err := NewWriter(f, ModeUring)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	one := []byte{1}
	bufs := make([][]byte, (ringEntries-1)*iovMax+1) // one SQE too many with the sync
	for i := range bufs {
		bufs[i] = one
	}
	if err := w.Submit(0, bufs, true); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Submit(%d bufs) = %v, want ErrTooLarge", len(bufs), err)
	}
	// Exactly fitting works, and the writer is still usable.
	if err := w.Submit(0, bufs[:len(bufs)-1], true); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	if fi.Size() != int64(len(bufs)-1) {
		t.Fatalf("size %d, want %d", fi.Size(), len(bufs)-1)
	}
}

// TestWritersConcurrent runs independent writers (one ring each) in
// parallel under the race detector.
func TestWritersConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			f, err := vfs.Default.Create(filepath.Join(t.TempDir(), fmt.Sprint(g)))
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			w, err := NewWriter(f, ModeAuto)
			if err != nil {
				t.Error(err)
				return
			}
			defer w.Close()
			buf := pattern(uint64(g), 4096)
			for i := range 50 {
				if err := w.Submit(int64(i*4096), [][]byte{buf}, i%10 == 9); err != nil {
					t.Error(err)
					return
				}
				if err := w.Wait(); err != nil {
					t.Error(err)
					return
				}
			}
			got := make([]byte, 4096)
			f.ReadAt(got, 49*4096)
			if string(got) != string(buf) {
				t.Errorf("writer %d: last block differs", g)
			}
		})
	}
	wg.Wait()
}
