package zookeeper

import (
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/metadata/metadatatest"
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
func BenchmarkPut(b *testing.B) { metadatatest.BenchPut(b, benchStore(b)) }

// BenchmarkPutParallel: 16 goroutines per CPU on one session (pipelined
// requests on one connection).
func BenchmarkPutParallel(b *testing.B) { metadatatest.BenchPutParallel(b, benchStore(b)) }

// BenchmarkGet reads one 100-byte record.
func BenchmarkGet(b *testing.B) { metadatatest.BenchGet(b, benchStore(b)) }
