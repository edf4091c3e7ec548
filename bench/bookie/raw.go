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
	fs := vfs.NewOS()
	f, err := fs.Create(filepath.Join(dir, "raw.dat"))
	if err != nil {
		return sample{}, err
	}
	defer f.Close()
	group := make([]byte, k*(journal.RecordHeaderSize+size))
	for i := range group {
		group[i] = byte(i * 7)
	}
	const step = 16 << 20
	rec := newRecorder(cfg.Duration, cfg.Window)
	var off, prealloc int64
	begin := journal.Nanotime()
	warmEnd := begin + int64(cfg.Warmup)
	end := warmEnd + int64(cfg.Duration)
	var cpu0 time.Duration
	measuring := false
	for {
		now := journal.Nanotime()
		if !measuring && now >= warmEnd {
			cpu0 = cpuTime()
			end = now + int64(cfg.Duration)
			rec.begin(now, cfg.Duration)
			measuring = true
		}
		if now >= end || ctx.Err() != nil {
			break
		}
		if off+int64(len(group)) > prealloc {
			if err := f.Preallocate(prealloc, step+int64(len(group))); err != nil {
				return sample{}, err
			}
			prealloc += step + int64(len(group))
		}
		start := journal.Nanotime()
		if _, err := f.WriteAt(group, off); err != nil {
			return sample{}, err
		}
		if !cfg.NoSync {
			if err := f.Sync(); err != nil {
				return sample{}, err
			}
		}
		rec.done(start, journal.Nanotime(), int64(k))
		off += int64(len(group))
		if off > 1<<30 { // stay within 1 GiB, like a rolled journal file
			off, prealloc = 0, 0
			if err := f.Truncate(0); err != nil {
				return sample{}, err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return sample{}, err
	}
	s := sample{ops: rec.ops, elapsed: cfg.Duration, cpu: cpuTime() - cpu0, hist: rec.hist}
	s.detail = RunDetail{OpsPerSec: float64(s.ops) / cfg.Duration.Seconds(), Windows: rec.windows()}
	return s, nil
}
