package broker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// BenchmarkE2EProduceConsume measures the broker over the in-memory ledger
// store with the real client: 200-byte messages, default batching, one
// producer and one tailing consumer. Run with
//
//	go test -run '^$' -bench E2EProduceConsume -benchtime 200000x ./broker
func BenchmarkE2EProduceConsume(b *testing.B) {
	tb := startBroker(b, nil)
	cl := tb.client(b)
	topic := newTopicName("bench")
	cons := mustConsumer(b, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", ReceiverQueueSize: 10000})
	prod := mustProducer(b, cl, pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 1000, BatchingMaxSize: 128 << 10,
		BatchingMaxPublishDelay: 5 * time.Millisecond, MaxPendingMessages: 20000})
	payload := make([]byte, 200)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ctx := context.Background()
		for i := 0; i < b.N; i++ {
			m, err := cons.Receive(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			cons.Ack(m)
		}
	}()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		prod.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	if err := prod.Flush(); err != nil {
		b.Fatal(err)
	}
	produced := time.Since(start)
	wg.Wait()
	b.ReportMetric(float64(b.N)/produced.Seconds(), "produced-msgs/s")
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "consumed-msgs/s")
}
