package vfs

import (
	"errors"
	"io"
	"os"
	"sync"
)

// Op names the operation an Injector is asked about.
type Op int

// Operations, FS-level then File-level.
const (
	OpCreate Op = iota
	OpOpen
	OpOpenReadWrite
	OpRemove
	OpRename
	OpMkdirAll
	OpList
	OpStat
	OpSyncDir
	OpDiskUsage
	OpRead
	OpWrite
	OpSync
	OpTruncate
	OpPreallocate
	OpFileStat
	OpClose
	numOps
)

var opNames = [numOps]string{
	"create", "open", "open-rw", "remove", "rename", "mkdirall", "list", "stat", "syncdir",
	"diskusage", "read", "write", "sync", "truncate", "preallocate", "fstat", "close",
}

func (op Op) String() string {
	if op < 0 || op >= numOps {
		return "op(?)"
	}
	return opNames[op]
}

// WriteOps are the operations that change the file system or its durability.
var WriteOps = []Op{OpCreate, OpRemove, OpRename, OpMkdirAll, OpSyncDir, OpWrite, OpSync, OpTruncate, OpPreallocate}

// Injector decides whether an operation fails. MaybeError is called before
// the operation reaches the wrapped FS, with the path it concerns (for
// Rename the old name; for File operations the name the file was opened
// with); a non-nil result is returned instead of performing it. Injectors
// must be safe for concurrent use.
type Injector interface {
	MaybeError(op Op, path string) error
}

// InjectorFunc adapts a function to Injector.
type InjectorFunc func(op Op, path string) error

// MaybeError calls fn.
func (fn InjectorFunc) MaybeError(op Op, path string) error { return fn(op, path) }

// ShortWriteError, returned by an Injector for OpWrite, makes ErrorFS write
// the first half of the buffer (rounded down) to the wrapped file and then
// return that count with Err, or io.ErrShortWrite when Err is nil. It models
// a torn or partial write. For any other Op it is an ordinary error.
type ShortWriteError struct{ Err error }

// ShortWrite returns a *ShortWriteError wrapping err (which may be nil).
func ShortWrite(err error) error { return &ShortWriteError{Err: err} }

func (e *ShortWriteError) Error() string {
	return "vfs: injected short write: " + e.unwrapped().Error()
}

// Unwrap returns Err or io.ErrShortWrite.
func (e *ShortWriteError) Unwrap() error { return e.unwrapped() }

func (e *ShortWriteError) unwrapped() error {
	if e.Err == nil {
		return io.ErrShortWrite
	}
	return e.Err
}

// ErrorFS wraps an FS and consults an Injector before every operation.
// Injected errors come back as *os.PathError{Op: op.String(), Err: err}, so
// errors.Is(err, unix.ENOSPC) or errors.Is(err, ErrInjected) work. A failed
// Sync, Truncate or Preallocate is not performed; a failed Close still
// closes the wrapped file.
//
// Its files deliberately do not implement Fder: writers that need a
// descriptor (io_uring) fall back to WriteAt+Sync, which sees the injected
// errors.
type ErrorFS struct {
	inner FS
	inj   Injector
	du    struct {
		sync.Mutex
		set         bool
		total, free uint64
	}
}

var (
	_ FS         = (*ErrorFS)(nil)
	_ DiskUsager = (*ErrorFS)(nil)
	_ File       = (*errorFile)(nil)
)

// NewErrorFS wraps inner. A nil inj never injects.
func NewErrorFS(inner FS, inj Injector) *ErrorFS {
	if inj == nil {
		inj = Never
	}
	return &ErrorFS{inner: inner, inj: inj}
}

// Inner returns the wrapped FS.
func (e *ErrorFS) Inner() FS { return e.inner }

// SetDiskUsage makes DiskUsage report total and free for every directory, as
// if the volume were that size (use it to simulate a full disk).
func (e *ErrorFS) SetDiskUsage(total, free uint64) {
	e.du.Lock()
	defer e.du.Unlock()
	e.du.set, e.du.total, e.du.free = true, total, free
}

// ClearDiskUsage removes the SetDiskUsage override.
func (e *ErrorFS) ClearDiskUsage() {
	e.du.Lock()
	defer e.du.Unlock()
	e.du.set = false
}

func (e *ErrorFS) check(op Op, path string) error {
	if err := e.inj.MaybeError(op, path); err != nil {
		var sw *ShortWriteError
		if errors.As(err, &sw) {
			err = sw.unwrapped()
		}
		return &os.PathError{Op: op.String(), Path: path, Err: err}
	}
	return nil
}

