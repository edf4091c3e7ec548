package brokertest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Producer creates a producer, closed when the test ends.
func Producer(t testing.TB, cl pulsar.Client, o pulsar.ProducerOptions) pulsar.Producer {
	t.Helper()
	p, err := cl.CreateProducer(o)
	if err != nil {
		t.Fatalf("create producer: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// Consumer subscribes, closed when the test ends.
func Consumer(t testing.TB, cl pulsar.Client, o pulsar.ConsumerOptions) pulsar.Consumer {
	t.Helper()
	c, err := cl.Subscribe(o)
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// Msg is message i of a test: payload "m-<i>".
func Msg(i int) *pulsar.ProducerMessage {
	return &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("m-%d", i))}
}

// SendAll sends n messages made by mk asynchronously and waits for
// every receipt.
func SendAll(t testing.TB, p pulsar.Producer, n int, mk func(i int) *pulsar.ProducerMessage) []pulsar.MessageID {
	t.Helper()
	ids := make([]pulsar.MessageID, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := 0; i < n; i++ {
		wg.Add(1)
		p.SendAsync(Ctx(t), mk(i), func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			mu.Lock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			ids[i] = id
			mu.Unlock()
			wg.Done()
		})
	}
	if err := p.FlushWithCtx(context.Background()); err != nil {
		t.Fatalf("flush: %v", err)
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("send: %v", firstErr)
	}
	return ids
}

// Receive receives n messages (failing the test after 10 s).
func Receive(t testing.TB, c pulsar.Consumer, n int) []pulsar.Message {
	t.Helper()
	ctx := Ctx(t)
	var out []pulsar.Message
	for len(out) < n {
		m, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("receive %d/%d: %v", len(out), n, err)
		}
		out = append(out, m)
	}
	return out
}
