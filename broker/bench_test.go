package broker

import (
	"bufio"
	"context"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/bookie"
	"github.com/magnetar-mq/magnetar/bookie/server"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata/memmeta"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// BenchmarkE2EProduceConsume measures the broker over the in-memory ledger
// store with the real client: 200-byte messages, default batching, one
// producer and one tailing consumer. Run with
//
//	go test -run '^$' -bench E2EProduceConsume -benchtime 200000x ./broker
func BenchmarkE2EProduceConsume(b *testing.B) { e2eProduceConsume(b, 128<<10) }

// BenchmarkE2EProduceConsumeBatch1000 is E2EProduceConsume with batches
// of 1000 messages (~217 KB SEND frames) instead of 128 KiB.
func BenchmarkE2EProduceConsumeBatch1000(b *testing.B) { e2eProduceConsume(b, 256<<10) }

func e2eProduceConsume(b *testing.B, maxBatchBytes uint) {
	tb := startBroker(b, nil)
	cl := tb.client(b)
	topic := newTopicName("bench")
	cons := mustConsumer(b, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", ReceiverQueueSize: 10000})
	prod := mustProducer(b, cl, pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 1000, BatchingMaxSize: maxBatchBytes,
		BatchingMaxPublishDelay: 5 * time.Millisecond, MaxPendingMessages: 20000})
	payload := make([]byte, 200)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU()
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
	if err := prod.FlushWithCtx(context.Background()); err != nil {
		b.Fatal(err)
	}
	produced := time.Since(start)
	wg.Wait()
	b.ReportMetric(float64(b.N)/produced.Seconds(), "produced-msgs/s")
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "consumed-msgs/s")
	cpu.report(b)
}

// BenchmarkRawPublishDispatch drives the broker with pre-encoded frames
// (no client library): one producer pipelines SENDs of 100-message
// batches of 200-byte messages, one exclusive consumer with unlimited
// permits drains MESSAGE frames. It measures the broker (and in-memory
// store) alone. Run with
//
//	go test -run '^$' -bench RawPublishDispatch -benchtime 2000x ./broker
func BenchmarkRawPublishDispatch(b *testing.B) {
	rawPublishDispatch(b, startBroker(b, nil), 100)
}

// BenchmarkRawPublishDispatchBatch1000 is RawPublishDispatch with
// 1000-message batches: ~217 KB SEND frames, above the frame reader's
// OwnedFrameThreshold.
func BenchmarkRawPublishDispatchBatch1000(b *testing.B) {
	rawPublishDispatch(b, startBroker(b, nil), 1000)
}

// BenchmarkRawPublishDispatchBookieBatch1000 is RawPublishDispatchBatch1000
// over the whole storage stack instead of the in-memory store: managed
// ledger, ledger client, in-process bookie (journal and entry logs in a
// temporary directory, journal without fdatasync: not durable, so that
// the figure is CPU rather than the disk's flush latency).
func BenchmarkRawPublishDispatchBookieBatch1000(b *testing.B) {
	rawPublishDispatch(b, startBookieBroker(b), 1000)
}

// bookieLedgers is the managed ledger's LedgerStore over a ledger client.
type bookieLedgers struct{ c *ledger.Client }

func (s bookieLedgers) Create(ctx context.Context) (mledger.WriteLedger, error) {
	return s.c.Create(ctx, ledger.CreateOptions{Ensemble: 1, WriteQuorum: 1, AckQuorum: 1})
}

func (s bookieLedgers) Open(ctx context.Context, id int64) (mledger.ReadLedger, error) {
	return s.c.Open(ctx, id)
}

func (s bookieLedgers) Delete(ctx context.Context, id int64) error { return s.c.Delete(ctx, id) }

// startBookieBroker starts a broker whose topics are stored on one
// in-process bookie (no fdatasync) through the ledger client.
func startBookieBroker(b *testing.B) *testBroker {
	b.Helper()
	dir := b.TempDir()
	bk, err := bookie.Open(bookie.Options{JournalDir: dir + "/journal", LedgerDirs: []string{dir + "/ledgers"},
		JournalNoSync: true, DiskCheckInterval: -1, GCInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bk.Close() })
	meta := memmeta.New()
	lc, err := ledger.NewClient(meta, ledger.NewStaticResolver(map[string]ledger.BookieClient{"bk": server.NewLocal(bk)}), ledger.Options{Bookies: []string{"bk"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { lc.Close() })
	f, err := mledger.NewFactory(mledger.Options{Ledgers: bookieLedgers{lc}, Metadata: meta})
	if err != nil {
		b.Fatal(err)
	}
	br, err := New(brokerconf.Config{ServiceAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", AdvertisedHost: "127.0.0.1", MaxMessageSize: 1 << 20,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))},
		Deps{Metadata: meta, OpenLedger: storage.Opener(f, mledger.Config{})})
	if err != nil {
		b.Fatal(err)
	}
	if err := br.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { br.Close(); f.Close() })
	return &testBroker{Broker: br, meta: meta, factory: f, url: "pulsar://" + br.ServiceAddr()}
}

func rawPublishDispatch(b *testing.B, tb *testBroker, batch int) {
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

	var body []byte
	for i := 0; i < batch; i++ {
		body = pulsarproto.AppendSingleMessage(body, mustMarshal(b, &pb.SingleMessageMetadata{PayloadSize: ptr(int32(200))}), make([]byte, 200))
	}
	md := mustMarshal(b, &pb.MessageMetadata{ProducerName: ptr("bench"), SequenceId: ptr(uint64(0)),
		PublishTime: ptr(uint64(time.Now().UnixMilli())), NumMessagesInBatch: ptr(int32(batch))})
	entry := pulsarproto.AppendEntry(nil, md, body)
	// A cycle of distinct frames (sequence ids repeat after it: there is
	// no deduplication, and receipts are only counted).
	frames := make([][]byte, min(b.N, 64))
	for i := range frames {
		frames[i] = pulsarproto.AppendSend(nil, &pulsarproto.SendHeader{ProducerID: pid, SequenceID: uint64(i * batch), NumMessages: int32(batch)}, entry)
	}
	// No read deadlines from the setup helpers during the measurement.
	cons.nc.SetReadDeadline(time.Time{})
	prod.nc.SetReadDeadline(time.Time{})
	b.SetBytes(int64(len(entry)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU()
	start := time.Now()
	done := make(chan error, 2)
	go func() {
		w := bufio.NewWriterSize(prod.nc, 256<<10)
		for i := 0; i < b.N; i++ {
			if _, err := w.Write(frames[i%len(frames)]); err != nil {
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
	cpu.report(b)
}

// cpuMeter measures the process's CPU time (user+system, every goroutine:
// broker and benchmark clients) over a benchmark, reported as cpu-ns/op:
// on a shared machine a steadier figure than elapsed time.
type cpuMeter struct{ start time.Duration }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuMeter { return cpuMeter{cpuTime()} }

func (m cpuMeter) report(b *testing.B) {
	b.ReportMetric(float64(cpuTime()-m.start)/float64(b.N), "cpu-ns/op")
}

func mustMarshal(b testing.TB, m proto.Message) []byte {
	out, err := proto.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	return out
}
