// Package outqueue is a connection's outbound byte queue: goroutines
// that produce frames append them under one lock, and one writer
// goroutine (Run) swaps out everything pending and writes it with one
// vectored write, so the frames queued while the previous write ran go
// out together in one system call.
//
// # Use
//
//	q := outqueue.New(limit, onDrained)
//	go func() { err := q.Run(w) }()     // the writer
//	q.Push(func(dst []byte) []byte { return appendFrame(dst) })
//	buf, ok := q.Begin()                // or: several appends under one lock
//	buf = appendHeader(buf)
//	buf = q.AppendRef(buf, entry)       // entry queued by reference
//	ok = q.End(buf)
//	q.Close()                           // Run flushes what is queued, returns nil
//
// # Invariants
//
//   - Order: bytes leave in the order they were appended, referenced
//     segments (AppendRef) included: a segment is queued right after
//     the bytes appended before it under the same Begin.
//   - By reference, not copied: AppendRef queues data itself (callers
//     use it from RefThreshold bytes on); data must never change. Run
//     drops its references once written.
//   - Bounded: an End that would leave more than limit bytes (copied
//     plus referenced) unsent fails, drops everything queued and closes
//     the queue; Run then returns ErrOverflow and the owner closes its
//     connection (a client that stops reading must not grow memory
//     without bound).
//   - Backpressure: Writable is false while the queued bytes plus the
//     write in progress reach the soft limit (half of limit, at most
//     4 MiB); after a write that leaves less than half of the soft limit
//     queued, Run calls the drained callback (on the writer goroutine),
//     so producers that stopped on !Writable resume.
//   - After Close, Begin and Push fail; Run writes what was queued
//     before and returns nil.
//
// # Cost
//
// An append costs the lock and a copy of the frame (none for the data of
// AppendRef); Writable is two atomic loads. Run makes one write per
// batch (writev when the writer is a *net.TCPConn or has WriteBuffers,
// else one Write per segment) and reuses its buffers between batches,
// except a buffer grown beyond four soft limits, which it lets go.
//
// # Locking
//
// The queue's lock is a leaf: nothing is called while it is held, except
// the encoder passed to Push, which must only append.
package outqueue
