package vfs

import (
	"errors"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// Default is the OS file system.
var Default FS = NewOS()

// OSFS is the FS backed by the operating system. Its files implement Fder and
// the FS implements DiskUsager.
type OSFS struct{}

var (
	_ FS           = (*OSFS)(nil)
	_ DiskUsager   = (*OSFS)(nil)
	_ DirectOpener = (*OSFS)(nil)
	_ File         = (*osFile)(nil)
	_ Fder         = (*osFile)(nil)
)

// NewOS returns the OS file system.
func NewOS() *OSFS { return &OSFS{} }

func (*OSFS) open(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag|unix.O_CLOEXEC, perm)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f, fd: int(f.Fd())}, nil
}

// Create creates or truncates name for reading and writing (mode 0644).
func (fs *OSFS) Create(name string) (File, error) {
	return fs.open(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

// Open opens name read-only.
func (fs *OSFS) Open(name string) (File, error) { return fs.open(name, os.O_RDONLY, 0) }

// OpenReadWrite opens an existing file for reading and writing.
func (fs *OSFS) OpenReadWrite(name string) (File, error) { return fs.open(name, os.O_RDWR, 0) }

// OpenDirect opens an existing file write-only with O_DIRECT: writes skip
// the page cache and must be aligned (offset, length and memory) to the
// logical block size. A file system without O_DIRECT support fails here
// (EINVAL).
func (fs *OSFS) OpenDirect(name string) (File, error) {
	return fs.open(name, os.O_WRONLY|unix.O_DIRECT, 0)
}

// Remove removes a file or an empty directory.
func (*OSFS) Remove(name string) error { return os.Remove(name) }

// Rename renames oldname to newname (rename(2)).
func (*OSFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// MkdirAll creates dir and its missing parents.
func (*OSFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

// List returns the sorted entry names of dir.
func (*OSFS) List(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	slices.Sort(names)
	return names, nil
}

// Stat describes name.
func (*OSFS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

// SyncDir opens dir and fsyncs it.
func (*OSFS) SyncDir(dir string) error {
	d, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil {
		return serr
	}
	return cerr
}

// DiskUsage reports the size of the volume holding dir and the bytes
// available to unprivileged users on it (statfs f_bavail).
func (*OSFS) DiskUsage(dir string) (total, free uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, &os.PathError{Op: "statfs", Path: dir, Err: err}
	}
	bs := uint64(st.Bsize)
	return st.Blocks * bs, st.Bavail * bs, nil
}

// osFile is an *os.File whose Sync is fdatasync and whose Preallocate is
// fallocate(FALLOC_FL_KEEP_SIZE).
type osFile struct {
	f  *os.File
	fd int
}

func (f *osFile) ReadAt(p []byte, off int64) (int, error)  { return f.f.ReadAt(p, off) }
func (f *osFile) WriteAt(p []byte, off int64) (int, error) { return f.f.WriteAt(p, off) }
func (f *osFile) Close() error                             { return f.f.Close() }
func (f *osFile) Truncate(size int64) error                { return f.f.Truncate(size) }
func (f *osFile) Stat() (os.FileInfo, error)               { return f.f.Stat() }
func (f *osFile) Name() string                             { return f.f.Name() }

// Fd returns the descriptor. It stays valid until Close.
func (f *osFile) Fd() uintptr { return uintptr(f.fd) }

// Sync is fdatasync(2): data and the metadata needed to read it (size), not
// timestamps.
func (f *osFile) Sync() error {
	for {
		err := unix.Fdatasync(f.fd)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "fdatasync", Path: f.f.Name(), Err: err}
		}
		return nil
	}
}

// Preallocate reserves [off, off+length) with fallocate(FALLOC_FL_KEEP_SIZE),
// so neither the size nor the contents change. When the file system does not
// support fallocate (EOPNOTSUPP, ENOSYS) it is a no-op: the contract is about
// what reads return, and reservation is only an optimisation.
func (f *osFile) Preallocate(off, length int64) error {
	if length <= 0 {
		return nil
	}
	for {
		err := unix.Fallocate(f.fd, unix.FALLOC_FL_KEEP_SIZE, off, length)
		switch {
		case err == nil:
			return nil
		case err == unix.EINTR:
			continue
		case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
			return nil
		default:
			return &os.PathError{Op: "fallocate", Path: f.f.Name(), Err: err}
		}
	}
}
