package e2e

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Geo-replication benchmarks (docs/benchmarks/geo-replication.md): two
// standalones sharing a ZooKeeper configuration store. Run with
//
//	go test ./e2e/ -run '^$' -bench BenchmarkGeoReplication -benchtime 1x -timeout 20m
const (
	geoBenchMsgs    = 200_000 // messages per throughput phase
	geoBenchSize    = 1024    // payload bytes
	geoBenchRate    = 2000    // msgs/s of the lag phase
	geoBenchLagTime = 20 * time.Second
)

// geoThroughput produces geoBenchMsgs messages with prod and returns
// the rate at which cons received them (first send to last receive).
func geoThroughput(b *testing.B, prod pulsar.Producer, cons pulsar.Consumer) float64 {
	b.Helper()
	payload := make([]byte, geoBenchSize)
	start := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range geoBenchMsgs {
			prod.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err != nil {
					b.Error(err)
				}
			})
		}
		prod.FlushWithCtx(context.Background())
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for i := range geoBenchMsgs {
		m, err := cons.Receive(ctx)
		if err != nil {
			b.Fatalf("received %d of %d: %v", i, geoBenchMsgs, err)
		}
		cons.AckID(m.ID())
	}
	d := time.Since(start)
	wg.Wait()
	return float64(geoBenchMsgs) / d.Seconds()
}

func BenchmarkGeoReplication(b *testing.B) {
	for range b.N {
		a, bc := startGeoPair(b, "bench")
		a.admin("PUT", "/admin/v2/namespaces/geo/localonly", `{"replication_clusters":["ca"]}`, http.StatusNoContent)
		ca, cb := a.client(b), bc.client(b)
		pair := func(pc, cc pulsar.Client, topic string) (pulsar.Producer, pulsar.Consumer) {
			cons, err := cc.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", ReceiverQueueSize: 1000})
			if err != nil {
				b.Fatal(err)
			}
			prod, err := pc.CreateProducer(pulsar.ProducerOptions{Topic: topic, SendTimeout: -1, MaxPendingMessages: 5000})
			if err != nil {
				b.Fatal(err)
			}
			return prod, cons
		}
		// Baseline: produce and consume in ca, a namespace not replicated.
		lp, lc := pair(ca, ca, "persistent://geo/localonly/tput")
		local := geoThroughput(b, lp, lc)
		// Replication: produce in ca, consume in cb.
		rp, rc := pair(ca, cb, "persistent://geo/bench/tput")
		repl := geoThroughput(b, rp, rc)
		b.Logf("throughput, %d B messages: local produce+consume %.0f msgs/s, ca -> cb replication %.0f msgs/s (%.2fx)",
			geoBenchSize, local, repl, repl/local)
		b.ReportMetric(local, "local-msgs/s")
		b.ReportMetric(repl, "repl-msgs/s")

		// Lag at a fixed rate: publish time in ca to receipt in cb, and
		// (baseline, same messages) to receipt by a consumer in ca.
		lagP, lagC := pair(ca, cb, "persistent://geo/bench/lag")
		localC, err := ca.Subscribe(pulsar.ConsumerOptions{Topic: "persistent://geo/bench/lag", SubscriptionName: "local", ReceiverQueueSize: 1000})
		if err != nil {
			b.Fatal(err)
		}
		n := int(geoBenchLagTime.Seconds()) * geoBenchRate
		measure := func(c pulsar.Consumer, out *[]time.Duration, done chan<- struct{}) {
			defer close(done)
			ctx, cancel := context.WithTimeout(context.Background(), geoBenchLagTime+time.Minute)
			defer cancel()
			for range n {
				m, err := c.Receive(ctx)
				if err != nil {
					b.Errorf("lag phase: %v", err)
					return
				}
				*out = append(*out, time.Since(m.PublishTime()))
				c.AckID(m.ID())
			}
		}
		lags := make([]time.Duration, 0, n)
		localLags := make([]time.Duration, 0, n)
		done, localDone := make(chan struct{}), make(chan struct{})
		go measure(lagC, &lags, done)
		go measure(localC, &localLags, localDone)
		tick := time.NewTicker(time.Second / geoBenchRate)
		payload := make([]byte, geoBenchSize)
		for range n {
			<-tick.C
			lagP.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload}, nil)
		}
		tick.Stop()
		<-done
		<-localDone
		if len(lags) == 0 || len(localLags) == 0 {
			b.Fatal("no lag samples")
		}
		pct := func(l []time.Duration, p float64) time.Duration {
			slices.Sort(l)
			return l[int(float64(len(l)-1)*p)].Round(100 * time.Microsecond)
		}
		b.Logf("lag at %d msgs/s for %v (%d msgs), publish in ca to receive: in cb p50 %v p99 %v max %v; in ca (baseline) p50 %v p99 %v max %v",
			geoBenchRate, geoBenchLagTime, len(lags), pct(lags, 0.5), pct(lags, 0.99), pct(lags, 1),
			pct(localLags, 0.5), pct(localLags, 0.99), pct(localLags, 1))
		b.ReportMetric(float64(pct(lags, 0.50).Microseconds())/1000, "lag-p50-ms")
		b.ReportMetric(float64(pct(lags, 0.99).Microseconds())/1000, "lag-p99-ms")
		b.ReportMetric(float64(pct(localLags, 0.50).Microseconds())/1000, "local-lag-p50-ms")
		b.ReportMetric(float64(pct(localLags, 0.99).Microseconds())/1000, "local-lag-p99-ms")
	}
}
