package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// BenchmarkFunctionsIdentity compares an identity function (uploaded Go
// binary, ATLEAST_ONCE) with a plain consume+produce loop written with the
// same client against the same standalone, on the same pre-loaded input,
// and measures start-up: create → first processed message.
//
//	go test ./e2e/ -run '^$' -bench BenchmarkFunctionsIdentity -benchtime 1x -timeout 20m
func BenchmarkFunctionsIdentity(b *testing.B) {
	bin := buildFnProg(b, "1")
	p := startStandalone(b, b.TempDir())
	c := p.client(b)
	const n = 20000
	payloads := make([]string, n)
	for i := range payloads {
		payloads[i] = payload(i)
	}
	in := "persistent://public/default/bench-in"
	if err := produceErr(c, in, payloads); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		// Plain consume+produce: ack each input after its output's receipt.
		outPlain := fmt.Sprintf("persistent://public/default/bench-plain-%d", it)
		cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: in, SubscriptionName: fmt.Sprintf("plain-%d", it),
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, ReceiverQueueSize: 1000})
		if err != nil {
			b.Fatal(err)
		}
		prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: outPlain, BatchingMaxPublishDelay: time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		var done atomic.Int64
		fin := make(chan struct{})
		t0 := time.Now()
		for i := 0; i < n; i++ {
			m, err := cons.Receive(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			prod.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: m.Payload()}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err == nil {
					cons.Ack(m)
				}
				if done.Add(1) == n {
					close(fin)
				}
			})
		}
		<-fin
		plain := time.Since(t0)
		prod.Close()
		cons.Close()

		// The function, on the same input from the start.
		name := fmt.Sprintf("bench-%d", it)
		out := subscribeOut(b, c, "persistent://public/default/"+name+"-out")
		cfg := fnConfig(name, map[string]any{"inputs": []string{in}, "userConfig": map[string]any{"suffix": ""}})
		t1 := time.Now()
		if code, body := fnUpload(b, p, http.MethodPost, "functions", name, cfg, bin, ""); code != http.StatusNoContent {
			b.Fatalf("create: %d %s", code, body)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		first, err := out.Receive(ctx)
		if err != nil {
			b.Fatal(err)
		}
		startup := time.Since(t1)
		out.Ack(first)
		t2 := time.Now()
		for i := 1; i < n; i++ {
			m, err := out.Receive(ctx)
			if err != nil {
				b.Fatalf("after %d: %v", i, err)
			}
			out.Ack(m)
		}
		fn := time.Since(t2)
		cancel()
		b.ReportMetric(float64(n)/plain.Seconds(), "plain-msgs/s")
		b.ReportMetric(float64(n-1)/fn.Seconds(), "function-msgs/s")
		b.ReportMetric(float64(startup.Milliseconds()), "startup-ms")
		b.Logf("n=%d plain %.0f msgs/s, function %.0f msgs/s (%.2fx), start-up create->first output %v",
			n, float64(n)/plain.Seconds(), float64(n-1)/fn.Seconds(), (float64(n-1)/fn.Seconds())/(float64(n)/plain.Seconds()), startup.Round(time.Millisecond))
	}
}
