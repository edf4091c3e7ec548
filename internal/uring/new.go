package uring

import (
	"fmt"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// NewWriter returns a Writer for f according to mode:
//
//   - ModeAuto: when f implements vfs.Fder and Available() is true (and the
//     ring can be set up), io_uring for groups of HybridThreshold bytes and
//     more and pwrite for smaller ones (hybrid.go); pwrite otherwise.
//   - ModeUring: io_uring, or an error wrapping ErrUnavailable.
//   - ModePwrite: WriteAt (pwritev(2) when f implements vfs.Fder) + Sync.
//
// The returned Writer implements fmt.Stringer: "io_uring", "pwrite" or
// "io_uring+pwrite" (ModeAuto's hybrid). It
// does not own f: Close leaves f open, and f must stay open until then.
func NewWriter(f vfs.File, mode Mode) (Writer, error) {
	switch mode {
	case ModePwrite:
		return newPwriteWriter(f), nil
	case ModeUring, ModeAuto:
		fder, ok := f.(vfs.Fder)
		if !ok {
			if mode == ModeAuto {
				return newPwriteWriter(f), nil
			}
			return nil, fmt.Errorf("%w: %s has no file descriptor", ErrUnavailable, f.Name())
		}
		if !Available() {
			if mode == ModeAuto {
				return newPwriteWriter(f), nil
			}
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, unavailableReason())
		}
		w, err := newUringWriter(f, int(fder.Fd()), uringOptions{})
		if err != nil {
			if mode == ModeAuto {
				return newPwriteWriter(f), nil
			}
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		if mode == ModeAuto {
			return &hybridWriter{u: w, p: newPwriteWriter(f)}, nil
		}
		return w, nil
	default:
		return nil, fmt.Errorf("%w: %d", ErrBadMode, int(mode))
	}
}

// String names the mode.
func (m Mode) String() string {
	switch m {
	case ModeAuto:
		return "auto"
	case ModeUring:
		return "io_uring"
	case ModePwrite:
		return "pwrite"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode is the inverse of Mode.String, for flags and config files.
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{ModeAuto, ModeUring, ModePwrite} {
		if m.String() == s {
			return m, nil
		}
	}
	if s == "uring" {
		return ModeUring, nil
	}
	return 0, fmt.Errorf("%w: %q", ErrBadMode, s)
}
