package pulsarclient_test

import (
	"bytes"
	"context"
	"fmt"
	"github.com/magnetar-mq/magnetar/pulsarclient"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
)

func goClient(t *testing.T, url string) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, OperationTimeout: 10 * time.Second, Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestInteropWithPulsarClientGo: what this client produces (each codec,
// batched or not, keys and properties) pulsar-client-go consumes, and
// what pulsar-client-go produces with LZ4 and ZLIB this client consumes.
func TestInteropWithPulsarClientGo(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t, nil)
	gc := goClient(t, tb.url)
	payloads := [][]byte{bytes.Repeat([]byte("interop "), 3000), pulsarclient.RandomBytes(20000), []byte("s")}
	codecs := map[pulsarclient.CompressionType]pulsar.CompressionType{pulsarclient.NoCompression: pulsar.NoCompression, pulsarclient.LZ4: pulsar.LZ4, pulsarclient.ZLib: pulsar.ZLib, pulsarclient.ZSTD: pulsar.ZSTD}
	for ours, theirs := range codecs {
		for _, batching := range []bool{false, true} {
			t.Run(fmt.Sprintf("codec%d-batching=%v", ours, batching), func(t *testing.T) {
				ctx := ctxT(t)
				topic := newTopic("interop")
				gcons, err := gc.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "go"})
				if err != nil {
					t.Fatal(err)
				}
				defer gcons.Close()
				cons, err := cl.Subscribe(pulsarclient.ConsumerOptions{Topic: topic, SubscriptionName: "ours"})
				if err != nil {
					t.Fatal(err)
				}
				defer cons.Close()
				p, err := cl.CreateProducer(pulsarclient.ProducerOptions{Topic: topic, CompressionType: ours, DisableBatching: !batching})
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				for i, pl := range payloads {
					p.SendAsync(ctx, &pulsarclient.ProducerMessage{Payload: pl, Key: fmt.Sprint("k", i), Properties: map[string]string{"i": fmt.Sprint(i)}}, nil)
				}
				if err := p.Flush(); err != nil {
					t.Fatal(err)
				}
				for i, pl := range payloads {
					m, err := gcons.Receive(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(m.Payload(), pl) || m.Key() != fmt.Sprint("k", i) || m.Properties()["i"] != fmt.Sprint(i) {
						t.Fatalf("pulsar-client-go got message %d: %d bytes key %q props %v", i, len(m.Payload()), m.Key(), m.Properties())
					}
				}
				if ours == pulsarclient.ZSTD {
					return // this client decodes only stored zstd frames (doc.go)
				}
				gp, err := gc.CreateProducer(pulsar.ProducerOptions{Topic: topic, CompressionType: theirs, DisableBatching: !batching})
				if err != nil {
					t.Fatal(err)
				}
				defer gp.Close()
				for _, pl := range payloads {
					gp.SendAsync(ctx, &pulsar.ProducerMessage{Payload: pl}, nil)
				}
				if err := gp.FlushWithCtx(ctx); err != nil {
					t.Fatal(err)
				}
				for _, src := range []string{"ours", "pulsar-client-go"} {
					for i, pl := range payloads {
						m, err := cons.Receive(ctx)
						if err != nil {
							t.Fatal(err)
						}
						if !bytes.Equal(m.Payload(), pl) {
							t.Fatalf("message %d from %s: %d bytes, want %d", i, src, len(m.Payload()), len(pl))
						}
					}
				}
			})
		}
	}
}

// TestChunking: a message above the broker's limit is refused without
// chunking and, with it, arrives whole at this client and at
// pulsar-client-go.
func TestChunking(t *testing.T) {
	tb := startBroker(t, nil) // max message size 1 MiB
	cl := tb.client(t, nil)
	gc := goClient(t, tb.url)
	ctx := ctxT(t)
	topic := newTopic("chunk")
	big := pulsarclient.RandomBytes(3<<20 + 17)
	p, err := cl.CreateProducer(pulsarclient.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, &pulsarclient.ProducerMessage{Payload: big}); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("oversized send without chunking: %v", err)
	}
	p.Close()
	cons, err := cl.Subscribe(pulsarclient.ConsumerOptions{Topic: topic, SubscriptionName: "ours"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	gcons, err := gc.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "go"})
	if err != nil {
		t.Fatal(err)
	}
	defer gcons.Close()
	p, err = cl.CreateProducer(pulsarclient.ProducerOptions{Topic: topic, EnableChunking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Send(ctx, &pulsarclient.ProducerMessage{Payload: big, Key: "big"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, &pulsarclient.ProducerMessage{Payload: []byte("small")}); err != nil {
		t.Fatal(err)
	}
	m, err := cons.Receive(ctx)
	if err != nil || !bytes.Equal(m.Payload(), big) || m.Key() != "big" {
		t.Fatalf("ours: %v (%d bytes)", err, len(m.Payload()))
	}
	if err := cons.Ack(m); err != nil {
		t.Fatal(err)
	}
	gm, err := gcons.Receive(ctx)
	if err != nil || !bytes.Equal(gm.Payload(), big) {
		t.Fatalf("pulsar-client-go: %v (%d bytes)", err, len(gm.Payload()))
	}
	m, err = cons.Receive(ctx)
	if err != nil || string(m.Payload()) != "small" {
		t.Fatalf("after the chunked message: %v", err)
	}
}

// TestCumulativeAckAndPattern: a cumulative ack covers everything before
// it (a new consumer starts after it); a pattern consumer picks up a
// topic created after it subscribed.
func TestCumulativeAckAndPattern(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t, nil)
	ctx := ctxT(t)
	topic := newTopic("cum")
	cons, err := cl.Subscribe(pulsarclient.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsarclient.Failover})
	if err != nil {
		t.Fatal(err)
	}
	p, err := cl.CreateProducer(pulsarclient.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := p.Send(ctx, &pulsarclient.ProducerMessage{Payload: fmt.Appendf(nil, "%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i == 5 {
			if err := cons.AckCumulative(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	cons.Close()
	cons, err = cl.Subscribe(pulsarclient.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsarclient.Failover})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	if m, err := cons.Receive(ctx); err != nil || string(m.Payload()) != "6" {
		t.Fatalf("after a cumulative ack of 5: %v %v", m, err)
	}

	prefix := fmt.Sprintf("pat%d-", time.Now().UnixNano()%1e6)
	pc, err := cl.Subscribe(pulsarclient.ConsumerOptions{TopicsPattern: "persistent://public/default/" + prefix + ".*", SubscriptionName: "s",
		AutoDiscoveryPeriod: 100 * time.Millisecond, SubscriptionInitialPosition: pulsarclient.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	p2, err := cl.CreateProducer(pulsarclient.ProducerOptions{Topic: "persistent://public/default/" + prefix + "late"})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if _, err := p2.Send(ctx, &pulsarclient.ProducerMessage{Payload: []byte("found")}); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if m, err := pc.Receive(rctx); err != nil || string(m.Payload()) != "found" {
		t.Fatalf("pattern consumer: %v %v", m, err)
	}
}
