package main

import (
	"context"

	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Geo-replication benchmarks (BENCHMARKS.md, "Geo-replication"): two
// standalones sharing a ZooKeeper configuration store. Run with
//
//	go test ./cmd/magnetar -run '^$' -bench BenchmarkGeoReplication -benchtime 1x -timeout 20m
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

		// Lag at a fixed rate: publish time in ca to receipt in cb.
		lagP, lagC := pair(ca, cb, "persistent://geo/bench/lag")
		n := int(geoBenchLagTime.Seconds()) * geoBenchRate
		lags := make([]time.Duration, 0, n)
		done := make(chan struct{})
		go func() {
			defer close(done)
			ctx, cancel := context.WithTimeout(context.Background(), geoBenchLagTime+time.Minute)
			defer cancel()
			for range n {
				m, err := lagC.Receive(ctx)
				if err != nil {
					b.Errorf("lag phase: %v", err)
					return
				}
				lags = append(lags, time.Since(m.PublishTime()))
				lagC.AckID(m.ID())
			}
		}()
		tick := time.NewTicker(time.Second / geoBenchRate)
		payload := make([]byte, geoBenchSize)
		for range n {
			<-tick.C
			lagP.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload}, nil)
		}
		tick.Stop()
		<-done
		slices.Sort(lags)
		pct := func(p float64) time.Duration { return lags[int(float64(len(lags)-1)*p)] }
		b.Logf("replication lag at %d msgs/s for %v (%d msgs): p50 %v p99 %v max %v",
			geoBenchRate, geoBenchLagTime, len(lags), pct(0.50).Round(time.Microsecond*100), pct(0.99).Round(time.Microsecond*100), lags[len(lags)-1].Round(time.Millisecond))
		b.ReportMetric(float64(pct(0.50).Microseconds())/1000, "lag-p50-ms")
		b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "lag-p99-ms")
	}
}
