package fuzz

import (
	"math/rand/v2"
	"os"
	"sync"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// lockFS wraps a MemFS so that a crash clone is one instant across files:
// every operation holds mu shared, crashClone holds it exclusively. (MemFS
// clones file by file, and file writes do not take its lock, so a bare
// clone could copy the entry log before a checkpoint's sync and the index
// after it, a state no real crash produces.)
type lockFS struct {
	mu  *sync.RWMutex
	mem *vfs.MemFS
}

func newLockFS(mem *vfs.MemFS) *lockFS { return &lockFS{mu: new(sync.RWMutex), mem: mem} }

// crashClone returns a new lockFS holding a crash clone of fs: synced data
// plus, per file, a random prefix of the unsynced writes (maybe torn).
func (fs *lockFS) crashClone(rng *rand.Rand) *lockFS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return newLockFS(fs.mem.CrashCloneRandom(rng))
}

// crashCloneSubset is crashClone where an arbitrary subset of each file's
// unsynced writes survives (writeback reaching the disk out of order).
func (fs *lockFS) crashCloneSubset(rng *rand.Rand) *lockFS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return newLockFS(fs.mem.CrashCloneSubset(rng))
}

func (fs *lockFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &lockFile{mu: fs.mu, f: f}, nil
}

func (fs *lockFS) Create(name string) (vfs.File, error) {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fs.wrap(fs.mem.Create(name))
}

func (fs *lockFS) Open(name string) (vfs.File, error) {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fs.wrap(fs.mem.Open(name))
}

func (fs *lockFS) OpenReadWrite(name string) (vfs.File, error) {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fs.wrap(fs.mem.OpenReadWrite(name))
}

func (fs *lockFS) Remove(name string) error {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fs.mem.Remove(name)
}

func (fs *lockFS) Rename(o, n string) error {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fs.mem.Rename(o, n)
}

func (fs *lockFS) MkdirAll(dir string, perm os.FileMode) error {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fs.mem.MkdirAll(dir, perm)
}

func (fs *lockFS) List(dir string) ([]string, error) {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fs.mem.List(dir)
}

func (fs *lockFS) Stat(name string) (os.FileInfo, error) {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fs.mem.Stat(name)
}

func (fs *lockFS) SyncDir(dir string) error {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fs.mem.SyncDir(dir)
}

func (fs *lockFS) DiskUsage(dir string) (total, free uint64, err error) {
	return fs.mem.DiskUsage(dir)
}

type lockFile struct {
	mu *sync.RWMutex
	f  vfs.File
}

func (f *lockFile) ReadAt(p []byte, off int64) (int, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.f.ReadAt(p, off)
}

func (f *lockFile) WriteAt(p []byte, off int64) (int, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.f.WriteAt(p, off)
}

func (f *lockFile) Close() error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.f.Close()
}

func (f *lockFile) Sync() error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.f.Sync()
}

func (f *lockFile) Truncate(size int64) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.f.Truncate(size)
}

func (f *lockFile) Preallocate(off, length int64) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.f.Preallocate(off, length)
}

func (f *lockFile) Stat() (os.FileInfo, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.f.Stat()
}

func (f *lockFile) Name() string { return f.f.Name() }
