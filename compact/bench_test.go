package compact

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// BenchmarkCompaction measures the compactor alone (in-memory ledgers, so
// no bookie I/O): 200,000 batched 100-byte messages over 1,000 keys, with
// uncompressed batches and with LZ4 and ZSTD batches (the compactor opens
// and recompresses them). MB/s is of the topic's stored bytes.
//
//	go test ./broker -run '^$' -bench Compaction -benchtime 3x
func BenchmarkCompaction(b *testing.B) {
	for _, c := range []struct {
		name string
		ct   pulsar.CompressionType
	}{{"none", pulsar.NoCompression}, {"lz4", pulsar.LZ4}, {"zstd", pulsar.ZSTD}} {
		b.Run(c.name, func(b *testing.B) { benchCompaction(b, c.ct) })
	}
}

func benchCompaction(b *testing.B, ct pulsar.CompressionType) {
	tb := startBroker(b, Config{})
	cl := tb.client(b)
	for i := 0; i < b.N; i++ {
		topic := newTopicName("benchcompact")
		p := mustProducer(b, cl, pulsar.ProducerOptions{Topic: topic, MaxPendingMessages: 10000, CompressionType: ct})
		pl := make([]byte, 100)
		for j := range pl {
			pl[j] = byte('a' + j%7) // compressible, as text payloads are
		}
		for j := 0; j < 200_000; j++ {
			p.SendAsync(context.Background(), &pulsar.ProducerMessage{Key: fmt.Sprintf("k%d", j%1000), Payload: pl}, nil)
		}
		if err := p.FlushWithCtx(context.Background()); err != nil {
			b.Fatal(err)
		}
		p.Close()
		_, size := tb.Ledger(b, topic).Size()
		start := time.Now()
		if err := tb.Compact(context.Background(), topic); err != nil {
			b.Fatal(err)
		}
		for {
			st, e, _ := tb.CompactionStatus(context.Background(), topic)
			if st == Success {
				break
			}
			if st == Error {
				b.Fatal(e)
			}
			time.Sleep(time.Millisecond)
		}
		el := time.Since(start)
		b.Logf("%d bytes (%d messages) in %v", size, 200_000, el)
		b.ReportMetric(float64(size)/1e6/el.Seconds(), "MB/s")
		b.ReportMetric(200_000/el.Seconds(), "msgs/s")
	}
}
