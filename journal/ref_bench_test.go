package journal

import (
	"fmt"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/uring"
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
					j := openBenchJournal(b, func(o *Options) {
						o.WriterMode = mode
						o.NoSync = !sync
					})
					payload := benchPayload(size)
					pcrc := payloadCRC(payload)
					runBenchAppends(b, j, size, 4, func(id int64, comp *benchCompletion) {
						rec := Record{Type: Entry, LedgerID: 1, EntryID: id, Payload: payload}
						if ref {
							j.AppendRef(rec, pcrc, comp)
						} else {
							j.AppendWithCRC(rec, pcrc, comp)
						}
					})
				})
			}
		}
	}
}
