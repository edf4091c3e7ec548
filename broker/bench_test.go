package broker

import (
	"bufio"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
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

// BenchmarkRawPublishDispatch drives the broker with pre-encoded frames
// (no client library): one producer pipelines SENDs of 100-message
// batches of 200-byte messages, one exclusive consumer with unlimited
// permits drains MESSAGE frames. It measures the broker (and in-memory
// store) alone. Run with
//
//	go test -run '^$' -bench RawPublishDispatch -benchtime 2000x ./broker
func BenchmarkRawPublishDispatch(b *testing.B) {
	tb := startBroker(b, nil)
	topic := newTopicName("rawbench")
	cons := dialRaw(b, tb, true)
	cons.send(&pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{
		Topic: ptr(topic), Subscription: ptr("s"), SubType: pb.CommandSubscribe_Exclusive.Enum(),
		ConsumerId: ptr(uint64(1)), RequestId: ptr(uint64(1)),
	}})
	if f := cons.next(); f.Type != pb.BaseCommand_SUCCESS {
		b.Fatalf("SUBSCRIBE answered %s", f.Type)
	}
	cons.send(&pb.BaseCommand{Type: pb.BaseCommand_FLOW.Enum(), Flow: &pb.CommandFlow{ConsumerId: ptr(uint64(1)), MessagePermits: ptr(uint32(1 << 31))}})
	prod := dialRaw(b, tb, true)
	pid := prod.producer(topic)

	const batch = 100
	var body []byte
	for i := 0; i < batch; i++ {
		body = pulsarproto.AppendSingleMessage(body, mustMarshal(b, &pb.SingleMessageMetadata{PayloadSize: ptr(int32(200))}), make([]byte, 200))
	}
	md := mustMarshal(b, &pb.MessageMetadata{ProducerName: ptr("bench"), SequenceId: ptr(uint64(0)),
		PublishTime: ptr(uint64(time.Now().UnixMilli())), NumMessagesInBatch: ptr(int32(batch))})
	entry := pulsarproto.AppendEntry(nil, md, body)
	frames := make([][]byte, b.N)
	for i := range frames {
		frames[i] = pulsarproto.AppendSend(nil, &pulsarproto.SendHeader{ProducerID: pid, SequenceID: uint64(i * batch), NumMessages: batch}, entry)
	}
	// No read deadlines from the setup helpers during the measurement.
	cons.nc.SetReadDeadline(time.Time{})
	prod.nc.SetReadDeadline(time.Time{})
	b.SetBytes(int64(len(entry)))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	done := make(chan error, 2)
	go func() {
		w := bufio.NewWriterSize(prod.nc, 256<<10)
		for _, f := range frames {
			if _, err := w.Write(f); err != nil {
				done <- err
				return
			}
		}
		done <- w.Flush()
	}()
	go func() {
		for i := 0; i < b.N; {
			f, err := prod.fr.Next()
			if err != nil {
				done <- err
				return
			}
			if f.Type == pb.BaseCommand_SEND_RECEIPT {
				i++
			}
		}
		done <- nil
	}()
	for i := 0; i < b.N; {
		f, err := cons.fr.Next()
		if err != nil {
			b.Fatal(err)
		}
		if f.Type == pb.BaseCommand_MESSAGE {
			i++
		}
	}
	for i := 0; i < 2; i++ {
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	el := time.Since(start).Seconds()
	b.ReportMetric(float64(b.N*batch)/el, "msgs/s")
}

func mustMarshal(b testing.TB, m proto.Message) []byte {
	out, err := proto.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	return out
}
