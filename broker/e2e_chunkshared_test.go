package broker

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/magnetar-mq/magnetar/brokerconf"
)

// chunkedPayload is message i of producer p: size bytes, recognisable.
func chunkedPayload(p, i, size int) []byte {
	head := fmt.Sprintf("p%d-m%d|", p, i)
	return append([]byte(head), bytes.Repeat([]byte{byte('a' + (p*7+i)%26)}, size-len(head))...)
}

// testChunkedShared publishes chunked messages from two producers at once
// (their chunks interleave in the topic) plus small ones, to a
// subscription of type st with three consumers with small receive queues,
// and checks every message arrives whole exactly once.
func testChunkedShared(t *testing.T, st pulsar.SubscriptionType) {
	tb := startBroker(t, func(c *brokerconf.Config) { c.MaxMessageSize = 64 << 10 })
	cl := tb.client(t)
	topic := newTopicName("chunkshared")
	const nCons, perProd, size = 3, 6, 300 << 10
	var cons []pulsar.Consumer
	for i := 0; i < nCons; i++ {
		cons = append(cons, mustConsumer(t, cl, pulsar.ConsumerOptions{
			Topic: topic, SubscriptionName: "s", Type: st, ReceiverQueueSize: 4,
			MaxPendingChunkedMessage: 10, ExpireTimeOfIncompleteChunk: time.Minute,
		}))
	}
	want := map[string][]byte{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for p := 0; p < 2; p++ {
		prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, EnableChunking: true, DisableBatching: true, ChunkMaxMessageSize: 16 << 10})
		wg.Add(1)
		go func(p int, prod pulsar.Producer) {
			defer wg.Done()
			for i := 0; i < perProd; i++ {
				sz := size
				if i%3 == 2 {
					sz = 100 // a plain message between chunked ones
				}
				pl := chunkedPayload(p, i, sz)
				key := fmt.Sprintf("k%d", i%4)
				if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: pl, Key: key}); err != nil {
					t.Errorf("send p%d m%d: %v", p, i, err)
					return
				}
				mu.Lock()
				want[string(pl[:bytes.IndexByte(pl, '|')])] = pl
				mu.Unlock()
			}
		}(p, prod)
	}
	wg.Wait()
	got := map[string]int{}
	perConsumer := make([]int, nCons)
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < len(want) && time.Now().Before(deadline) {
		for ci, c := range cons {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			m, err := c.Receive(ctx)
			cancel()
			if err != nil {
				continue
			}
			pl := m.Payload()
			id := string(pl[:max(bytes.IndexByte(pl, '|'), 0)])
			if w, ok := want[id]; !ok || !bytes.Equal(w, pl) {
				t.Fatalf("consumer %d got a bad message %q (%d bytes)", ci, id, len(pl))
			}
			got[id]++
			perConsumer[ci]++
			c.Ack(m)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("received %d of %d messages whole (per consumer %v)", len(got), len(want), perConsumer)
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("message %s received %d times", id, n)
		}
	}
	spread := 0
	for _, n := range perConsumer {
		if n > 0 {
			spread++
		}
	}
	if st == pulsar.Shared && spread < 2 {
		t.Errorf("Shared: all messages went to one consumer (%v)", perConsumer)
	}
}

func TestE2EChunkedShared(t *testing.T)    { testChunkedShared(t, pulsar.Shared) }
func TestE2EChunkedKeyShared(t *testing.T) { testChunkedShared(t, pulsar.KeyShared) }

// TestE2EChunkedSharedConsumerLeaves: a consumer that leaves in the
// middle of a chunked message gives it back whole to another consumer.
func TestE2EChunkedSharedConsumerLeaves(t *testing.T) {
	tb := startBroker(t, func(c *brokerconf.Config) { c.MaxMessageSize = 64 << 10 })
	cl := tb.client(t)
	topic := newTopicName("chunkleave")
	c1 := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared, ReceiverQueueSize: 2})
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, EnableChunking: true, DisableBatching: true, ChunkMaxMessageSize: 16 << 10})
	pl := chunkedPayload(0, 0, 200<<10)
	if _, err := prod.Send(ctxT(t), &pulsar.ProducerMessage{Payload: pl}); err != nil {
		t.Fatal(err)
	}
	// c1 holds chunks of the message without acking; it leaves.
	waitUntil(t, "c1 holds the first chunks", func() bool {
		return getStats(t, tb, topic).Subscriptions["s"].Consumers[0].UnackedMessages > 0
	})
	c1.Close()
	c2 := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	m := receiveN(t, c2, 1)[0]
	if !bytes.Equal(m.Payload(), pl) {
		t.Fatalf("reassembled %d bytes, want %d", len(m.Payload()), len(pl))
	}
}
