package bookie

import (
	"fmt"
	"os"
	"syscall"
	"testing"
)

// cpuNanos is the process's user+system CPU time.
func cpuNanos(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// catchUpLedger is a bookie holding one ledger of n entries, written,
// checkpointed and reopened, shared by the runs of one sub-benchmark.
type catchUpLedger struct {
	bk   *Bookie
	n    int64
	next int64 // next entry to read
}

// BenchmarkCatchUpRead measures a catch-up read: one ledger's entries,
// written earlier and checkpointed, the bookie reopened (empty caches), then
// read in order with ReadEntry as a subscription catching up does,
// wrapping around at the end. The ledger holds well over four times the
// read cache (default options, 32 MiB), so every pass reads from the entry
// logs (the files sit in the OS page cache). cpu-ns/op is the process's CPU
// time per entry read, all threads. The entries are written without
// journal fsync (setup, not measured), once per size for all the runs.
func BenchmarkCatchUpRead(b *testing.B) {
	ledgers := map[int]*catchUpLedger{}
	b.Cleanup(func() {
		for _, l := range ledgers {
			l.bk.Close()
		}
	})
	dir, err := os.MkdirTemp("", "bookie-catchup-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	for _, size := range []int{100, 16 << 10, 400 << 10} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			l := ledgers[size]
			if l == nil {
				l = writeCatchUpLedger(b, fmt.Sprintf("%s/%d", dir, size), size, int64(max(400_000, (160<<20)/size)))
				ledgers[size] = l
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			c0 := cpuNanos(b)
			b.ResetTimer()
			for range b.N {
				v, err := l.bk.ReadEntry(1, l.next)
				if err != nil || len(v) != size {
					b.Fatalf("ReadEntry(1, %d) = %d bytes, %v", l.next, len(v), err)
				}
				if l.next++; l.next == l.n {
					l.next = 0
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuNanos(b)-c0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func writeCatchUpLedger(b *testing.B, dir string, size int, n int64) *catchUpLedger {
	n = min(n, (160<<20)/int64(size)+1)
	if size <= 100 {
		n = 400_000
	}
	opts := Options{JournalDir: dir + "/j", LedgerDirs: []string{dir + "/l"}, JournalNoSync: true,
		DiskCheckInterval: -1, GCInterval: -1}
	bk, err := Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, size)
	sem := make(chan struct{}, 256)
	for e := int64(0); e < n; e++ {
		sem <- struct{}{}
		bk.AddEntry(1, e, mk, payload, false, func(err error) {
			if err != nil {
				panic(err)
			}
			<-sem
		})
	}
	for range cap(sem) {
		sem <- struct{}{}
	}
	if err := bk.Close(); err != nil {
		b.Fatal(err)
	}
	if bk, err = Open(opts); err != nil {
		b.Fatal(err)
	}
	return &catchUpLedger{bk: bk, n: n}
}
