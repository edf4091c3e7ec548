package vfs

import (
	"errors"
	"io"
	"os"
)

// FS is the file system every storage package uses. Nothing outside
// internal/vfs calls os.OpenFile directly.
//
// Implementations are safe for concurrent use.
type FS interface {
	// Create creates (or truncates) name for reading and writing.
	Create(name string) (File, error)
	// Open opens an existing file read-only.
	Open(name string) (File, error)
	// OpenReadWrite opens an existing file for reading and writing without
	// truncating it.
	OpenReadWrite(name string) (File, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// Rename renames oldname to newname, replacing newname if it exists.
	Rename(oldname, newname string) error
	// MkdirAll creates dir and any missing parents.
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the names (not paths) of the entries of dir, sorted.
	List(dir string) ([]string, error)
	// Stat describes name.
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes the directory entries of dir durable (creates, renames,
	// removes done before it).
	SyncDir(dir string) error
}

// File is an open file. ReadAt may be called concurrently with itself and
// with WriteAt on other ranges; everything else is single-caller.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	// Sync makes the data written so far durable (fdatasync on Linux).
	Sync() error
	// Truncate sets the file size.
	Truncate(size int64) error
	// Preallocate reserves [off, off+length) on disk without changing what
	// reads return for already-written bytes (fallocate KEEP_SIZE where
	// available; a no-op or a plain extend elsewhere).
	Preallocate(off, length int64) error
	// Stat describes the open file.
	Stat() (os.FileInfo, error)
	// Name is the path the file was opened with.
	Name() string
}

// Fder is implemented by files backed by an OS file descriptor (the OS FS).
// The io_uring path in internal/uring needs it; files without it use the
// portable WriteAt+Sync path.
type Fder interface {
	Fd() uintptr
}

// DirectOpener is implemented by file systems that can open an existing
// file for writes that bypass the page cache (O_DIRECT). Every write
// through such a file must have its offset, length and buffer address
// aligned to the device's logical block size; the journal's DirectIO
// option uses it.
type DirectOpener interface {
	OpenDirect(name string) (File, error)
}

// DiskUsager is implemented by file systems that can report the usage of the
// volume holding dir. Bookies use it for read-only mode.
type DiskUsager interface {
	DiskUsage(dir string) (total, free uint64, err error)
}

// ErrInjected is returned by the error-injecting FS when a rule fires
// without naming another error.
var ErrInjected = errors.New("vfs: injected error")
