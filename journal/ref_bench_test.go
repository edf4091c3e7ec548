package journal

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/uring"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// BenchmarkAppendRef compares Append (payload copied into the group) with
// AppendRef (payload written from the caller's memory) for large records,
// on the OS file system through io_uring (pwrite where io_uring is not
// available), in the test temp dir or under $JOURNAL_BENCH_DIR
// (/dev/shm isolates the CPU path). sync=false is NOT durable (no
// fdatasync): it shows the CPU difference without the disk. cpu-ns/op is
// the process's CPU time per record, all threads (the kernel's io_uring
// workers, which copy the data into the page cache, included).
func BenchmarkAppendRef(b *testing.B) {
	mode := uring.ModePwrite
	if uring.Available() {
		mode = uring.ModeUring
	}
	for _, sync := range []bool{true, false} {
		for _, size := range []int{64 << 10, 400 << 10} {
			for _, ref := range []bool{false, true} {
				name := map[bool]string{false: "copy", true: "ref"}[ref]
				b.Run(fmt.Sprintf("sync=%v/size=%d/%s", sync, size, name), func(b *testing.B) {
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
					o.WriterMode = mode
					o.NoSync = !sync
					j, err := Open(o)
					if err != nil {
						b.Fatal(err)
					}
					payload := make([]byte, size)
					for i := range payload {
						payload[i] = byte(i)
					}
					pcrc := payloadCRC(payload)
					var comp benchCompletion
					var next atomic.Int64
					b.SetBytes(int64(size))
					b.ReportAllocs()
					b.SetParallelism(4)
					b.ResetTimer()
					cpu0 := cpuTime()
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							rec := Record{Type: Entry, LedgerID: 1, EntryID: next.Add(1), Payload: payload}
							if ref {
								j.AppendRef(rec, pcrc, &comp)
							} else {
								j.AppendWithCRC(rec, pcrc, &comp)
							}
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
				})
			}
		}
	}
}
