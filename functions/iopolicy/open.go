package iopolicy

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// OpenDir opens directory rel below root (rel "." is the root itself)
// one element at a time with O_NOFOLLOW, so no symbolic link below the
// root, even one swapped in while the walk runs, leads out of it. With
// create, missing elements are made (mode 0755). The root must exist.
// Directories on the way need only search permission (they are opened
// with O_PATH); the last one is opened for reading when it may be, else
// with O_PATH too (enough to open, create and rename in it).
func OpenDir(root Root, rel string, create bool) (*os.File, error) {
	const walk = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC
	var names []string
	if rel != "." {
		for _, name := range strings.Split(rel, "/") {
			if name == ".." {
				return nil, fmt.Errorf("%w: %s/%s: a .. element", ErrRefused, root, rel)
			}
			if name != "" && name != "." {
				names = append(names, name)
			}
		}
	}
	fd, err := unix.Open(string(root), walk, 0)
	if err != nil {
		return nil, fmt.Errorf("directory %s: %w", root, err)
	}
	path := string(root)
	for _, name := range names {
		path += "/" + name
		next, err := unix.Openat(fd, name, walk|unix.O_NOFOLLOW, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(fd, name, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(fd, name, walk|unix.O_NOFOLLOW, 0)
			}
		}
		unix.Close(fd)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				return nil, fmt.Errorf("%w: %s is a symbolic link or not a directory", ErrRefused, path)
			}
			return nil, fmt.Errorf("directory %s: %w", path, err)
		}
		fd = next
	}
	// Reopen the directory itself (".") for reading when permitted.
	if rd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		unix.Close(fd)
		fd = rd
	}
	return os.NewFile(uintptr(fd), path), nil
}

// OpenIn opens name (one element, not a symbolic link) in directory dir.
func OpenIn(dir *os.File, name string, flags int, perm uint32) (*os.File, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return nil, fmt.Errorf("%w: %q is not a file name", ErrRefused, name)
	}
	fd, err := unix.Openat(int(dir.Fd()), name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("%w: %s/%s is a symbolic link", ErrRefused, dir.Name(), name)
		}
		return nil, fmt.Errorf("%s/%s: %w", dir.Name(), name, err)
	}
	return os.NewFile(uintptr(fd), dir.Name()+"/"+name), nil
}

// OpenPath checks path for tenant and opens it as a directory (OpenDir).
func (p *Policy) OpenPath(tenant, path string, create bool) (*os.File, error) {
	root, rel, err := p.CheckPath(tenant, path)
	if err != nil {
		return nil, err
	}
	return OpenDir(root, rel, create)
}

// OpenFile checks path for tenant and opens the file it names with
// flags: its directory with OpenDir (without creating it), the file
// with OpenIn.
func (p *Policy) OpenFile(tenant, path string, flags int, perm uint32) (*os.File, error) {
	root, rel, err := p.CheckPath(tenant, path)
	if err != nil {
		return nil, err
	}
	if rel == "." {
		return nil, fmt.Errorf("%w: %s is an allowed directory, not a file in it", ErrRefused, path)
	}
	dirRel, name := ".", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		dirRel, name = rel[:i], rel[i+1:]
	}
	dir, err := OpenDir(root, dirRel, false)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return OpenIn(dir, name, flags, perm)
}
