package uring

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Kernel ABI constants (include/uapi/linux/io_uring.h).
const (
	opNop       = 0
	opWritev    = 2
	opFsync     = 3
	opFallocate = 17
	opWrite     = 23

	sqeIOLink = 1 << 2 // IOSQE_IO_LINK

	fsyncDatasync = 1 // IORING_FSYNC_DATASYNC

	enterGetEvents = 1 // IORING_ENTER_GETEVENTS

	featSingleMmap = 1 << 0 // IORING_FEAT_SINGLE_MMAP

	setupCoopTaskrun = 1 << 8 // IORING_SETUP_COOP_TASKRUN (5.19)

	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	registerFiles   = 2 // IORING_REGISTER_FILES
	unregisterFiles = 3
	sqeFixedFile    = 1 << 0 // IOSQE_FIXED_FILE
)

// sqe is struct io_uring_sqe (64 bytes).
type sqe struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64 // or addr2
	addr        uint64 // buffer, iovec array, or fallocate length
	len         uint32 // bytes, iovec count, or fallocate mode
	opFlags     uint32 // rw_flags, fsync_flags, ...
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFdIn  int32
	addr3       uint64
	_           uint64
}

// cqe is struct io_uring_cqe (16 bytes, no CQE32).
type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// params is struct io_uring_params (120 bytes).
type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

// ring is one io_uring instance. It is not safe for concurrent use: one
// goroutine prepares, submits and reaps. See doc.go for the barrier rules.
type ring struct {
	fd       int
	features uint32

	ringMem []byte // SQ ring, and the CQ ring too with IORING_FEAT_SINGLE_MMAP
	cqMem   []byte // separate CQ ring mapping, or nil
	sqeMem  []byte

	sqHead  *uint32 // written by the kernel
	sqTail  *uint32 // written by us
	sqMask  uint32
	sqArray []uint32
	sqes    []sqe
	sqLocal uint32 // our next tail, published by submit

	cqHead *uint32 // written by us
	cqTail *uint32 // written by the kernel
	cqMask uint32
	cqes   []cqe
}

func setup(entries uint32, p *params) (int, error) {
	for {
		fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return -1, errno
		}
		return int(fd), nil
	}
}

// newRing sets up a ring with at least entries submission slots.
func newRing(entries uint32) (*ring, error) {
	p := params{flags: setupCoopTaskrun}
	fd, err := setup(entries, &p)
	if errors.Is(err, unix.EINVAL) { // kernel older than 5.19
		p = params{}
		fd, err = setup(entries, &p)
	}
	if err != nil {
		return nil, fmt.Errorf("uring: io_uring_setup: %w", err)
	}
	r := &ring{fd: fd, features: p.features}
	if err := r.mmap(&p); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *ring) mmap(p *params) error {
	const prot, flags = unix.PROT_READ | unix.PROT_WRITE, unix.MAP_SHARED | unix.MAP_POPULATE
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(cqe{})))
	single := p.features&featSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	if r.ringMem, err = unix.Mmap(r.fd, offSQRing, sqSize, prot, flags); err != nil {
		return fmt.Errorf("uring: mmap sq ring: %w", err)
	}
	cqMem := r.ringMem
	if !single {
		if r.cqMem, err = unix.Mmap(r.fd, offCQRing, cqSize, prot, flags); err != nil {
			return fmt.Errorf("uring: mmap cq ring: %w", err)
		}
		cqMem = r.cqMem
	}
	if r.sqeMem, err = unix.Mmap(r.fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(sqe{})), prot, flags); err != nil {
		return fmt.Errorf("uring: mmap sqes: %w", err)
	}
	u32 := func(mem []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }
	r.sqHead = u32(r.ringMem, p.sqOff.head)
	r.sqTail = u32(r.ringMem, p.sqOff.tail)
	r.sqMask = *u32(r.ringMem, p.sqOff.ringMask)
	r.sqArray = unsafe.Slice(u32(r.ringMem, p.sqOff.array), p.sqEntries)
	r.sqes = unsafe.Slice((*sqe)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	r.sqLocal = atomic.LoadUint32(r.sqTail)
	r.cqHead = u32(cqMem, p.cqOff.head)
	r.cqTail = u32(cqMem, p.cqOff.tail)
	r.cqMask = *u32(cqMem, p.cqOff.ringMask)
	r.cqes = unsafe.Slice((*cqe)(unsafe.Pointer(&cqMem[p.cqOff.cqes])), p.cqEntries)
	return nil
}

func (r *ring) close() error {
	for _, m := range [][]byte{r.sqeMem, r.cqMem, r.ringMem} {
		if m != nil {
			unix.Munmap(m)
		}
	}
	r.sqeMem, r.cqMem, r.ringMem, r.sqes, r.cqes, r.sqArray = nil, nil, nil, nil, nil, nil
	if r.fd < 0 {
		return nil
	}
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}

