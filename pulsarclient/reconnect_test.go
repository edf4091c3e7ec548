package pulsarclient_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/magnetar-mq/magnetar/pulsarclient"
	"math"
	"sync"
	"testing"
	"time"
)

// TestReconnectAfterRestart: a producer sending asynchronously and a
// consumer keep working across a broker restart; every message whose
// send was acknowledged is received afterwards (none lost), and sends
// pending at the restart are resent.
func TestReconnectAfterRestart(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t, nil)
	ctx := ctxT(t)
	topic := newTopic("restart")
	cons, err := cl.Subscribe(pulsarclient.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsarclient.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := cl.CreateProducer(pulsarclient.ProducerOptions{Topic: topic, BatchingMaxPublishDelay: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	var mu sync.Mutex
	acked := map[string]bool{}
	var failed int
	send := func(i int) {
		pl := fmt.Sprint(i)
		p.SendAsync(ctx, &pulsarclient.ProducerMessage{Payload: []byte(pl)}, func(_ pulsarclient.MessageID, _ *pulsarclient.ProducerMessage, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				return
			}
			acked[pl] = true
		})
	}
	const before, after = 500, 500
	for i := range before {
		send(i)
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	// Half consumed (and acked) before the restart.
	got := map[string]bool{}
	for range before / 2 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got[string(m.Payload())] = true
		cons.Ack(m)
	}
	for i := before; i < before+50; i++ {
		send(i) // pending while the broker goes away
	}
	tb.restart(t)
	for i := before + 50; i < before+after; i++ {
		send(i)
	}
	fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := p.FlushWithCtx(fctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if failed != 0 || len(acked) != before+after {
		t.Fatalf("%d sends failed, %d acknowledged of %d", failed, len(acked), before+after)
	}
	mu.Unlock()
	for len(got) < before+after {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		m, err := cons.Receive(rctx)
		cancel()
		if err != nil {
			t.Fatalf("after %d of %d distinct messages: %v", len(got), before+after, err)
		}
		got[string(m.Payload())] = true
		cons.Ack(m)
	}
	for pl := range acked {
		if !got[pl] {
			t.Fatalf("acknowledged message %s never received", pl)
		}
	}
}

// TestSendTimeout: with the broker gone, a send fails with ErrSendTimeout
// after SendTimeout, its callback runs once, and Close returns.
func TestSendTimeout(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t, nil)
	ctx := ctxT(t)
	p, err := cl.CreateProducer(pulsarclient.ProducerOptions{Topic: newTopic("timeout"), SendTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tb.Stop(t)
	start := time.Now()
	var calls int
	_, err = p.Send(ctx, &pulsarclient.ProducerMessage{Payload: []byte("lost")})
	if !errors.Is(err, pulsarclient.ErrSendTimeout) {
		t.Fatalf("send with the broker down: %v", err)
	}
	if el := time.Since(start); el < 300*time.Millisecond || el > 10*time.Second {
		t.Fatalf("timed out after %v", el)
	}
	done := make(chan struct{})
	p.SendAsync(ctx, &pulsarclient.ProducerMessage{Payload: []byte("closed")}, func(_ pulsarclient.MessageID, _ *pulsarclient.ProducerMessage, err error) {
		calls++
		if err == nil {
			t.Error("send succeeded without a broker")
		}
		close(done)
	})
	p.Close()
	<-done
	if calls != 1 {
		t.Fatalf("callback ran %d times", calls)
	}
	if _, err := p.Send(ctx, &pulsarclient.ProducerMessage{Payload: []byte("after close")}); !errors.Is(err, pulsarclient.ErrClosed) {
		t.Fatalf("send after close: %v", err)
	}
}

// TestExplicitSequenceIDs: explicit sequence ids up to the int64 limit
// are sent as given and the receipt reports them.
func TestExplicitSequenceIDs(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t, nil)
	ctx := ctxT(t)
	topic := newTopic("seq")
	cons, err := cl.Subscribe(pulsarclient.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := cl.CreateProducer(pulsarclient.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, seq := range []int64{0, 1 << 31, math.MaxInt64 - 1, math.MaxInt64} {
		s := seq
		if _, err := p.Send(ctx, &pulsarclient.ProducerMessage{Payload: []byte("x"), SequenceID: &s}); err != nil {
			t.Fatal(err)
		}
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.SequenceID() != seq {
			t.Fatalf("sent sequence id %d, received %d", seq, m.SequenceID())
		}
		if p.LastSequenceID() != seq {
			t.Fatalf("last sequence id %d after a receipt for %d", p.LastSequenceID(), seq)
		}
	}
}
