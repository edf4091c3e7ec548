package uring

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

const (
	// ringEntries is the SQ size of a writer's ring; a group may use all of
	// them (ringEntries-1 write SQEs of up to IOV_MAX buffers, plus the sync).
	ringEntries = 32
	// maxSQEBytes caps the bytes of one write SQE: a CQE reports the count
	// in an int32.
	maxSQEBytes = 1 << 30
)

// uringOptions are knobs for measurement; NewWriter uses the zero value.
type uringOptions struct {
	// fixedFile registers the descriptor (IORING_REGISTER_FILES) and
	// addresses it as fixed file 0.
	fixedFile bool
	// noPin skips the runtime.Pinner and relies on the references the
	// writer keeps (Go's heap does not move objects).
	noPin bool
}

// reqKind is what one SQE of a group does.
type reqKind uint8

const (
	reqWrite reqKind = iota
	reqSync
)

// req is one SQE of the outstanding group; its index is the user_data.
type req struct {
	kind reqKind
	want int64 // bytes, for writes
	res  int32
	done bool
}

// span is the range of w.iovs one write SQE covers.
type span struct{ start, end int }

// uringWriter submits each group as linked write SQEs followed by an
// FSYNC(DATASYNC), and reaps the completions in Wait.
type uringWriter struct {
	f     vfs.File
	fd    int32 // descriptor, or 0 (the fixed-file index) when fixed
	fixed bool
	noPin bool
	r     *ring

	// State of the outstanding group, kept from Submit to Wait so that the
	// buffers and iovecs stay reachable (and pinned) while the kernel may
	// use them.
	iovs     []unix.Iovec
	reqs     []req
	spans    []span
	bufs     [][]byte
	pin      runtime.Pinner
	inflight int  // SQEs the kernel consumed and will complete
	active   bool // Submit succeeded, Wait not yet called

	broken error // sticky: the ring itself failed
	closed bool
}

func newUringWriter(f vfs.File, fd int, opts uringOptions) (*uringWriter, error) {
	r, err := newRing(ringEntries)
	if err != nil {
		return nil, err
	}
	w := &uringWriter{f: f, fd: int32(fd), r: r, noPin: opts.noPin}
	if opts.fixedFile {
		if err := r.registerFile(fd); err != nil {
			r.close()
			return nil, err
		}
		w.fd, w.fixed = 0, true
	}
	return w, nil
}

func (w *uringWriter) String() string { return "io_uring" }

// Blocking implements Writer: Submit only queues the I/O.
func (w *uringWriter) Blocking(int) bool { return false }

