package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// BenchmarkCatchUpRead: a subscription created at the earliest position
// reads a topic of 20,000 messages of 1 KiB (4 ledgers of 5,000 entries,
// no batching) from a freshly restarted `magnetar standalone`: from the
// bookie ("bookie"), or after offloading the closed ledgers to an
// S3-compatible server (gofakes3 in the test process) or a directory.
// Each iteration is a new subscription reading everything; msgs/s is
// reported.
//
//	go test -run '^$' -bench CatchUpRead -benchtime 3x -count 3 ./e2e/
func BenchmarkCatchUpRead(b *testing.B) {
	const n, size = 20000, 1024
	for _, mode := range []string{"bookie", "s3", "filesystem"} {
		b.Run(mode, func(b *testing.B) {
			flags := []string{"--max-entries-per-ledger", "5000", "--min-ledger-rollover-time=-1s"}
			switch mode {
			case "s3":
				flags = append(flags, startFakeS3(b).flags()...)
			case "filesystem":
				flags = append(flags, "--offload-driver", "filesystem", "--offload-fs-uri", filepath.Join(b.TempDir(), "tier"))
			}
			dir := b.TempDir()
			p := startStandalone(b, dir, flags...)
			c := p.client(b)
			const topic = "persistent://public/default/catchup"
			pr, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true, MaxPendingMessages: 2000})
			if err != nil {
				b.Fatal(err)
			}
			payload := make([]byte, size)
			errs := make(chan error, 1)
			for i := 0; i < n; i++ {
				pr.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
					if err != nil {
						select {
						case errs <- err:
						default:
						}
					}
				})
			}
			if err := pr.FlushWithCtx(context.Background()); err != nil {
				b.Fatal(err)
			}
			select {
			case err := <-errs:
				b.Fatal(err)
			default:
			}
			pr.Close()
			if mode != "bookie" {
				if s := offloadAll(b, p, topic); s.Status != utils.SUCCESS {
					b.Fatalf("offload: %+v", s)
				}
			}
			c.Close()
			p.stop()
			p = startStandalone(b, dir, flags...)
			defer p.stop()
			c = p.client(b)
			defer c.Close()
			st := statsOf(b, p, "catchup")
			offloaded := 0
			for _, l := range st.Ledgers {
				if l.Offloaded {
					offloaded++
				}
			}
			if (mode == "bookie") != (offloaded == 0) {
				b.Fatalf("%s: %d ledgers offloaded", mode, offloaded)
			}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: fmt.Sprintf("s-%d", i),
					SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, ReceiverQueueSize: 1000})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				for k := 0; k < n; k++ {
					m, err := cons.Receive(ctx)
					if err != nil {
						b.Fatalf("receive %d: %v", k, err)
					}
					cons.AckID(m.ID())
				}
				cancel()
				cons.Close()
			}
			el := time.Since(start)
			b.ReportMetric(float64(n*b.N)/el.Seconds(), "msgs/s")
		})
	}
}
