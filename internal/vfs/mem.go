package vfs

import (
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// MemFS is an in-memory FS that models what survives a crash; see the package
// documentation for the exact model. It is safe for concurrent use.
//
// Paths are cleaned and rooted: "a/b", "/a/b" and "./a//b" name the same
// file. The root directory always exists.
type MemFS struct {
	// mu guards the namespace: every directory's children and durable maps,
	// and the disk-usage override. Lock order: MemFS.mu before memNode.mu.
	mu struct {
		sync.Mutex
		root      *memNode
		diskSet   bool
		diskTotal uint64
		diskFree  uint64
	}
}

var (
	_ FS         = (*MemFS)(nil)
	_ DiskUsager = (*MemFS)(nil)
	_ File       = (*memFile)(nil)
)

// memNode is a directory or a regular file.
type memNode struct {
	isDir   bool
	modTime time.Time

	// Directory state, guarded by MemFS.mu. children is the live namespace;
	// durable is the set of entries as of the last SyncDir.
	children map[string]*memNode
	durable  map[string]*memNode

	// File state, guarded by mu. data is what reads return; synced is the
	// content as of the last Sync; pending holds the writes and truncates
	// since then, in order, so synced+pending == data.
	mu      sync.RWMutex
	data    []byte
	synced  []byte
	pending []memOp
}

// memOp is one unsynced change to a file: a write of data at off, or (when
// data is nil) a truncate to size.
type memOp struct {
	off  int64
	data []byte
	size int64
}

func (op memOp) apply(b []byte) []byte {
	if op.data == nil {
		return resize(b, op.size)
	}
	return writeInto(b, op.off, op.data)
}

func newDir() *memNode {
	return &memNode{isDir: true, modTime: time.Now(), children: map[string]*memNode{}, durable: map[string]*memNode{}}
}

// NewMem returns an empty in-memory file system.
func NewMem() *MemFS {
	fs := &MemFS{}
	fs.mu.root = newDir()
	return fs
}

// split cleans name and returns its components; the root is nil.
func split(name string) []string {
	p := strings.TrimPrefix(path.Clean("/"+name), "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func pathErr(op, name string, err error) error { return &os.PathError{Op: op, Path: name, Err: err} }

// walkLocked returns the node for comps.
func (fs *MemFS) walkLocked(comps []string) (*memNode, error) {
	n := fs.mu.root
	for _, c := range comps {
		if !n.isDir {
			return nil, unix.ENOTDIR
		}
		next, ok := n.children[c]
		if !ok {
			return nil, unix.ENOENT
		}
		n = next
	}
	return n, nil
}

// parentLocked returns the directory holding name and name's base.
func (fs *MemFS) parentLocked(name string) (*memNode, string, error) {
	comps := split(name)
	if len(comps) == 0 {
		return nil, "", unix.EINVAL // the root has no parent
	}
	dir, err := fs.walkLocked(comps[:len(comps)-1])
	if err != nil {
		return nil, "", err
	}
	if !dir.isDir {
		return nil, "", unix.ENOTDIR
	}
	return dir, comps[len(comps)-1], nil
}

// Create creates or truncates name. Truncating an existing file is an
// unsynced change like any other.
func (fs *MemFS) Create(name string) (File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dir, base, err := fs.parentLocked(name)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	n, ok := dir.children[base]
	switch {
	case ok && n.isDir:
		return nil, pathErr("open", name, unix.EISDIR)
	case ok:
		n.mu.Lock()
		n.truncateLocked(0)
		n.modTime = time.Now()
		n.mu.Unlock()
	default:
		n = &memNode{modTime: time.Now()}
		dir.children[base] = n
	}
	return &memFile{n: n, name: name, write: true}, nil
}

func (fs *MemFS) open(name string, write bool) (File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.walkLocked(split(name))
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	if n.isDir {
		return nil, pathErr("open", name, unix.EISDIR)
	}
	return &memFile{n: n, name: name, write: write}, nil
}

// Open opens an existing file read-only.
func (fs *MemFS) Open(name string) (File, error) { return fs.open(name, false) }

// OpenReadWrite opens an existing file for reading and writing.
func (fs *MemFS) OpenReadWrite(name string) (File, error) { return fs.open(name, true) }

// Remove removes a file or an empty directory. Open handles keep working on
// the removed file's data.
func (fs *MemFS) Remove(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dir, base, err := fs.parentLocked(name)
	if err != nil {
		return pathErr("remove", name, err)
	}
	n, ok := dir.children[base]
	if !ok {
		return pathErr("remove", name, unix.ENOENT)
	}
	if n.isDir && len(n.children) > 0 {
		return pathErr("remove", name, unix.ENOTEMPTY)
	}
	delete(dir.children, base)
	return nil
}

// Rename moves oldname to newname, replacing a file or empty directory there.
func (fs *MemFS) Rename(oldname, newname string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	odir, obase, err := fs.parentLocked(oldname)
	if err != nil {
		return pathErr("rename", oldname, err)
	}
	n, ok := odir.children[obase]
	if !ok {
		return pathErr("rename", oldname, unix.ENOENT)
	}
	ndir, nbase, err := fs.parentLocked(newname)
	if err != nil {
		return pathErr("rename", newname, err)
	}
	if n.isDir {
		oc, nc := split(oldname), split(newname)
		if len(nc) > len(oc) && slices.Equal(oc, nc[:len(oc)]) {
			return pathErr("rename", newname, unix.EINVAL) // into its own subtree
		}
	}
	if old, ok := ndir.children[nbase]; ok && old != n {
		switch {
		case old.isDir && !n.isDir:
			return pathErr("rename", newname, unix.EISDIR)
		case !old.isDir && n.isDir:
			return pathErr("rename", newname, unix.ENOTDIR)
		case old.isDir && len(old.children) > 0:
			return pathErr("rename", newname, unix.ENOTEMPTY)
		}
	}
	delete(odir.children, obase)
	ndir.children[nbase] = n
	return nil
}

// MkdirAll creates dir and any missing parents. New directory entries are
// durable only once their parent is synced with SyncDir.
func (fs *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := fs.mu.root
	for _, c := range split(dir) {
		next, ok := n.children[c]
		if !ok {
			next = newDir()
			n.children[c] = next
		} else if !next.isDir {
			return pathErr("mkdir", dir, unix.ENOTDIR)
		}
		n = next
	}
	return nil
}

// List returns the sorted names in dir.
func (fs *MemFS) List(dir string) ([]string, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.walkLocked(split(dir))
	if err != nil {
		return nil, pathErr("open", dir, err)
	}
	if !n.isDir {
		return nil, pathErr("readdir", dir, unix.ENOTDIR)
	}
	return slices.Sorted(maps.Keys(n.children)), nil
}

// Stat describes name.
func (fs *MemFS) Stat(name string) (os.FileInfo, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.walkLocked(split(name))
	if err != nil {
		return nil, pathErr("stat", name, err)
	}
	return n.info(name), nil
}

// SyncDir makes the current entries of dir durable.
func (fs *MemFS) SyncDir(dir string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.walkLocked(split(dir))
	if err != nil {
		return pathErr("open", dir, err)
	}
	if !n.isDir {
		return pathErr("fsync", dir, unix.ENOTDIR)
	}
	n.durable = maps.Clone(n.children)
	return nil
}

// SetDiskUsage fixes what DiskUsage reports for every directory.
func (fs *MemFS) SetDiskUsage(total, free uint64) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.mu.diskSet, fs.mu.diskTotal, fs.mu.diskFree = true, total, free
}

// memDefaultTotal is the volume size DiskUsage reports without SetDiskUsage.
const memDefaultTotal = 1 << 40

// DiskUsage returns the values set with SetDiskUsage or, by default, a 1 TiB
// volume minus the bytes held by reachable files.
func (fs *MemFS) DiskUsage(dir string) (total, free uint64, err error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if _, err := fs.walkLocked(split(dir)); err != nil {
		return 0, 0, pathErr("statfs", dir, err)
	}
	if fs.mu.diskSet {
		return fs.mu.diskTotal, fs.mu.diskFree, nil
	}
	var used uint64
	var walk func(n *memNode)
	walk = func(n *memNode) {
		for _, c := range n.children {
			if c.isDir {
				walk(c)
				continue
			}
			c.mu.RLock()
			used += uint64(len(c.data))
			c.mu.RUnlock()
		}
	}
	walk(fs.mu.root)
	return memDefaultTotal, memDefaultTotal - min(used, memDefaultTotal), nil
}

// CrashClone returns a new MemFS holding exactly what the model says is
// durable: directory entries as of each directory's last SyncDir, and for
// every file reachable through them the content as of its last Sync.
func (fs *MemFS) CrashClone() *MemFS { return fs.crashClone(nil, nil) }

// CrashCloneRandom is CrashClone, except that for each file a random prefix
// of its unsynced writes and truncates (in the order they were made) also
// survives, and the first write after that prefix may survive torn: a random
// prefix of its bytes. Same rng state, same clone.
func (fs *MemFS) CrashCloneRandom(rng *rand.Rand) *MemFS { return fs.crashClone(rng, survivingPending) }

// CrashCloneSubset is CrashClone, except that for each file an arbitrary
// subset of its unsynced writes and truncates survives, applied in program
// order, and each surviving write may be torn to a random non-empty prefix.
// This models writeback that reached the disk out of order: a later append
// can survive while an earlier one does not, leaving zeros in between. Every
// CrashCloneRandom outcome is also a possible CrashCloneSubset outcome.
func (fs *MemFS) CrashCloneSubset(rng *rand.Rand) *MemFS { return fs.crashClone(rng, survivingSubset) }

// CrashCloneAll is CrashClone, except that every unsynced write and
// truncate of a file survives (the crash came after writeback): tests then
// damage the clone's files to model a particular loss.
func (fs *MemFS) CrashCloneAll() *MemFS {
	return fs.crashClone(nil, func(b []byte, pending []memOp, _ *rand.Rand) []byte {
		for _, op := range pending {
			b = op.apply(b)
		}
		return b
	})
}

type survivor func(b []byte, pending []memOp, rng *rand.Rand) []byte

func (fs *MemFS) crashClone(rng *rand.Rand, survive survivor) *MemFS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	clones := map[*memNode]*memNode{}
	var clone func(n *memNode) *memNode
	clone = func(n *memNode) *memNode {
		if c, ok := clones[n]; ok {
			return c
		}
		var c *memNode
		if n.isDir {
			c = newDir()
			clones[n] = c
			// Sorted so that rng draws do not depend on map order.
			for _, name := range slices.Sorted(maps.Keys(n.durable)) {
				c.children[name] = clone(n.durable[name])
			}
			c.durable = maps.Clone(c.children)
		} else {
			c = &memNode{}
			clones[n] = c
			n.mu.RLock()
			c.modTime = n.modTime
			c.data = slices.Clone(n.synced)
			if survive != nil {
				c.data = survive(c.data, n.pending, rng)
			}
			n.mu.RUnlock()
			c.synced = slices.Clone(c.data)
		}
		return c
	}
	out := NewMem()
	out.mu.root = clone(fs.mu.root)
	out.mu.diskSet, out.mu.diskTotal, out.mu.diskFree = fs.mu.diskSet, fs.mu.diskTotal, fs.mu.diskFree
	return out
}

// survivingPending applies a random prefix of pending to b, and maybe a torn
// prefix of the next write.
func survivingPending(b []byte, pending []memOp, rng *rand.Rand) []byte {
	if len(pending) == 0 {
		return b
	}
	k := rng.IntN(len(pending) + 1)
	for _, op := range pending[:k] {
		b = op.apply(b)
	}
	if k < len(pending) && pending[k].data != nil && len(pending[k].data) > 1 && rng.IntN(2) == 0 {
		op := pending[k]
		b = writeInto(b, op.off, op.data[:1+rng.IntN(len(op.data)-1)])
	}
	return b
}

// survivingSubset applies each op of pending with probability 1/2, in
// order, tearing each applied write with probability 1/4.
func survivingSubset(b []byte, pending []memOp, rng *rand.Rand) []byte {
	for _, op := range pending {
		if rng.IntN(2) == 0 {
			continue
		}
		if len(op.data) > 1 && rng.IntN(4) == 0 {
			op.data = op.data[:1+rng.IntN(len(op.data)-1)]
		}
		b = op.apply(b)
	}
	return b
}

func (n *memNode) info(name string) os.FileInfo {
	n.mu.RLock()
	defer n.mu.RUnlock()
	fi := &memInfo{name: path.Base(path.Clean("/" + name)), modTime: n.modTime, mode: 0o644, size: int64(len(n.data))}
	if n.isDir {
		fi.mode, fi.size = os.ModeDir|0o755, 0
	}
	return fi
}

// truncateLocked records and applies a truncate; n.mu must be held.
func (n *memNode) truncateLocked(size int64) {
	n.data = resize(n.data, size)
	n.pending = append(n.pending, memOp{size: size})
}

// resize returns b with length size; bytes beyond the old length are zero.
func resize(b []byte, size int64) []byte {
	switch {
	case size <= int64(len(b)):
		return b[:size]
	case size <= int64(cap(b)):
		old := len(b)
		b = b[:size]
		clear(b[old:])
		return b
	default:
		nb := make([]byte, size, max(size, 2*int64(cap(b))))
		copy(nb, b)
		return nb
	}
}

// writeInto copies p into b at off, growing b with zeros as needed.
func writeInto(b []byte, off int64, p []byte) []byte {
	if end := off + int64(len(p)); end > int64(len(b)) {
		b = resize(b, end)
	}
	copy(b[off:], p)
	return b
}

// memFile is an open MemFS file.
type memFile struct {
	n      *memNode
	name   string
	write  bool
	closed atomic.Bool
}

func (f *memFile) check(op string, write bool) error {
	if f.closed.Load() {
		return pathErr(op, f.name, os.ErrClosed)
	}
	if write && !f.write {
		return pathErr(op, f.name, unix.EBADF)
	}
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("read", f.name, unix.EINVAL)
	}
	f.n.mu.RLock()
	defer f.n.mu.RUnlock()
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("write", f.name, unix.EINVAL)
	}
	if len(p) == 0 {
		return 0, nil
	}
	op := memOp{off: off, data: slices.Clone(p)}
	f.n.mu.Lock()
	f.n.data = op.apply(f.n.data)
	f.n.pending = append(f.n.pending, op)
	f.n.mu.Unlock()
	return len(p), nil
}

