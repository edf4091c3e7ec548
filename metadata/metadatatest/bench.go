package metadatatest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/magnetar-mq/magnetar/metadata"
)

// BenchPut measures one writer updating 64 cursor-like 100-byte records
// in turn, one synchronous Put at a time.
func BenchPut(b *testing.B, s metadata.Store) {
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

// BenchPutParallel measures 16 goroutines per CPU, each updating its own
// record, on one store.
func BenchPutParallel(b *testing.B, s metadata.Store) {
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

// BenchGet measures reads of one 100-byte record.
func BenchGet(b *testing.B, s metadata.Store) {
	ctx := context.Background()
	val := make([]byte, 100)
	if _, err := s.Put(ctx, "/cursors/c0", val, metadata.AnyVersion); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(val)))
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := s.Get(ctx, "/cursors/c0"); err != nil {
			b.Fatal(err)
		}
	}
}
