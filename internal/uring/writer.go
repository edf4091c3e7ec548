package uring

// Writer is the journal's durable-write path: io_uring where it works, and
// pwrite+fdatasync behind the same interface where it does not.
//
// At most one submission is outstanding: Submit, then Wait, then the next
// Submit. The point of the split is that the caller can prepare the next
// group while the kernel writes and syncs this one.
type Writer interface {
	// Submit writes bufs contiguously starting at off and, when sync is set,
	// follows the write with an fdatasync ordered after it (IOSQE_IO_LINK on
	// io_uring). bufs must not be modified until Wait returns. It may return
	// before the I/O completes.
	Submit(off int64, bufs [][]byte, sync bool) error
	// Wait blocks until the outstanding submission completes and returns its
	// error: a short write is io.ErrShortWrite, a failed sync the errno.
	Wait() error
	// Close releases the writer (not the file).
	Close() error
	// Blocking reports whether a Submit of n bytes does the write (and
	// sync) itself before it returns, rather than queueing them: a caller
	// with other work to do (the journal's completions) does it first then.
	Blocking(n int) bool
}

// Mode chooses the Writer implementation.
type Mode int

const (
	// ModeAuto uses io_uring (for groups of HybridThreshold bytes and more;
	// pwrite for smaller ones) when the file has a descriptor and the kernel
	// allows io_uring, and pwrite+fdatasync otherwise.
	ModeAuto Mode = iota
	// ModeUring requires io_uring.
	ModeUring
	// ModePwrite always uses WriteAt + Sync.
	ModePwrite
)
