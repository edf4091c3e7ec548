// Package uring is the journal's durable-write path: a minimal io_uring
// binding written directly on golang.org/x/sys/unix, and two Writer
// implementations behind the interface in writer.go.
//
// # Writers
//
// NewWriter(f, mode) picks one:
//
//   - io_uring (ModeUring, or within ModeAuto's hybrid below): Submit turns the buffers into write SQEs (IORING_OP_WRITE
//     for a single buffer, IORING_OP_WRITEV for up to IOV_MAX of them, split
//     further so that no SQE exceeds 1 GiB, since a CQE reports an int32), and
//     with sync an IORING_OP_FSYNC with IORING_FSYNC_DATASYNC. When sync is
//     set every write carries IOSQE_IO_LINK, so the chain runs in order and
//     the fdatasync starts only after all writes completed in full; a failed
//     or short write breaks the chain and the rest complete with -ECANCELED.
//     Submit returns right after io_uring_enter(2) (no GETEVENTS); Wait reaps
//     the group's CQEs, blocking in io_uring_enter(GETEVENTS). It reports the
//     first failure in submission order: a negative res is its errno, a
//     short write io.ErrShortWrite, and a cancelled request never hides the
//     failure that cancelled it. Each writer owns one ring of 32 entries.
//   - hybrid (ModeAuto when f implements vfs.Fder and Available()): groups
//     of HybridThreshold (64 KiB) and more go through io_uring, smaller ones
//     through pwrite on the caller's thread. io_uring runs every fdatasync
//     on an io-wq kernel thread, which costs two thread wake-ups per group;
//     for the small groups of a lightly loaded journal that was ~30 % of a
//     standalone's context switches and ~20 % of its CPU at 10k msgs/s.
//   - pwrite (ModePwrite, or ModeAuto otherwise): Submit does pwrite(2) /
//     pwritev(2) (files with a descriptor) or File.WriteAt (MemFS, ErrorFS),
//     then File.Sync, and Wait returns the result. vfs.ErrorFS files have no
//     descriptor on purpose, so injected faults always take this path.
//
// Errors are *os.PathError wrapping the errno or io.ErrShortWrite. Neither
// writer makes errors sticky; after a failed fdatasync the caller must treat
// the file as failed (the journal does).
//
// # Ring layout
//
// io_uring_setup(2) returns a descriptor and struct io_uring_params, whose
// sq_off/cq_off give the offsets of the fields inside three shared mappings:
//
//	IORING_OFF_SQ_RING (0)          head, tail, ring_mask, ring_entries, flags,
//	                                dropped, array[sq_entries] (u32 SQE indexes)
//	IORING_OFF_CQ_RING (0x8000000)  head, tail, ring_mask, ring_entries,
//	                                overflow, cqes[cq_entries] (16-byte CQEs)
//	IORING_OFF_SQES    (0x10000000) sqes[sq_entries] (64-byte SQEs)
//
// With IORING_FEAT_SINGLE_MMAP (5.4+) the SQ and CQ rings share one mapping
// of the larger size. Setup asks for IORING_SETUP_COOP_TASKRUN and retries
// without it on EINVAL (kernels before 5.19).
//
// # Barrier rules
//
// The SQ ring is produced by us and consumed by the kernel; the CQ ring the
// other way round. Each side writes only its own index:
//
//   - SQ: we fill SQEs and array slots at our private tail (sqLocal), then
//     publish with an atomic store to sq.tail. The store is a release: the
//     kernel, which reads the tail with an acquire, sees the SQE contents. We
//     read sq.head (written by the kernel) with an atomic load to know which
//     slots are free again.
//   - CQ: we read cq.tail with an atomic load (acquire) before reading the
//     CQEs it covers, and hand the slots back with an atomic store to
//     cq.head (release), after the last CQE read.
//
// Go's sync/atomic operations are sequentially consistent, which is at least
// as strong as the acquire/release pairs liburing uses. The ring indexes live
// in mmap'd memory, so they are accessed through raw *uint32 with
// atomic.LoadUint32/StoreUint32 (the lint test exempts this package from the
// typed-atomics rule for that reason).
//
// # Buffer lifetime
//
// SQEs carry raw addresses. The kernel copies iovec arrays when it consumes
// the SQE (IORING_FEAT_SUBMIT_STABLE), but reads the data buffers until the
// write completes, possibly from an io-wq worker after Submit has returned.
// From Submit until Wait has reaped every CQE of the group, the writer keeps
// the caller's [][]byte and its iovec array referenced from its own fields
// and pins each buffer with a runtime.Pinner (Go's heap does not move today;
// the pin makes the guarantee explicit). Close reaps an outstanding group
// before unmapping the ring. The caller must not modify the buffers until
// Wait returns (writer.go).
//
// # Concurrency
//
// A Writer, like the ring under it, is used by one goroutine at a time: at
// most one group is outstanding, and Submit, Wait and Close are not called
// concurrently. Available is safe for concurrent use.
package uring
