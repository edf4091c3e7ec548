package entrylog

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// cpuNanos is the process's user+system and user CPU time. Page-cache
// writes swing in wall time with the kernel's writeback and in system
// time with page reclaim; user time shows what the code itself spends.
func cpuNanos(b *testing.B) (cpu, user int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), ru.Utime.Nano()
}

// reportCPU reports cpu-ns/op and user-ns/op since c0, u0.
func reportCPU(b *testing.B, c0, u0 int64) {
	c, u := cpuNanos(b)
	b.ReportMetric(float64(c-c0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(u-u0)/float64(b.N), "user-ns/op")
}

// openBenchLog opens a log on the OS file system (page cache) in the
// benchmark's temp dir, rolled at 1 GiB.
func openBenchLog(b *testing.B) *Log {
	l, err := Open(Options{FS: vfs.NewOS(), Dirs: []string{b.TempDir()}, LogSizeLimit: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// fillBenchLog adds n entries 0..n-1 of ledger 1 with payload p to l,
// flushes them and returns their locations.
func fillBenchLog(b *testing.B, l *Log, n int, p []byte) []uint64 {
	locs := make([]uint64, n)
	for i := range locs {
		var err error
		if locs[i], err = l.Add(1, int64(i), p); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	return locs
}

// Large-entry benchmarks with the API the checkpoint used before AddRecord
// (Add), kept free of newer API so that the same file runs against older
// code for A/B comparisons.

var largeSizes = []int{64 << 10, 400 << 10}

// BenchmarkAddLarge appends entries of 64 and 400 KiB with Add (OS file
// system, page cache; logs rolled at 1 GiB, no Sync). cpu-ns/op is the
// process's CPU time per Add, user-ns/op its user part.
func BenchmarkAddLarge(b *testing.B) {
	for _, size := range largeSizes {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			l := openBenchLog(b)
			defer l.Close()
			p := make([]byte, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			c0, u0 := cpuNanos(b)
			for i := 0; b.Loop(); i++ {
				if _, err := l.Add(int64(i%4), int64(i), p); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, c0, u0)
		})
	}
}

// BenchmarkReadLarge reads flushed 64 and 400 KiB entries in a scattered
// order with AppendRead into a reused buffer (page cache), and into a nil
// buffer (a new one per read, as Read does).
func BenchmarkReadLarge(b *testing.B) {
	for _, size := range largeSizes {
		for _, reuse := range []bool{true, false} {
			b.Run(fmt.Sprintf("size=%d/reuse=%v", size, reuse), func(b *testing.B) {
				l := openBenchLog(b)
				defer l.Close()
				p := make([]byte, size)
				n := (128 << 20) / size
				locs := fillBenchLog(b, l, n, p)
				var buf []byte
				if reuse {
					buf = make([]byte, 0, size)
				}
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					j := (i * 2654435761) % n
					out, err := l.AppendRead(buf[:0], locs[j], 1, int64(j))
					if err != nil || len(out) != size {
						b.Fatal(err)
					}
					if reuse {
						buf = out
					}
				}
			})
		}
	}
}
