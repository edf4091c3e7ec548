package uring

import "errors"

var (
	// ErrUnavailable is returned by NewWriter with ModeUring when the file
	// has no descriptor or the kernel refuses io_uring (disabled by
	// sysctl, blocked by seccomp, too old).
	ErrUnavailable = errors.New("uring: io_uring unavailable")
	// ErrBusy is returned by Submit while a previous submission has not
	// been waited for.
	ErrBusy = errors.New("uring: submission outstanding")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("uring: writer closed")
	// ErrTooLarge is returned by Submit when one group needs more
	// submission-queue entries than the ring has.
	ErrTooLarge = errors.New("uring: group does not fit the ring")
	// ErrBadMode is returned by NewWriter for an unknown Mode.
	ErrBadMode = errors.New("uring: unknown mode")
)
