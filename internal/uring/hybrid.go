package uring

import "errors"

// HybridThreshold is the group size, in bytes, from which a hybrid writer
// (ModeAuto with io_uring available) submits through io_uring; smaller
// groups are written and synced synchronously by the calling goroutine.
const HybridThreshold = 64 << 10

// hybridWriter sends each group to one of two writers on the same file by
// its size: small groups to pwrite (write + fdatasync on the caller's
// thread), larger ones to io_uring. At low rates a group is one or a few
// small records, and io_uring's fdatasync, which the kernel always runs on
// an io-wq worker thread, costs two extra thread wake-ups per group; that
// shows as ~30 % more context switches and ~20 % more CPU in a standalone
// at 10k msgs/s (bench/latency/NOTES.md). Large groups keep io_uring. Only one
// group is outstanding at a time (Writer's contract), so the two writers
// never overlap.
type hybridWriter struct {
	u      *uringWriter
	p      *pwriteWriter
	last   Writer // the writer of the outstanding submission, nil if none
	closed bool
}

func (h *hybridWriter) String() string { return "io_uring+pwrite" }

// Blocking implements Writer: groups below HybridThreshold go to pwrite.
func (h *hybridWriter) Blocking(n int) bool { return n < HybridThreshold }

// Submit implements Writer.
func (h *hybridWriter) Submit(off int64, bufs [][]byte, sync bool) error {
	switch {
	case h.closed:
		return ErrClosed
	case h.last != nil:
		return ErrBusy
	}
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	w := Writer(h.u)
	if n < HybridThreshold {
		w = h.p
	}
	if err := w.Submit(off, bufs, sync); err != nil {
		return err
	}
	h.last = w
	return nil
}

// Wait implements Writer.
func (h *hybridWriter) Wait() error {
	w := h.last
	if w == nil {
		return nil
	}
	h.last = nil
	return w.Wait()
}

// Close implements Writer: it closes both writers (the io_uring one reaps
// an outstanding group first).
func (h *hybridWriter) Close() error {
	if h.closed {
		return ErrClosed
	}
	h.closed, h.last = true, nil
	return errors.Join(h.u.Close(), h.p.Close())
}
