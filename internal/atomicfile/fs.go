package atomicfile

import (
	"os"
	"path"
	"path/filepath"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// WriteFS is Write for the storage packages, on their vfs.FS (so that
// crash and fault-injection tests see every step) and with a temporary
// file of a fixed name in dir, which they know and clean up when they
// open: create dir/tmpName, write data, fsync, rename it to dir/name,
// fsync dir, close. On error the steps stop; the destination is the old
// file or the new one, never a part.
func WriteFS(fs vfs.FS, dir, tmpName, name string, data []byte) error {
	f, err := CreateFS(fs, dir, tmpName, name, data)
	if err != nil {
		return err
	}
	return f.Close()
}

// CreateFS is WriteFS that returns the new file open, for a file that
// grows by appends after its first contents (the index's metadata log).
func CreateFS(fs vfs.FS, dir, tmpName, name string, data []byte) (vfs.File, error) {
	tmp := path.Join(dir, tmpName)
	f, err := fs.Create(tmp)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteAt(data, 0)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = fs.Rename(tmp, path.Join(dir, name))
	}
	if err == nil {
		err = fs.SyncDir(dir)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Rename moves a file already written and synced at tmp over path and
// fsyncs path's directory, so the new name survives a crash: the last
// step of Write, for a file that is put in place another way (a hard
// link).
func Rename(tmp, path string) error {
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}
