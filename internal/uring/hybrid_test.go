package uring

import (
	"bytes"
	"testing"
)

// TestHybridDispatch: ModeAuto's hybrid writer writes groups under
// HybridThreshold through pwrite and larger ones through io_uring, one at
// a time, and both land where they were asked to in the one file.
func TestHybridDispatch(t *testing.T) {
	if !Available() {
		t.Log("io_uring unavailable: ModeAuto is plain pwrite (TestUnavailableFallback)")
		return
	}
	f := osFile(t)
	w, err := NewWriter(f, ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	h, ok := w.(*hybridWriter)
	if !ok {
		t.Fatalf("NewWriter(os, ModeAuto) = %T, want *hybridWriter", w)
	}
	small := bytes.Repeat([]byte{'s'}, HybridThreshold-1)
	large := bytes.Repeat([]byte{'L'}, HybridThreshold)
	steps := []struct {
		off  int64
		bufs [][]byte
		want Writer
	}{
		{0, [][]byte{small}, h.p},
		{int64(len(small)), [][]byte{large[:HybridThreshold/2], large[HybridThreshold/2:]}, h.u},
		{int64(len(small) + len(large)), [][]byte{[]byte("tail")}, h.p},
	}
	for i, st := range steps {
		if err := w.Submit(st.off, st.bufs, true); err != nil {
			t.Fatalf("step %d: Submit = %v", i, err)
		}
		if h.last != st.want {
			t.Fatalf("step %d: group of %d bytes went to %v, want %v", i, len(bytes.Join(st.bufs, nil)), h.last, st.want)
		}
		if err := w.Submit(0, nil, true); err != ErrBusy {
			t.Fatalf("step %d: second Submit = %v, want ErrBusy", i, err)
		}
		if err := w.Wait(); err != nil {
			t.Fatalf("step %d: Wait = %v", i, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(small)+len(large)+4)
	if n, err := f.ReadAt(got, 0); n != len(got) {
		t.Fatalf("ReadAt = %d, %v", n, err)
	}
	want := append(append(append([]byte(nil), small...), large...), "tail"...)
	if !bytes.Equal(got, want) {
		t.Fatal("file contents differ from the three groups written")
	}
}
