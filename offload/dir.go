package offload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/magnetar-mq/magnetar/internal/atomicfile"
)

// dirStore keeps objects as files of one directory: <key> holds the
// bytes, <key>.meta the user metadata (JSON). An object is written to
// <key>.tmp-*, synced and renamed into place (metadata first), so it
// appears whole or not at all; leftover .tmp- files of a crashed write
// are removed by the next write or delete of the same key.
type dirStore struct {
	dir string
}

const metaSuffix = ".meta"

func newDirStore(dir string) (*dirStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStoreUnavailable, err)
	}
	return &dirStore{dir: dir}, nil
}

func (d *dirStore) path(key string) (string, error) {
	if key == "" || strings.ContainsAny(key, `/\`) || key[0] == '.' {
		return "", fmt.Errorf("offload: bad object key %q", key)
	}
	return filepath.Join(d.dir, key), nil
}

func (d *dirStore) fsErr(op, key string, err error) error {
	if err == nil {
		return nil
	}
	if _, serr := os.Stat(d.dir); serr != nil {
		// The directory itself is gone (an unmounted volume): the store
		// is unavailable, whatever the object.
		return fmt.Errorf("%s %s: %w: %v", op, key, ErrStoreUnavailable, serr)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s %s: %w", op, key, ErrNotFound)
	}
	return fmt.Errorf("%s %s: %w: %v", op, key, ErrStoreUnavailable, err)
}

// writeFile writes p atomically from fill (synced, renamed into place;
// the caller syncs the directory).
func (d *dirStore) writeFile(p string, fill func(*os.File) error) error {
	if _, err := os.Stat(d.dir); err != nil {
		return err // no MkdirAll: a removed directory is an unavailable store
	}
	return atomicfile.Write(p, atomicfile.Options{}, fill)
}

func (d *dirStore) syncDir() error { return atomicfile.SyncDir(d.dir) }

func (d *dirStore) writeMeta(p string, meta map[string]string) error {
	js, _ := json.Marshal(meta)
	return d.writeFile(p+metaSuffix, func(f *os.File) error { _, err := f.Write(js); return err })
}

func (d *dirStore) putParts(ctx context.Context, key string, meta map[string]string, next func() ([]byte, error)) (int64, error) {
	p, err := d.path(key)
	if err != nil {
		return 0, err
	}
	d.removeTemps(key)
	var n int64
	var srcErr error
	err = d.writeFile(p, func(f *os.File) error {
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			b, err := next()
			if err != nil {
				srcErr = err
				return err
			}
			if b == nil {
				return nil
			}
			if _, err := f.Write(b); err != nil {
				return err
			}
			n += int64(len(b))
		}
	})
	if srcErr != nil {
		return 0, srcErr
	}
	if err == nil {
		err = d.writeMeta(p, meta)
	}
	if err == nil {
		err = d.syncDir()
	}
	if err != nil {
		_ = os.Remove(p)
		return 0, d.fsErr("write", key, err)
	}
	return n, nil
}

func (d *dirStore) put(ctx context.Context, key string, data []byte, meta map[string]string) error {
	_, err := d.putParts(ctx, key, meta, func() ([]byte, error) {
		b := data
		data = nil
		if b == nil {
			return nil, nil
		}
		return b, nil
	})
	return err
}

func (d *dirStore) getRange(_ context.Context, key string, off, n int64) ([]byte, map[string]string, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, d.fsErr("get", key, err)
	}
	defer f.Close()
	var b []byte
	if n < 0 {
		if _, err = f.Seek(off, io.SeekStart); err == nil {
			b, err = io.ReadAll(f)
		}
	} else {
		b = make([]byte, n)
		var k int
		k, err = f.ReadAt(b, off)
		if err == io.EOF {
			err = nil
		}
		b = b[:k]
	}
	if err != nil {
		return nil, nil, d.fsErr("get", key, err)
	}
	meta := map[string]string{}
	js, err := os.ReadFile(p + metaSuffix)
	if err != nil {
		return nil, nil, d.fsErr("get metadata", key, err)
	}
	if err := json.Unmarshal(js, &meta); err != nil {
		return nil, nil, fmt.Errorf("metadata of %s: %w", key, ErrCorrupt)
	}
	return b, meta, nil
}

func (d *dirStore) size(_ context.Context, key string) (int64, error) {
	p, err := d.path(key)
	if err != nil {
		return 0, err
	}
	st, err := os.Stat(p)
	if err != nil {
		return 0, d.fsErr("stat", key, err)
	}
	return st.Size(), nil
}

func (d *dirStore) removeTemps(key string) {
	ms, _ := filepath.Glob(filepath.Join(d.dir, key+atomicfile.TempInfix+"*"))
	ms2, _ := filepath.Glob(filepath.Join(d.dir, key+metaSuffix+atomicfile.TempInfix+"*"))
	for _, m := range append(ms, ms2...) {
		_ = os.Remove(m)
	}
}

func (d *dirStore) remove(_ context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if _, err := os.Stat(d.dir); err != nil {
		return d.fsErr("delete", key, err)
	}
	d.removeTemps(key)
	for _, q := range []string{p, p + metaSuffix} {
		if err := os.Remove(q); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return d.fsErr("delete", key, err)
		}
	}
	return nil
}

func (d *dirStore) list(_ context.Context, prefix string) ([]string, error) {
	es, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, d.fsErr("list", prefix, err)
	}
	var out []string
	for _, e := range es {
		if n := e.Name(); strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}
