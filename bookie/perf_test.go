package bookie

import (
	"fmt"
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
