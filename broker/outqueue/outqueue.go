package outqueue

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// ErrOverflow is what Run returns when an End exceeded the queue's bound.
var ErrOverflow = errors.New("outbound queue overflow")

// RefThreshold is the entry size from which callers queue entries by
// reference (AppendRef) instead of copying them.
const RefThreshold = 4 << 10

// maxSoftLimit caps the soft limit: a few MiB keep a fast consumer busy
// while the buffers stay small enough to be reused rather than reallocated
// (fresh multi-MiB allocations cost page faults on every burst).
const maxSoftLimit = 4 << 20

// Queue is one connection's outbound queue (see the package doc).
type Queue struct {
	mu struct {
		sync.Mutex
		buf      []byte   // pending bytes
		segs     [][]byte // completed segments, written before buf[cut:]
		cut      int      // start of buf's part not yet in segs
		refBytes int      // bytes referenced (not copied) in segs
		closed   bool
		err      error
	}
	limit  int
	signal chan struct{} // capacity 1: "something is queued"

	queued  atomic.Int64 // bytes queued, copied or referenced
	writing atomic.Int64 // bytes of the write in progress
	// drained, if set, runs on the writer goroutine after a write that
	// left the queue below half of soft (see Writable).
	drained func()
	soft    int64
}

// New returns a queue bounded to limit unsent bytes. drained, if not
// nil, runs on the writer goroutine when the queue gets short again.
func New(limit int, drained func()) *Queue {
	return &Queue{limit: limit, soft: int64(min(limit/2, maxSoftLimit)), signal: make(chan struct{}, 1), drained: drained}
}

// Writable reports whether the queue is below its soft limit: producers
// stop appending to a queue that is not, and resume when drained runs.
func (q *Queue) Writable() bool {
	return q.queued.Load()+q.writing.Load() < q.soft
}

// Begin locks the queue and returns the pending buffer to append frames
// to; ok is false (and the lock is not held) if the queue is closed. Every
// successful Begin must be followed by End with the extended buffer.
func (q *Queue) Begin() (buf []byte, ok bool) {
	q.mu.Lock()
	if q.mu.closed {
		q.mu.Unlock()
		return nil, false
	}
	return q.mu.buf, true
}

// AppendRef, between Begin and End, queues data by reference right
// after the bytes appended to buf so far. data must never change.
func (q *Queue) AppendRef(buf, data []byte) []byte {
	q.mu.segs = append(q.mu.segs, buf[q.mu.cut:len(buf):len(buf)], data)
	q.mu.cut = len(buf)
	q.mu.refBytes += len(data)
	return buf
}

// End stores buf as the pending buffer, unlocks and wakes the writer. It
// returns false if the bound was exceeded: the queue is then closed and
// the caller must close the connection.
func (q *Queue) End(buf []byte) bool {
	size := len(buf) + q.mu.refBytes
	over := size > q.limit
	if over {
		q.mu.closed = true
		q.mu.err = ErrOverflow
		buf = nil
		clear(q.mu.segs)
		q.mu.segs, q.mu.cut, q.mu.refBytes, size = nil, 0, 0, 0
	}
	q.mu.buf = buf
	q.queued.Store(int64(size))
	q.mu.Unlock()
	q.wake()
	return !over
}

// Push appends the bytes produced by enc to the queue; see Begin and End.
func (q *Queue) Push(enc func(dst []byte) []byte) bool {
	buf, ok := q.Begin()
	if !ok {
		return false
	}
	return q.End(enc(buf))
}

// Close marks the queue closed; the writer flushes what is pending and
// exits.
func (q *Queue) Close() {
	q.mu.Lock()
	q.mu.closed = true
	q.mu.Unlock()
	q.wake()
}

func (q *Queue) wake() {
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// Run writes queued bytes to w until the queue is closed and drained, or
// a write fails. It returns the write error, ErrOverflow, or nil after
// Close. A net.Conn-backed w gets one writev per batch (see writeBuffers).
func (q *Queue) Run(w io.Writer) error {
	var spare []byte
	var spareSegs, iov [][]byte
	for {
		<-q.signal
		for {
			q.mu.Lock()
			buf, segs, cut := q.mu.buf, q.mu.segs, q.mu.cut
			closed, qerr := q.mu.closed, q.mu.err
			size := len(buf) + q.mu.refBytes
			q.mu.buf, q.mu.segs, q.mu.cut, q.mu.refBytes = spare[:0], spareSegs[:0], 0, 0
			q.queued.Store(0)
			q.writing.Store(int64(size))
			q.mu.Unlock()
			if qerr != nil {
				return qerr
			}
			if size == 0 {
				if closed {
					return nil
				}
				spare, spareSegs = buf, segs
				break
			}
			iov = append(append(iov[:0], segs...), buf[cut:])
			err := writeBuffers(w, iov)
			clear(iov)
			clear(segs) // drop references to entries
			q.writing.Store(0)
			if err != nil {
				q.mu.Lock()
				q.mu.closed = true
				q.mu.buf, q.mu.segs = nil, nil
				q.mu.Unlock()
				return err
			}
			if q.drained != nil && q.queued.Load() < q.soft/2 {
				q.drained()
			}
			if cap(buf) > 4*maxSoftLimit {
				buf = nil // do not pin a burst-sized buffer forever
			}
			spare, spareSegs = buf, segs
		}
	}
}

// writeBuffers writes iov in order: with writev when w supports it (a
// *net.TCPConn, or a writer exposing WriteBuffers), else one Write per
// non-empty segment.
func writeBuffers(w io.Writer, iov [][]byte) error {
	if bw, ok := w.(interface{ WriteBuffers(*net.Buffers) error }); ok {
		nb := net.Buffers(iov)
		return bw.WriteBuffers(&nb)
	}
	for _, b := range iov {
		if len(b) == 0 {
			continue
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}