func (e *ErrorFS) wrap(op Op, name string, open func(string) (File, error)) (File, error) {
	if err := e.check(op, name); err != nil {
		return nil, err
	}
	f, err := open(name)
	if err != nil {
		return nil, err
	}
	return &errorFile{fs: e, f: f}, nil
}

// Create implements FS.
func (e *ErrorFS) Create(name string) (File, error) { return e.wrap(OpCreate, name, e.inner.Create) }

// Open implements FS.
func (e *ErrorFS) Open(name string) (File, error) { return e.wrap(OpOpen, name, e.inner.Open) }

// OpenReadWrite implements FS.
func (e *ErrorFS) OpenReadWrite(name string) (File, error) {
	return e.wrap(OpOpenReadWrite, name, e.inner.OpenReadWrite)
}

// Remove implements FS.
func (e *ErrorFS) Remove(name string) error {
	if err := e.check(OpRemove, name); err != nil {
		return err
	}
	return e.inner.Remove(name)
}

// Rename implements FS; the injector sees oldname.
func (e *ErrorFS) Rename(oldname, newname string) error {
	if err := e.check(OpRename, oldname); err != nil {
		return err
	}
	return e.inner.Rename(oldname, newname)
}

// MkdirAll implements FS.
func (e *ErrorFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := e.check(OpMkdirAll, dir); err != nil {
		return err
	}
	return e.inner.MkdirAll(dir, perm)
}

// List implements FS.
func (e *ErrorFS) List(dir string) ([]string, error) {
	if err := e.check(OpList, dir); err != nil {
		return nil, err
	}
	return e.inner.List(dir)
}

// Stat implements FS.
func (e *ErrorFS) Stat(name string) (os.FileInfo, error) {
	if err := e.check(OpStat, name); err != nil {
		return nil, err
	}
	return e.inner.Stat(name)
}

// SyncDir implements FS.
func (e *ErrorFS) SyncDir(dir string) error {
	if err := e.check(OpSyncDir, dir); err != nil {
		return err
	}
	return e.inner.SyncDir(dir)
}

// DiskUsage consults the injector (OpDiskUsage), then returns the
// SetDiskUsage override if any, else asks the wrapped FS; ErrUnsupported if
// it is not a DiskUsager.
func (e *ErrorFS) DiskUsage(dir string) (total, free uint64, err error) {
	if err := e.check(OpDiskUsage, dir); err != nil {
		return 0, 0, err
	}
	e.du.Lock()
	set, t, f := e.du.set, e.du.total, e.du.free
	e.du.Unlock()
	if set {
		return t, f, nil
	}
	if du, ok := e.inner.(DiskUsager); ok {
		return du.DiskUsage(dir)
	}
	return 0, 0, ErrUnsupported
}

// errorFile is a File of an ErrorFS.
type errorFile struct {
	fs *ErrorFS
	f  File
}

func (f *errorFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.check(OpRead, f.f.Name()); err != nil {
		return 0, err
	}
	return f.f.ReadAt(p, off)
}

func (f *errorFile) WriteAt(p []byte, off int64) (int, error) {
	err := f.fs.inj.MaybeError(OpWrite, f.f.Name())
	if err == nil {
		return f.f.WriteAt(p, off)
	}
	var sw *ShortWriteError
	if !errors.As(err, &sw) {
		return 0, &os.PathError{Op: OpWrite.String(), Path: f.f.Name(), Err: err}
	}
	n, werr := f.f.WriteAt(p[:len(p)/2], off)
	if werr != nil {
		return n, werr
	}
	return n, &os.PathError{Op: OpWrite.String(), Path: f.f.Name(), Err: sw.unwrapped()}
}

func (f *errorFile) Close() error {
	ierr := f.fs.check(OpClose, f.f.Name())
	cerr := f.f.Close()
	if ierr != nil {
		return ierr
	}
	return cerr
}

func (f *errorFile) Sync() error {
	if err := f.fs.check(OpSync, f.f.Name()); err != nil {
		return err
	}
	return f.f.Sync()
}

func (f *errorFile) Truncate(size int64) error {
	if err := f.fs.check(OpTruncate, f.f.Name()); err != nil {
		return err
	}
	return f.f.Truncate(size)
}

func (f *errorFile) Preallocate(off, length int64) error {
	if err := f.fs.check(OpPreallocate, f.f.Name()); err != nil {
		return err
	}
	return f.f.Preallocate(off, length)
}

func (f *errorFile) Stat() (os.FileInfo, error) {
	if err := f.fs.check(OpFileStat, f.f.Name()); err != nil {
		return nil, err
	}
	return f.f.Stat()
}

func (f *errorFile) Name() string { return f.f.Name() }
