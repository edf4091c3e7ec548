package broker

import (
	"io"
	"sync"
	"sync/atomic"
)

// outQueue is a connection's outbound byte queue. Producers of frames
// append encoded frames under the lock; one writer goroutine swaps the
// pending buffer out and writes it with a single Write, so frames queued
// while the previous write ran are coalesced into one system call.
//
// The queue is bounded: an append that would leave more than limit bytes
// unsent fails, and the connection owning the queue is then closed (a
// client that stops reading must not grow broker memory without bound).
type outQueue struct {
	mu struct {
		sync.Mutex
		buf    []byte // pending bytes; guarded by mu
		closed bool
		err    error
	}
	limit  int
	signal chan struct{} // capacity 1: "buf is non-empty"

	queued  atomic.Int64 // len(mu.buf)
	writing atomic.Int64 // bytes of the Write in progress
	// drained, if set, runs on the writer goroutine after a write that
	// left the queue below half of soft (see writable).
	drained func()
	soft    int64
}

// writable reports whether the queue is below its soft limit: dispatchers
// stop sending to a connection that is not, and resume when drained runs.
func (q *outQueue) writable() bool {
	return q.queued.Load()+q.writing.Load() < q.soft
}

// maxSoftLimit caps the soft limit: a few MiB keep a fast consumer busy
// while the buffers stay small enough to be reused rather than reallocated
// (fresh multi-MiB allocations cost page faults on every burst).
const maxSoftLimit = 4 << 20

func newOutQueue(limit int) *outQueue {
	return &outQueue{limit: limit, soft: int64(min(limit/2, maxSoftLimit)), signal: make(chan struct{}, 1)}
}

// begin locks the queue and returns the pending buffer to append frames
// to; ok is false (and the lock is not held) if the queue is closed. Every
// successful begin must be followed by end with the extended buffer.
func (q *outQueue) begin() (buf []byte, ok bool) {
	q.mu.Lock()
	if q.mu.closed {
		q.mu.Unlock()
		return nil, false
	}
	return q.mu.buf, true
}

// end stores buf as the pending buffer, unlocks and wakes the writer. It
// returns false if the bound was exceeded: the queue is then closed and
// the caller must close the connection.
func (q *outQueue) end(buf []byte) bool {
	over := len(buf) > q.limit
	if over {
		q.mu.closed = true
		q.mu.err = ErrSlowConsumer
		buf = nil
	}
	q.mu.buf = buf
	q.queued.Store(int64(len(buf)))
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
	return !over
}

// push appends the bytes produced by enc to the queue; see begin and end.
func (q *outQueue) push(enc func(dst []byte) []byte) bool {
	buf, ok := q.begin()
	if !ok {
		return false
	}
	return q.end(enc(buf))
}

// close marks the queue closed; the writer flushes what is pending and
// exits.
func (q *outQueue) close() {
	q.mu.Lock()
	q.mu.closed = true
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// pending returns the number of queued bytes.
func (q *outQueue) pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.mu.buf)
}

// run writes queued bytes to w until the queue is closed and drained, or
// a write fails. It returns the write error or the overflow error.
func (q *outQueue) run(w io.Writer) error {
	var spare []byte
	for {
		<-q.signal
		for {
			q.mu.Lock()
			buf := q.mu.buf
			closed, qerr := q.mu.closed, q.mu.err
			q.mu.buf = spare[:0]
			q.queued.Store(0)
			q.writing.Store(int64(len(buf)))
			q.mu.Unlock()
			if qerr != nil {
				return qerr
			}
			if len(buf) == 0 {
				if closed {
					return nil
				}
				spare = buf
				break
			}
			_, err := w.Write(buf)
			q.writing.Store(0)
			if err != nil {
				q.mu.Lock()
				q.mu.closed = true
				q.mu.buf = nil
				q.mu.Unlock()
				return err
			}
			if q.drained != nil && q.queued.Load() < q.soft/2 {
				q.drained()
			}
			if cap(buf) > 4*maxSoftLimit {
				buf = nil // do not pin a burst-sized buffer forever
			}
			spare = buf
		}
	}
}
