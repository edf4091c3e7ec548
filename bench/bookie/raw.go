package bookie

import (
	"context"
	"path/filepath"
	"time"

	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/journal"
)

// rawRun is the baseline: groups of k records (the journal's record
// header plus size bytes each, as the journal writes them) written with
// pwrite into a file preallocated in 16 MiB steps, one fdatasync per
// group. Ops are records; latency is per group (what every record in it
// waits).
func rawRun(ctx context.Context, cfg Config, dir string, size, k int) (sample, error) {
	f, err := createRawFile(vfs.NewOS(), filepath.Join(dir, "raw.dat"))
	if err != nil {
		return sample{}, err
	}
	defer f.Close()
	group := make([]byte, k*(journal.RecordHeaderSize+size))
	for i := range group {
		group[i] = byte(i * 7)
	}
	rec := newRecorder(cfg.Duration, cfg.Window)
	var cpu0 time.Duration
	clk := newClock(cfg, rec)
	for clk.next(ctx, func() { cpu0 = cpuTime() }) {
		start := journal.Nanotime()
		if err := f.write(group, !cfg.NoSync); err != nil {
			return sample{}, err
		}
		rec.done(start, journal.Nanotime(), int64(k))
	}
	if err := ctx.Err(); err != nil {
		return sample{}, err
	}
	s := sample{ops: rec.ops, elapsed: cfg.Duration, cpu: cpuTime() - cpu0, hist: rec.hist}
	s.detail = RunDetail{OpsPerSec: float64(s.ops) / cfg.Duration.Seconds(), Windows: rec.windows()}
	return s, nil
}

// rawFile is the raw loops' file: preallocated in 16 MiB steps, written
// at its end, cut back to empty past 1 GiB (like a rolled journal file).
type rawFile struct {
	vfs.File
	off, prealloc int64
}

func createRawFile(fs vfs.FS, path string) (*rawFile, error) {
	f, err := fs.Create(path)
	if err != nil {
		return nil, err
	}
	return &rawFile{File: f}, nil
}

// write writes b at the end and, with sync, fdatasyncs it.
func (f *rawFile) write(b []byte, sync bool) error {
	const step = 16 << 20
	if f.off+int64(len(b)) > f.prealloc {
		if err := f.Preallocate(f.prealloc, step+int64(len(b))); err != nil {
			return err
		}
		f.prealloc += step + int64(len(b))
	}
	if _, err := f.WriteAt(b, f.off); err != nil {
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	f.off += int64(len(b))
	if f.off > 1<<30 { // stay within 1 GiB, like a rolled journal file
		f.off, f.prealloc = 0, 0
		return f.Truncate(0)
	}
	return nil
}
