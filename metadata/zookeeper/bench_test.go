package zookeeper

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/metadata"
)

func benchStore(b *testing.B) *Store {
	s, err := Open("zk://"+sharedServer(b).Addr()+uniqueRoot(b), Options{SessionTimeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkPut: one synchronous writer (one round trip and one server
// commit per Put; the test server runs with forceSync=no).
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

// BenchmarkPutParallel: 16 goroutines per CPU on one session (pipelined
// requests on one connection).
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
