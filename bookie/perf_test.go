package bookie

import (
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
)

// BenchmarkAddEntry measures the add path on the OS file system with 256
// adds outstanding, durable and not (sync=false: NOT DURABLE).
func BenchmarkAddEntry(b *testing.B) {
	for _, size := range []int{100, 1024, 65536} {
		for _, sync := range []bool{true, false} {
			b.Run(fmt.Sprintf("size=%d/sync=%v", size, sync), func(b *testing.B) {
				dir := b.TempDir()
				bk, err := Open(Options{JournalDir: dir + "/j", LedgerDirs: []string{dir + "/l"}, JournalNoSync: !sync,
					DiskCheckInterval: -1, GCInterval: -1, WriteCacheSize: 256 << 20})
				if err != nil {
					b.Fatal(err)
				}
				defer bk.Close()
				payload := make([]byte, size)
				sem := make(chan struct{}, 256)
				done := func(err error) {
					if err != nil {
						panic(err)
					}
					<-sem
				}
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					sem <- struct{}{}
					bk.AddEntry(int64(i%4), int64(i/4), mk, payload, false, done)
				}
				for range cap(sem) {
					sem <- struct{}{}
				}
			})
		}
	}
}

// BenchmarkWriteCachePut measures one add into the write cache (the part
// of AddEntry that copies the payload), with periodic swap+release as a
// checkpoint would do.
func BenchmarkWriteCachePut(b *testing.B) {
	for _, size := range []int{100, 1024, 65536} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			c := newWriteCache(256 << 20)
			p := make([]byte, size)
			var buf []frozenEntry
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := c.putTest(int64(i&7), int64(i>>3), p, 0, nil); err != nil {
					b.Fatal(err)
				}
				if a, _ := c.size(); a >= c.halfSize {
					c.swap(nil)
					buf = c.frozenSorted(buf[:0])
					c.release()
				}
			}
		})
	}
}

// BenchmarkAddRuns measures the bookie server's add path: AddEntries runs
// of 64 adds to one of four ledgers (the server hands over the adds of one
// network read together), 16,384 adds outstanding, durable, on the OS
// file system with the default options and zero fill (as `magnetar
// bookie` runs). cpu-ns/op is the process's CPU per add (getrusage, all
// threads: the journal's committer, checkpoints to the entry log and
// index, the kernel's io_uring workers), the driver only counting
// completions. The bookie first adds two write caches' worth, so both
// halves have been filled and flushed: a fresh bookie's first-touch page
// faults are not the steady state. With STAGES=n one add in n is traced;
// WRITECACHE=bytes sets the write cache.
func BenchmarkAddRuns(b *testing.B) {
	for _, size := range []int{100, 1024} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			dir := b.TempDir()
			opts := Options{JournalDir: dir + "/j", LedgerDirs: []string{dir + "/l"}, JournalZeroFill: true,
				DiskCheckInterval: -1, GCInterval: -1}
			if n, err := strconv.Atoi(os.Getenv("STAGES")); err == nil {
				opts.StageSampling = n
			}
			if n, err := strconv.ParseInt(os.Getenv("WRITECACHE"), 10, 64); err == nil {
				opts.WriteCacheSize = n
			}
			bk, err := Open(opts)
			if err != nil {
				b.Fatal(err)
			}
			defer bk.Close()
			const run, outstanding, ledgers = 64, 16384, 4
			type unit struct {
				left atomic.Int32
				done func(error)
			}
			free := make(chan *unit, outstanding/run)
			for range outstanding / run {
				u := &unit{}
				u.done = func(err error) {
					if err != nil {
						panic(err)
					}
					if u.left.Add(-1) == 0 {
						free <- u
					}
				}
				free <- u
			}
			payload := make([]byte, size)
			adds := make([]Add, run)
			var next [ledgers]int64
			issue := func(i int) {
				u := <-free
				u.left.Store(run)
				l := i % ledgers
				for j := range adds {
					adds[j] = Add{Ledger: int64(l + 1), Entry: next[l], MasterKey: mk, Payload: payload, Done: u.done}
					next[l]++
				}
				bk.AddEntries(adds)
			}
			warm := int(2 * (64 << 20) / (size + 24) / run)
			for i := range warm {
				issue(i)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuNow()
			units := (b.N + run - 1) / run
			for i := range units {
				issue(warm + i)
			}
			for range outstanding / run {
				<-free
			}
			b.StopTimer()
			cpu := cpuNow() - cpu0
			b.ReportMetric(float64(cpu)/float64(units*run), "cpu-ns/op")
			b.ReportMetric(float64(units*run)/b.Elapsed().Seconds(), "adds/s")
		})
	}
}

// cpuNow is the process's user+system CPU time in nanoseconds.
func cpuNow() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
