package entrylog

import (
	"fmt"
	"testing"
)

// BenchmarkAddRecord is what a checkpoint does per entry since the write
// cache holds entry-log records: small records get their checksum
// (SetRecordCRC) and are copied into the append buffer; records of
// DirectWriteMin bytes or more are written from the caller's memory (OS
// file system, page cache; 1 GiB logs, no Sync; cpu-ns/op and user-ns/op
// as in BenchmarkAddLarge). Compare with BenchmarkAdd and
// BenchmarkAddLarge, the Add of the payload that checkpoints did before.
func BenchmarkAddRecord(b *testing.B) {
	for _, size := range []int{100, 1024, 16 << 10, 64 << 10, 400 << 10} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			l := openBenchLog(b)
			defer l.Close()
			rec := make([]byte, RecordHeaderSize+size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			c0, u0 := cpuNanos(b)
			defer reportCPU(b, c0, u0)
			for i := 0; b.Loop(); i++ {
				if size < FoldMin {
					PutRecordFields(rec, int64(i%64), int64(i), size)
					SetRecordCRC(rec)
				} else {
					PutRecordHeader(rec, int64(i%64), int64(i), size, 0) // checksum not checked here
				}
				if _, err := l.AddRecord(rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadRun reads runs of consecutive records with ReadRun into a
// reused buffer of 4 MiB (or one record when it is larger), the read a
// bookie's read-cache miss does; ns/op and MB/s are per record.
func BenchmarkReadRun(b *testing.B) {
	for _, size := range []int{100, 16 << 10, 400 << 10} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			l := openBenchLog(b)
			defer l.Close()
			p := make([]byte, size)
			n := min((128<<20)/size, 200_000)
			locs := fillBenchLog(b, l, n, p)
			buf := make([]byte, 0, max(4<<20, RecordHeaderSize+size))
			b.SetBytes(int64(size))
			b.ReportAllocs()
			next := 0
			var err error
			for i := 0; i < b.N; {
				first := next
				got := 0
				buf, err = l.ReadRun(buf[:0], locs[first], 1, int64(first), func(r RunRecord) bool {
					if i+got >= b.N || first+got >= n {
						return false
					}
					got++
					return true
				})
				if err != nil || got == 0 {
					b.Fatalf("ReadRun at %d: %d records, %v", first, got, err)
				}
				i += got
				if next = first + got; next >= n {
					next = 0
				}
			}
		})
	}
}
