package uring

import (
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// iovMax is IOV_MAX (UIO_MAXIOV) on Linux.
const iovMax = 1024

// pwriteWriter does the whole write and sync inside Submit, so Wait only
// returns the result. It is the path for files without a descriptor
// (MemFS, ErrorFS) and for kernels without io_uring.
type pwriteWriter struct {
	f         vfs.File
	fd        int // -1 when f is not a vfs.Fder
	submitted bool
	closed    bool
	err       error
	gather    []byte // scratch of writeAt
}

func newPwriteWriter(f vfs.File) *pwriteWriter {
	w := &pwriteWriter{f: f, fd: -1}
	if fder, ok := f.(vfs.Fder); ok {
		w.fd = int(fder.Fd())
	}
	return w
}

func (w *pwriteWriter) String() string { return "pwrite" }

// Blocking implements Writer: always.
func (w *pwriteWriter) Blocking(int) bool { return true }

// Submit implements Writer.
func (w *pwriteWriter) Submit(off int64, bufs [][]byte, sync bool) error {
	switch {
	case w.closed:
		return ErrClosed
	case w.submitted:
		return ErrBusy
	}
	if w.fd >= 0 {
		w.err = w.pwritev(off, bufs)
	} else {
		w.err = w.writeAt(off, bufs)
	}
	if w.err == nil && sync {
		w.err = w.f.Sync()
	}
	w.submitted = true
	return nil
}

// writeAt writes bufs with one WriteAt, gathering them first when there
// are several: a Submit is one pwritev(2) on a descriptor, and a file
// system model (MemFS crash clones keep or tear whole write operations)
// must see it as one write too, not as independent writes that a crash
// could keep or lose separately.
func (w *pwriteWriter) writeAt(off int64, bufs [][]byte) error {
	if len(bufs) == 0 {
		return nil
	}
	b := bufs[0]
	if len(bufs) > 1 {
		w.gather = w.gather[:0]
		for _, p := range bufs {
			w.gather = append(w.gather, p...)
		}
		b = w.gather
	}
	n, err := w.f.WriteAt(b, off)
	if len(w.gather) > 1<<20 {
		w.gather = nil // do not keep a large scratch buffer
	}
	if err != nil {
		return err
	}
	if n < len(b) {
		return &os.PathError{Op: "write", Path: w.f.Name(), Err: io.ErrShortWrite}
	}
	return nil
}

// pwritev writes bufs with pwrite(2) for one buffer and pwritev(2) in
// chunks of IOV_MAX otherwise, resuming after partial writes.
func (w *pwriteWriter) pwritev(off int64, bufs [][]byte) error {
	for len(bufs) > 0 {
		if len(bufs[0]) == 0 {
			bufs = bufs[1:]
			continue
		}
		var n int
		var err error
		if len(bufs) == 1 {
			n, err = unix.Pwrite(w.fd, bufs[0], off)
		} else {
			n, err = unix.Pwritev(w.fd, bufs[:min(len(bufs), iovMax)], off)
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "pwritev", Path: w.f.Name(), Err: err}
		}
		if n == 0 {
			return &os.PathError{Op: "pwritev", Path: w.f.Name(), Err: io.ErrShortWrite}
		}
		off += int64(n)
		// Drop what was written; the first remaining buffer may be partial.
		for n > 0 {
			if n >= len(bufs[0]) {
				n -= len(bufs[0])
				bufs = bufs[1:]
				continue
			}
			// Copy the slice header so the caller's bufs is not modified.
			rest := make([][]byte, len(bufs))
			copy(rest, bufs)
			rest[0] = rest[0][n:]
			bufs, n = rest, 0
		}
	}
	return nil
}

// Wait implements Writer.
func (w *pwriteWriter) Wait() error {
	if !w.submitted {
		return nil
	}
	w.submitted = false
	err := w.err
	w.err = nil
	return err
}

// Close implements Writer.
func (w *pwriteWriter) Close() error {
	if w.closed {
		return ErrClosed
	}
	w.closed = true
	return nil
}
