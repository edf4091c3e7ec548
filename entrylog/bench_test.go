package entrylog

import (
	"fmt"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

var benchSizes = []int{100, 1024, 16 << 10}

func benchOpen(b *testing.B, fs vfs.FS, dir string) *Log {
	l, err := Open(Options{FS: fs, Dirs: []string{dir}, LogSizeLimit: 256 << 20})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkAdd appends to a log on the OS file system (page cache; one
// Sync at the end is not timed).
func BenchmarkAdd(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			l := benchOpen(b, vfs.NewOS(), b.TempDir())
			defer l.Close()
			p := make([]byte, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := l.Add(int64(i%64), int64(i), p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRead reads flushed entries in random-ish order through
// AppendRead with a reused buffer (page cache).
func BenchmarkRead(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			l := benchOpen(b, vfs.NewOS(), b.TempDir())
			defer l.Close()
			p := make([]byte, size)
			const n = 4096
			locs := make([]uint64, n)
			for i := range locs {
				loc, err := l.Add(1, int64(i), p)
				if err != nil {
					b.Fatal(err)
				}
				locs[i] = loc
			}
			if err := l.Flush(); err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 0, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				j := (i * 2654435761) % n
				var err error
				if buf, err = l.AppendRead(buf[:0], locs[j], 1, int64(j)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAddSync adds batches of 1 KiB entries and syncs after each batch,
// as a checkpoint would (preallocated file, fdatasync).
func BenchmarkAddSync(b *testing.B) {
	for _, batch := range []int{1, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			l := benchOpen(b, vfs.NewOS(), b.TempDir())
			defer l.Close()
			p := make([]byte, 1024)
			b.SetBytes(int64(batch * len(p)))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				for j := range batch {
					if _, err := l.Add(1, int64(i*batch+j), p); err != nil {
						b.Fatal(err)
					}
				}
				if err := l.Sync(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
