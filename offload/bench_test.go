package offload

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkOffloadThroughput compares, on the same server in the same
// run, offloading a 64 MiB ledger (4 KiB entries, 8 MiB blocks: reading
// the source, building blocks, multipart upload, index, verification)
// with one raw PUT of the same number of bytes. MB/s is b.SetBytes'.
//
//	go test -run '^$' -bench OffloadThroughput -benchtime 5x -count 3 ./offload/
func BenchmarkOffloadThroughput(b *testing.B) {
	const entries, size = 16384, 4096
	src := randomSource(1, entries, 0, 9)
	for i := range src.entries {
		src.entries[i] = make([]byte, size)
		for j := range src.entries[i] {
			src.entries[i][j] = byte(i*31 + j)
		}
	}
	total := src.Length()
	raw := make([]byte, total)
	f := startFakeS3(b, "bench")
	s3c := s3Config(f, "bench")
	s3c.MaxBlockSize = 8 << 20
	so, err := New(s3c, nil)
	if err != nil {
		b.Fatal(err)
	}
	do, err := New(Config{Driver: DriverFilesystem, Directory: filepath.Join(b.TempDir(), "t"), MaxBlockSize: 8 << 20}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, be := range []struct {
		name string
		o    *Offloader
	}{{"s3", so}, {"dir", do}} {
		b.Run(be.name+"/offload", func(b *testing.B) {
			b.SetBytes(total)
			for b.Loop() {
				uid := NewUID()
				if err := be.o.Offload(ctx, src, uid, "bench"); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := be.o.Delete(ctx, 1, uid, nil); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
		b.Run(be.name+"/raw-put", func(b *testing.B) {
			b.SetBytes(total)
			i := 0
			for b.Loop() {
				key := fmt.Sprintf("raw-%d", i)
				i++
				if err := be.o.PutRaw(ctx, key, raw); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := be.o.RemoveRaw(ctx, key); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