func (f *memFile) Close() error {
	if f.closed.Swap(true) {
		return pathErr("close", f.name, os.ErrClosed)
	}
	return nil
}

// Sync makes the file's current content durable. Its cost is proportional
// to the bytes changed since the previous Sync.
func (f *memFile) Sync() error {
	if err := f.check("sync", false); err != nil {
		return err
	}
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	for _, op := range f.n.pending {
		f.n.synced = op.apply(f.n.synced)
	}
	clear(f.n.pending)
	f.n.pending = f.n.pending[:0]
	return nil
}

func (f *memFile) Truncate(size int64) error {
	if err := f.check("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return pathErr("truncate", f.name, unix.EINVAL)
	}
	f.n.mu.Lock()
	f.n.truncateLocked(size)
	f.n.mu.Unlock()
	return nil
}

// Preallocate checks its arguments and otherwise does nothing: like
// FALLOC_FL_KEEP_SIZE it changes neither the size nor the content.
func (f *memFile) Preallocate(off, length int64) error {
	if err := f.check("fallocate", true); err != nil {
		return err
	}
	if off < 0 || length < 0 {
		return pathErr("fallocate", f.name, unix.EINVAL)
	}
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	if err := f.check("stat", false); err != nil {
		return nil, err
	}
	return f.n.info(f.name), nil
}

func (f *memFile) Name() string { return f.name }

// memInfo is the os.FileInfo of a MemFS node.
type memInfo struct {
	name    string
	size    int64
	mode    os.FileMode
	modTime time.Time
}

func (fi *memInfo) Name() string       { return fi.name }
func (fi *memInfo) Size() int64        { return fi.size }
func (fi *memInfo) Mode() os.FileMode  { return fi.mode }
func (fi *memInfo) ModTime() time.Time { return fi.modTime }
func (fi *memInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi *memInfo) Sys() any           { return nil }
