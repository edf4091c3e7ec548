package journal

import (
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/uring"
	"github.com/magnetar-mq/magnetar/internal/vfs"
	"golang.org/x/sys/unix"
)

// benchCompletion counts completions without allocating per add.
type benchCompletion struct {
	done atomic.Int64
	errs atomic.Int64
}

func (c *benchCompletion) AppendDone(_ Position, err error) {
	if err != nil {
		c.errs.Add(1)
	}
	c.done.Add(1)
}

// BenchmarkAppend measures durable Append throughput on the OS file system
// (test temp dir, or a fresh directory under $JOURNAL_BENCH_DIR) with many concurrent appenders: b.N adds of size bytes,
// timed until every completion fired (Close waits for them). Each mode is
// one sub-benchmark; "nosync" is not durable and only for comparison.
func BenchmarkAppend(b *testing.B) {
	type mode struct {
		name   string
		mode   uring.Mode
		noSync bool
		wait   time.Duration
	}
	modes := []mode{
		{"pwrite", uring.ModePwrite, false, DefaultMaxGroupWait},
		{"pwrite-wait0", uring.ModePwrite, false, 0},
		{"nosync-pwrite", uring.ModePwrite, true, 0},
	}
	if uring.Available() {
		modes = append(modes,
			mode{"uring", uring.ModeUring, false, DefaultMaxGroupWait},
			mode{"uring-wait0", uring.ModeUring, false, 0})
	}
	for _, m := range modes {
		for _, size := range []int{100, 1 << 10, 16 << 10, 64 << 10} {
			b.Run(fmt.Sprintf("%s/size=%d", m.name, size), func(b *testing.B) {
				j := openBenchJournal(b, func(o *Options) {
					o.WriterMode = m.mode
					o.NoSync = m.noSync
					o.MaxGroupWait = m.wait
				})
				payload := benchPayload(size)
				runBenchAppends(b, j, size, 16, func(id int64, comp *benchCompletion) {
					j.Append(Record{Type: Entry, LedgerID: 1, EntryID: id, Payload: payload}, comp)
				})
				el := b.Elapsed().Seconds()
				b.ReportMetric(float64(b.N)/el, "entries/s")
				if g := j.c.groups.Load(); g > 0 {
					b.ReportMetric(float64(b.N)/float64(g), "entries/group")
				}
			})
		}
	}
}

// openBenchJournal opens a journal on the OS file system, in the test's
// temp dir or a fresh directory under $JOURNAL_BENCH_DIR (e.g. /dev/shm:
// fdatasync is free, which isolates CPU), with set applied to its options.
func openBenchJournal(b *testing.B, set func(o *Options)) *Journal {
	b.Helper()
	dir := b.TempDir()
	if base := os.Getenv("JOURNAL_BENCH_DIR"); base != "" {
		var err error
		if dir, err = os.MkdirTemp(base, "journal-bench-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
	}
	o := DefaultOptions(dir)
	o.FS = vfs.NewOS()
	set(&o)
	j, err := Open(o)
	if err != nil {
		b.Fatal(err)
	}
	return j
}

// benchPayload is size bytes counting up from 0.
func benchPayload(size int) []byte {
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(i)
	}
	return payload
}

// runBenchAppends times b.N records of size bytes appended to j by add
// (given each record's entry id) from parallelism goroutines per CPU,
// until every completion fired (Close waits for them), reports the
// process's CPU time per record as cpu-ns/op and checks that every
// append completed without error.
func runBenchAppends(b *testing.B, j *Journal, size, parallelism int, add func(id int64, comp *benchCompletion)) {
	var comp benchCompletion
	var next atomic.Int64
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.SetParallelism(parallelism)
	b.ResetTimer()
	cpu0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			add(next.Add(1), &comp)
		}
	})
	if err := j.Close(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	if comp.done.Load() != int64(b.N) || comp.errs.Load() != 0 {
		b.Fatalf("%d completions, %d errors, want %d, 0", comp.done.Load(), comp.errs.Load(), b.N)
	}
}

// BenchmarkAppendEncode measures the in-memory append path alone (encode
// under the lock, group hand-off, completion) with a commitEnv that does
// no I/O: the CPU cost per record the journal adds on top of the disk.
func BenchmarkAppendEncode(b *testing.B) {
	for _, size := range []int{100, 1 << 10} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			env := commitEnv{
				write: func(g *group) error { return nil },
				wait:  func() error { return nil },
			}
			c := newCommitter(env, committerOptions{maxBytes: DefaultMaxGroupBytes, maxQueued: DefaultMaxQueuedBytes}, 1, Position{})
			payload := make([]byte, size)
			var comp benchCompletion
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.SetParallelism(16)
			b.ResetTimer()
			cpu0 := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				rec := Record{Type: Entry, LedgerID: 1, Payload: payload}
				for pb.Next() {
					c.append(&rec, &comp)
				}
			})
			if err := c.close(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}

// BenchmarkRecordCodec measures encoding and decoding one record.
func BenchmarkRecordCodec(b *testing.B) {
	for _, size := range []int{100, 1 << 10, 64 << 10} {
		rec := Record{Type: Entry, LedgerID: 1, EntryID: 2, Payload: make([]byte, size)}
		b.Run(fmt.Sprintf("encode/size=%d", size), func(b *testing.B) {
			buf := make([]byte, 0, RecordHeaderSize+size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendRecord(buf[:0], 1, 0, rec)
			}
		})
		b.Run(fmt.Sprintf("decode/size=%d", size), func(b *testing.B) {
			buf := AppendRecord(nil, 1, 0, rec)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, _, err := DecodeRecord(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// cpuTime returns the process's user+system CPU time (all threads).
func cpuTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAppendLatency appends one 100-byte record at a time and waits
// for its completion: ns/op is the unloaded add latency (MaxGroupWait plus
// one write+fdatasync), p50/p99 its percentiles. The fill variants run
// with no group wait, plain, zero-filled ahead (ZeroFill), with DirectIO,
// and both.
func BenchmarkAppendLatency(b *testing.B) {
	type variant struct {
		name string
		mod  func(*Options)
	}
	variants := []variant{
		{"wait=0s", func(o *Options) { o.MaxGroupWait = 0 }},
		{"wait=1ms", func(o *Options) { o.MaxGroupWait = DefaultMaxGroupWait }},
		{"wait=0s/zerofill", func(o *Options) { o.MaxGroupWait, o.ZeroFill = 0, true }},
		{"wait=0s/direct", func(o *Options) { o.MaxGroupWait, o.DirectIO = 0, true }},
		{"wait=0s/direct+zerofill", func(o *Options) { o.MaxGroupWait, o.DirectIO, o.ZeroFill = 0, true, true }},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			o := DefaultOptions(b.TempDir())
			v.mod(&o)
			j, err := Open(o)
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			done := make(chan error, 1)
			comp := CompletionFunc(func(_ Position, err error) { done <- err })
			rec := Record{Type: Entry, LedgerID: 1, Payload: make([]byte, 100)}
			var lat []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				j.Append(rec, comp)
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
		})
	}
}
