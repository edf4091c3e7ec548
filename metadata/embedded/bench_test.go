package embedded

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/magnetar-mq/magnetar/metadata"
)

func benchStore(b *testing.B) *Store {
	s, err := Open(filepath.Join(b.TempDir(), "meta.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkPut: one writer updating cursor-like records; every Put is a
// durable commit (two fsyncs in bbolt).
func BenchmarkPut(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	val := make([]byte, 100)
	b.ReportAllocs()
	b.SetBytes(int64(len(val)))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := s.Put(ctx, fmt.Sprintf("/cursors/c%d", i%64), val, metadata.AnyVersion); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPutParallel: 16 goroutines per CPU updating distinct records;
// the writer goroutine commits them in groups.
func BenchmarkPutParallel(b *testing.B) {
	s := benchStore(b)
	val := make([]byte, 100)
	var n atomic.Int64
	b.ReportAllocs()
	b.SetBytes(int64(len(val)))
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		key := fmt.Sprintf("/cursors/c%d", n.Add(1))
		for pb.Next() {
			if _, err := s.Put(ctx, key, val, metadata.AnyVersion); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkGet(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	val := make([]byte, 100)
	for i := range 64 {
		if _, err := s.Put(ctx, fmt.Sprintf("/cursors/c%d", i), val, metadata.AnyVersion); err != nil {
			b.Fatal(err)
		}
	}
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprintf("/cursors/c%d", i)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(val)))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, _, err := s.Get(ctx, keys[i%64]); err != nil {
			b.Fatal(err)
		}
	}
}