// free returns how many SQEs can be prepared before the next submit.
func (r *ring) free() uint32 {
	return uint32(len(r.sqes)) - (r.sqLocal - atomic.LoadUint32(r.sqHead))
}

// next returns a zeroed SQE to fill, or nil if the SQ ring is full. It is
// not visible to the kernel until submit publishes the tail.
func (r *ring) next() *sqe {
	if r.free() == 0 {
		return nil
	}
	idx := r.sqLocal & r.sqMask
	s := &r.sqes[idx]
	*s = sqe{}
	r.sqArray[idx] = idx
	r.sqLocal++
	return s
}

// pending returns the number of prepared but unpublished SQEs plus the
// published ones the kernel has not consumed.
func (r *ring) pending() uint32 { return r.sqLocal - atomic.LoadUint32(r.sqHead) }

// enter is io_uring_enter(2) without a signal mask, retried on EINTR.
func (r *ring) enter(toSubmit, minComplete, flags uint32) (int, error) {
	for {
		n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(minComplete), uintptr(flags), 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return int(n), errno
		}
		return int(n), nil
	}
}

// submit publishes the prepared SQEs and hands them to the kernel, without
// waiting for completions. The atomic store of the tail is the release
// barrier that makes the SQE contents visible before the kernel reads the
// new tail.
func (r *ring) submit() error {
	atomic.StoreUint32(r.sqTail, r.sqLocal)
	for {
		n := r.pending()
		if n == 0 {
			return nil
		}
		if _, err := r.enter(n, 0, 0); err != nil {
			return fmt.Errorf("uring: io_uring_enter: %w", err)
		}
	}
}

// reap calls fn for every completion available now and returns how many it
// consumed. The atomic load of the CQ tail is the acquire barrier before the
// CQE reads; the atomic store of the head releases the slots to the kernel.
func (r *ring) reap(fn func(c *cqe)) int {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	n := 0
	for ; head != tail; head++ {
		fn(&r.cqes[head&r.cqMask])
		n++
	}
	if n > 0 {
		atomic.StoreUint32(r.cqHead, head)
	}
	return n
}

// waitN reaps until n completions have been passed to fn, blocking in
// io_uring_enter(GETEVENTS) when none are ready.
func (r *ring) waitN(n int, fn func(c *cqe)) error {
	for n > 0 {
		if got := r.reap(fn); got > 0 {
			n -= got
			continue
		}
		if _, err := r.enter(0, uint32(n), enterGetEvents); err != nil {
			return fmt.Errorf("uring: io_uring_enter(GETEVENTS): %w", err)
		}
	}
	return nil
}

// registerFile registers fd as fixed file 0 (IORING_REGISTER_FILES).
func (r *ring) registerFile(fd int) error {
	fds := []int32{int32(fd)}
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerFiles, uintptr(unsafe.Pointer(&fds[0])), 1, 0, 0)
	if errno != 0 {
		return fmt.Errorf("uring: register files: %w", errno)
	}
	return nil
}

// SQE preparation. Each sets the fields of a zeroed SQE.

func prepNop(s *sqe) { s.opcode = opNop }

func prepWritev(s *sqe, fd int, iovs []unix.Iovec, off int64) {
	s.opcode = opWritev
	s.fd = int32(fd)
	s.addr = uint64(uintptr(unsafe.Pointer(&iovs[0])))
	s.len = uint32(len(iovs))
	s.off = uint64(off)
}

func prepWrite(s *sqe, fd int, buf []byte, off int64) {
	s.opcode = opWrite
	s.fd = int32(fd)
	s.addr = uint64(uintptr(unsafe.Pointer(&buf[0])))
	s.len = uint32(len(buf))
	s.off = uint64(off)
}

func prepFdatasync(s *sqe, fd int) {
	s.opcode = opFsync
	s.fd = int32(fd)
	s.opFlags = fsyncDatasync
}

func prepFallocate(s *sqe, fd int, mode uint32, off, length int64) {
	s.opcode = opFallocate
	s.fd = int32(fd)
	s.off = uint64(off)
	s.addr = uint64(length)
	s.len = mode
}

var probe struct {
	once sync.Once
	ok   bool
	err  error
}

// Available reports whether this process can use io_uring: it sets up (and
// closes) a small ring once and remembers the answer.
func Available() bool {
	probe.once.Do(func() {
		r, err := newRing(2)
		if err != nil {
			probe.err = err
			return
		}
		defer r.close()
		// A NOP round trip proves submit and reap work (seccomp may allow
		// setup but not enter).
		s := r.next()
		prepNop(s)
		s.userData = 7
		if err := r.submit(); err != nil {
			probe.err = err
			return
		}
		var got uint64
		if err := r.waitN(1, func(c *cqe) { got = c.userData }); err != nil || got != 7 {
			probe.err = fmt.Errorf("uring: nop probe: %v (user_data %d)", err, got)
			return
		}
		probe.ok = true
	})
	return probe.ok
}

// unavailableReason returns why Available is false, for error messages.
func unavailableReason() error {
	Available()
	return probe.err
}
