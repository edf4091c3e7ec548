package index

import (
	"fmt"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

func benchIndex(b *testing.B, mode string) *Index {
	var o Options
	switch mode {
	case "mmap":
		o = Options{FS: vfs.NewOS(), Dir: b.TempDir()}
	case "heap":
		o = Options{FS: vfs.NewMem(), Dir: "/ix", PagesPerSegment: 1024}
	}
	ix, err := Open(o)
	if err != nil {
		b.Fatal(err)
	}
	return ix
}

// BenchmarkSet sets sequential entries spread over 1000 ledgers (8 bytes
// of location per op).
func BenchmarkSet(b *testing.B) {
	for _, mode := range []string{"mmap", "heap"} {
		b.Run(fmt.Sprintf("mode=%s", mode), func(b *testing.B) {
			ix := benchIndex(b, mode)
			defer ix.Close()
			b.SetBytes(8)
			b.ReportAllocs()
			for i := int64(0); b.Loop(); i++ {
				if err := ix.Set(i%1000, i/1000, uint64(i)+1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGet reads entries of 1000 ledgers, 100 entries each.
func BenchmarkGet(b *testing.B) {
	for _, mode := range []string{"mmap", "heap"} {
		b.Run(fmt.Sprintf("mode=%s", mode), func(b *testing.B) {
			ix := benchIndex(b, mode)
			defer ix.Close()
			const n = 100_000
			for i := int64(0); i < n; i++ {
				if err := ix.Set(i%1000, i/1000, uint64(i)+1); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(8)
			b.ReportAllocs()
			for i := int64(0); b.Loop(); i++ {
				j := (i * 7919) % n
				if _, ok := ix.Get(j%1000, j/1000); !ok {
					b.Fatal("missing")
				}
			}
		})
	}
}

// BenchmarkFlush measures a checkpoint after 10k Sets over 1000 ledgers.
func BenchmarkFlush(b *testing.B) {
	ix := benchIndex(b, "mmap")
	defer ix.Close()
	b.ReportAllocs()
	for i := int64(0); b.Loop(); i++ {
		for j := range int64(10_000) {
			if err := ix.Set(j%1000, i*10+j/1000, uint64(j)+1); err != nil {
				b.Fatal(err)
			}
		}
		if err := ix.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}
