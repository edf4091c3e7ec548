package bookie

import (
	"context"
	"path/filepath"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/internal/vfs"
	"github.com/magnetar-mq/magnetar/journal"
)

// pacedRawRun is the raw baseline under the paced cell's arrivals: units
// of unitSize(cfg, k) records are scheduled every unit/rate seconds, at
// most k records outstanding (as the bookie's driver does), and one writer
// takes every record that has arrived, writes them with one pwrite (the
// journal's record header plus size bytes each, into a file preallocated
// like rawRun's) and covers them with one fdatasync. A record's latency
// runs from its unit's scheduled time to the end of that fdatasync.
//
// This is group commit with nothing else on the path: what this disk
// makes of the paced cell's arrival process. It counts a slow sync once
// per record that arrived during it, as the paced bookie cell does; the
// closed-loop raw baseline counts it once per group of k, because nothing
// is issued while it lasts. fs is the OS's but in tests.
func pacedRawRun(ctx context.Context, cfg Config, fs vfs.FS, dir string, size, k int, rate float64) (sample, error) {
	f, err := createRawFile(fs, filepath.Join(dir, "raw-paced.dat"))
	if err != nil {
		return sample{}, err
	}
	defer f.Close()
	unit := unitSize(cfg, k)
	recBytes := journal.RecordHeaderSize + size
	buf := make([]byte, k*recBytes)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	rec := newRecorder(cfg.Duration, cfg.Window)
	free := make(chan struct{}, k/unit)
	for range k / unit {
		free <- struct{}{}
	}
	var mu sync.Mutex
	var arrived []int64 // scheduled times of the units not yet taken
	var closing bool
	kick := make(chan struct{}, 1)
	werr := make(chan error, 1)
	go func() {
		werr <- pacedRawWriter(f, buf, unit*recBytes, cfg.NoSync, rec, free, kick, func(take []int64) ([]int64, bool) {
			mu.Lock()
			defer mu.Unlock()
			take, arrived = arrived, take[:0]
			return take, closing
		}, unit)
	}()
	stop := func() error {
		mu.Lock()
		closing = true
		mu.Unlock()
		select {
		case kick <- struct{}{}:
		default:
		}
		return <-werr
	}

	interval := int64(float64(time.Second) * float64(unit) / rate)
	lag := newHist()
	var s sample
	var cpu0 time.Duration
	clk := newClock(cfg, rec)
	for clk.next(ctx, func() { cpu0 = cpuTime() }) {
		select {
		case <-free:
		case err := <-werr:
			return sample{}, err
		default:
			if clk.measuring {
				s.waitFree++
			}
			select {
			case <-free:
			case err := <-werr:
				return sample{}, err
			}
		}
		sched := clk.pace(interval, lag)
		mu.Lock()
		arrived = append(arrived, sched)
		mu.Unlock()
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	cpu1 := cpuTime()
	if err := stop(); err != nil {
		return sample{}, err
	}
	if err := ctx.Err(); err != nil {
		return sample{}, err
	}
	s.ops, s.hist, s.elapsed, s.cpu = rec.ops, rec.hist, cfg.Duration, cpu1-cpu0
	s.lagP99, s.lagMax = time.Duration(lag.ValueAtQuantile(99)), time.Duration(lag.Max())
	s.detail = RunDetail{OpsPerSec: float64(s.ops) / cfg.Duration.Seconds(), Windows: rec.windows()}
	return s, nil
}

// pacedRawWriter is pacedRawRun's writer: on each kick it takes the units
// that arrived (take also reports whether the driver stopped), writes and
// syncs their records, records their latencies and frees the units. It
// returns once the driver stopped and nothing is left, or at the first
// I/O error.
func pacedRawWriter(f *rawFile, buf []byte, unitBytes int, noSync bool, rec *recorder, free chan<- struct{}, kick <-chan struct{},
	take func([]int64) ([]int64, bool), unit int) error {
	var units []int64
	for {
		var closing bool
		units, closing = take(units)
		if len(units) == 0 {
			if closing {
				return nil
			}
			<-kick
			continue
		}
		group := buf[:len(units)*unitBytes]
		if err := f.write(group, !noSync); err != nil {
			return err
		}
		now := journal.Nanotime()
		for _, t := range units {
			rec.done(t, now, int64(unit))
			free <- struct{}{}
		}
	}
}
