package atomicfile

import (
	"os"
	"path/filepath"
)

// TempInfix joins the destination's name and a random suffix to name the
// temporary file ("name.tmp-123"): one left by a crash is found by that
// prefix.
const TempInfix = ".tmp-"

// Options tune Write.
type Options struct {
	// Perm is the mode of the new file (0: 0o644).
	Perm os.FileMode
	// SyncDir fsyncs the directory after the rename, so the new name
	// survives a crash too.
	SyncDir bool
}

// Write replaces path with what fill writes into the file it is given.
// The directory must exist.
func Write(path string, o Options, fill func(*os.File) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+TempInfix)
	if err != nil {
		return err
	}
	tmp := f.Name()
	perm := o.Perm
	if perm == 0 {
		perm = 0o644
	}
	err = fill(f)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if o.SyncDir {
		return SyncDir(dir)
	}
	return nil
}

// WriteBytes is Write with fixed contents.
func WriteBytes(path string, data []byte, o Options) error {
	return Write(path, o, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// SyncDir fsyncs the directory dir, making renames and creations in it
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
