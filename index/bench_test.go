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

// BenchmarkFlushNewLedger: an index holding 100,000 ledgers (one page
// each) on the OS file system gets one new ledger per op and flushes, as a
// bookie's checkpoint does while topics are created. "snapshot" forces a
// whole metadata snapshot per Flush (MetaLogLimit 1: the format before the
// log); "log" appends the changed ledger. B/op of metadata written is
// reported as meta-bytes/op.
func BenchmarkFlushNewLedger(b *testing.B) {
	const ledgers = 100_000
	for _, mode := range []string{"snapshot", "log"} {
		b.Run(mode, func(b *testing.B) {
			o := Options{FS: vfs.NewOS(), Dir: b.TempDir()}
			if mode == "snapshot" {
				o.MetaLogLimit = 1
			}
			ix, err := Open(o)
			if err != nil {
				b.Fatal(err)
			}
			defer ix.Close()
			for l := range int64(ledgers) {
				if err := ix.Set(l, 0, uint64(l)+1); err != nil {
					b.Fatal(err)
				}
			}
			if err := ix.Flush(); err != nil {
				b.Fatal(err)
			}
			next := int64(ledgers)
			var written int64
			for b.Loop() {
				if err := ix.Set(next, 0, uint64(next)+1); err != nil {
					b.Fatal(err)
				}
				next++
				gen, off := ix.gen, ix.logOff
				if err := ix.Flush(); err != nil {
					b.Fatal(err)
				}
				if ix.gen != gen {
					written += ix.snapSize + ix.logOff
				} else {
					written += ix.logOff - off
				}
			}
			b.ReportMetric(float64(written)/float64(b.N), "meta-bytes/op")
		})
	}
}