// Submit implements Writer. It returns once io_uring_enter has handed the
// SQEs to the kernel; for buffered files the kernel usually copies the data
// to the page cache inline and runs the fdatasync asynchronously.
func (w *uringWriter) Submit(off int64, bufs [][]byte, sync bool) error {
	switch {
	case w.closed:
		return ErrClosed
	case w.broken != nil:
		return w.broken
	case w.active:
		return ErrBusy
	}
	// The iovec array: buffers split at maxSQEBytes, empty ones dropped.
	w.iovs = w.iovs[:0]
	for _, b := range bufs {
		for len(b) > 0 {
			n := min(len(b), maxSQEBytes)
			w.iovs = append(w.iovs, unix.Iovec{Base: &b[0], Len: uint64(n)})
			b = b[n:]
		}
	}
	// Group iovecs into write SQEs of at most IOV_MAX entries and
	// maxSQEBytes bytes.
	w.reqs = w.reqs[:0]
	spans := w.spans[:0]
	for i := 0; i < len(w.iovs); {
		start, bytes := i, int64(0)
		for i < len(w.iovs) && i-start < iovMax && bytes+int64(w.iovs[i].Len) <= maxSQEBytes {
			bytes += int64(w.iovs[i].Len)
			i++
		}
		spans = append(spans, span{start, i})
		w.spans = spans
		w.reqs = append(w.reqs, req{kind: reqWrite, want: bytes})
	}
	if sync {
		w.reqs = append(w.reqs, req{kind: reqSync})
	}
	if len(w.reqs) == 0 {
		w.active, w.inflight = true, 0
		return nil
	}
	if len(w.reqs) > int(w.r.free()) {
		return fmt.Errorf("%w: %d SQEs, %d free", ErrTooLarge, len(w.reqs), w.r.free())
	}

	// Keep the data reachable and pinned until Wait.
	w.bufs = bufs
	if !w.noPin {
		for i := range w.iovs {
			w.pin.Pin(w.iovs[i].Base)
		}
		if len(w.iovs) > 0 {
			w.pin.Pin(&w.iovs[0])
		}
	}

	pos := off
	for i, sp := range spans {
		s := w.r.next()
		if sp.end-sp.start == 1 {
			iov := w.iovs[sp.start]
			prepWrite(s, 0, unsafe.Slice(iov.Base, iov.Len), pos)
		} else {
			prepWritev(s, 0, w.iovs[sp.start:sp.end], pos)
		}
		w.setFd(s)
		s.userData = uint64(i)
		if sync { // the chain ends at the sync
			s.flags |= sqeIOLink
		}
		pos += w.reqs[i].want
	}
	if sync {
		s := w.r.next()
		prepFdatasync(s, 0)
		w.setFd(s)
		s.userData = uint64(len(w.reqs) - 1)
	}

	head := w.r.pending()
	err := w.r.submit()
	if err != nil {
		// Whatever the kernel consumed will complete; Close reaps it.
		w.inflight = int(head - w.r.pending())
		w.broken = err
		if w.inflight == 0 {
			w.release()
		}
		return err
	}
	w.inflight, w.active = len(w.reqs), true
	return nil
}

func (w *uringWriter) setFd(s *sqe) {
	s.fd = w.fd
	if w.fixed {
		s.flags |= sqeFixedFile
	}
}

// release drops the references and pins of the finished group.
func (w *uringWriter) release() {
	w.pin.Unpin()
	w.bufs = nil
	runtime.KeepAlive(w.iovs)
}

// drain reaps the inflight completions into w.reqs.
func (w *uringWriter) drain() error {
	if w.inflight == 0 {
		return nil
	}
	err := w.r.waitN(w.inflight, func(c *cqe) {
		if c.userData >= uint64(len(w.reqs)) {
			panic(fmt.Sprintf("BUG: uring: completion with user_data %d for a group of %d", c.userData, len(w.reqs)))
		}
		w.reqs[c.userData].res, w.reqs[c.userData].done = c.res, true
	})
	if err != nil {
		w.broken = err
		return err
	}
	w.inflight = 0
	w.release()
	return nil
}

// Wait implements Writer: it reaps the group's completions and returns the
// first failure in submission order. A write's negative result is its errno,
// a short write io.ErrShortWrite; the requests linked after a failed one
// complete with ECANCELED, which is never reported in place of the failure
// that caused it.
func (w *uringWriter) Wait() error {
	if !w.active {
		return nil
	}
	w.active = false
	if err := w.drain(); err != nil {
		return err
	}
	for _, rq := range w.reqs {
		switch {
		case rq.kind == reqWrite && rq.res < 0:
			return &os.PathError{Op: "write", Path: w.f.Name(), Err: unix.Errno(-rq.res)}
		case rq.kind == reqWrite && int64(rq.res) < rq.want:
			return &os.PathError{Op: "write", Path: w.f.Name(), Err: io.ErrShortWrite}
		case rq.kind == reqSync && rq.res < 0:
			return &os.PathError{Op: "fdatasync", Path: w.f.Name(), Err: unix.Errno(-rq.res)}
		}
	}
	return nil
}

// Close implements Writer. It waits for an outstanding group (discarding
// its result) before tearing the ring down.
func (w *uringWriter) Close() error {
	if w.closed {
		return ErrClosed
	}
	w.closed = true
	derr := w.drain()
	if derr != nil {
		// The kernel may still use the buffers; leave them pinned and the
		// ring mapped rather than risk a use after free.
		return derr
	}
	return w.r.close()
}
