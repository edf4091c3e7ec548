package vfs

import "errors"

// Errors. Besides these, both the OS FS and MemFS return *os.PathError
// values wrapping the errno the kernel would give (ENOENT, EEXIST, ENOTEMPTY,
// EISDIR, ENOTDIR, EBADF, EINVAL), so errors.Is(err, fs.ErrNotExist) and
// errors.Is(err, unix.ENOTEMPTY) work the same on both. ErrInjected is
// declared in vfs.go.
var (
	// ErrUnsupported is returned by ErrorFS.DiskUsage when the wrapped FS
	// does not implement DiskUsager and no override is set. It matches
	// errors.ErrUnsupported.
	ErrUnsupported = errors.Join(errors.New("vfs: disk usage not supported"), errors.ErrUnsupported)
)
