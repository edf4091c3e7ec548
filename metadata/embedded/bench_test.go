package embedded

import (
	"path/filepath"
	"testing"

	"github.com/magnetar-mq/magnetar/metadata/metadatatest"
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
func BenchmarkPut(b *testing.B) { metadatatest.BenchPut(b, benchStore(b)) }

// BenchmarkPutParallel: 16 goroutines per CPU updating distinct records;
// the writer goroutine commits them in groups.
func BenchmarkPutParallel(b *testing.B) { metadatatest.BenchPutParallel(b, benchStore(b)) }

// BenchmarkGet reads one 100-byte record.
func BenchmarkGet(b *testing.B) { metadatatest.BenchGet(b, benchStore(b)) }
