package pulsarclient_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/pulsarclient"
	"github.com/magnetar-mq/magnetar/topicreg"
)

// TestBatchingAsync: async sends within one batching window share
// entries (batch indexes 0..n-1), every callback runs once, and the
// consumer unpacks the batches in order.
func TestBatchingAsync(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t, nil)
	ctx := ctxT(t)
	topic := newTopic("batch")
	cons, err := cl.Subscribe(pulsarclient.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := cl.CreateProducer(pulsarclient.ProducerOptions{Topic: topic, BatchingMaxPublishDelay: time.Hour, BatchingMaxMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n = 95
	var mu sync.Mutex
	ids := make([]pulsarclient.MessageID, n)
	var wg sync.WaitGroup
	wg.Add(n)
	for i := range n {
		p.SendAsync(ctx, &pulsarclient.ProducerMessage{Payload: fmt.Appendf(nil, "%d", i)}, func(id pulsarclient.MessageID, _ *pulsarclient.ProducerMessage, err error) {
			defer wg.Done()
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			ids[i] = id
			mu.Unlock()
		})
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, id := range ids {
		if id.BatchIndex != int32(i%10) || (i < 90 && id.BatchSize != 10) || (i >= 90 && id.BatchSize != 5) {
			t.Fatalf("message %d id %+v: want batch index %d", i, id, i%10)
		}
		if i%10 != 0 && (id.Ledger != ids[i-1].Ledger || id.Entry != ids[i-1].Entry) {
			t.Fatalf("message %d in entry %v, message %d in %v", i, id, i-1, ids[i-1])
		}
	}
	for i := range n {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Payload()) != fmt.Sprint(i) || m.ID() != ids[i] {
			t.Fatalf("got %q id %v, want %d id %v", m.Payload(), m.ID(), i, ids[i])
		}
		cons.Ack(m)
	}
}

// TestCompressionCodecs: every codec round-trips batched and unbatched
// messages of compressible, random and empty payloads.
func TestCompressionCodecs(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t, nil)
	payloads := [][]byte{bytes.Repeat([]byte("magnetar "), 5000), pulsarclient.RandomBytes(70000), {}, []byte("x")}
	for _, codec := range []pulsarclient.CompressionType{pulsarclient.NoCompression, pulsarclient.LZ4, pulsarclient.ZLib, pulsarclient.ZSTD, pulsarclient.Snappy} {
		for _, batching := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d-batching=%v", codec, batching), func(t *testing.T) {
				ctx := ctxT(t)
				topic := newTopic("codec")
				cons, err := cl.Subscribe(pulsarclient.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
				if err != nil {
					t.Fatal(err)
				}
				defer cons.Close()
				p, err := cl.CreateProducer(pulsarclient.ProducerOptions{Topic: topic, CompressionType: codec, DisableBatching: !batching})
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				for _, pl := range payloads {
					p.SendAsync(ctx, &pulsarclient.ProducerMessage{Payload: pl}, func(_ pulsarclient.MessageID, _ *pulsarclient.ProducerMessage, err error) {
						if err != nil {
							t.Error(err)
						}
					})
				}
				if err := p.Flush(); err != nil {
					t.Fatal(err)
				}
				for i, pl := range payloads {
					m, err := cons.Receive(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(m.Payload(), pl) {
						t.Fatalf("payload %d: %d bytes, want %d", i, len(m.Payload()), len(pl))
					}
				}
			})
		}
	}
}

// TestPartitionedTopic: keyed messages stay on one partition each, unkeyed
// ones spread, and a consumer of the partitioned topic gets them all.
func TestPartitionedTopic(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t, nil)
	ctx := ctxT(t)
	topic := newTopic("parts")
	if err := tb.Admin().Topics.CreatePartitionedTopic(ctx, topic, topicreg.PartitionedMetadata{Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	cons, err := cl.Subscribe(pulsarclient.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsarclient.Shared})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := cl.CreateProducer(pulsarclient.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	keyPart := map[string]int32{}
	used := map[int32]bool{}
	const n = 60
	for i := range n {
		key := ""
		if i%2 == 0 {
			key = fmt.Sprint("key", i%6)
		}
		id, err := p.Send(ctx, &pulsarclient.ProducerMessage{Payload: fmt.Appendf(nil, "%d", i), Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if id.Partition < 0 || id.Partition > 2 {
			t.Fatalf("partition %d", id.Partition)
		}
		used[id.Partition] = true
		if key != "" {
			if prev, ok := keyPart[key]; ok && prev != id.Partition {
				t.Fatalf("key %s on partitions %d and %d", key, prev, id.Partition)
			}
			keyPart[key] = id.Partition
		}
	}
	if len(used) != 3 {
		t.Fatalf("partitions used: %v", used)
	}
	seen := map[string]bool{}
	for range n {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		seen[string(m.Payload())] = true
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != n {
		t.Fatalf("received %d distinct messages, want %d", len(seen), n)
	}
}

// TestNackRedelivery: a negatively acknowledged message comes back after
// the delay, on Shared with a higher redelivery count (Pulsar counts
// redeliveries on Shared and Key_Shared subscriptions only).
func TestNackRedelivery(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t, nil)
	ctx := ctxT(t)
	topic := newTopic("nack")
	for _, st := range []pulsarclient.SubscriptionType{pulsarclient.Shared, pulsarclient.Exclusive} {
		cons, err := cl.Subscribe(pulsarclient.ConsumerOptions{Topic: topic, SubscriptionName: fmt.Sprint("s", st), Type: st,
			NackRedeliveryDelay: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		p, err := cl.CreateProducer(pulsarclient.ProducerOptions{Topic: topic})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Send(ctx, &pulsarclient.ProducerMessage{Payload: []byte("again")}); err != nil {
			t.Fatal(err)
		}
		p.Close()
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cons.Nack(m)
		m2, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m2.Payload()) != "again" || m2.ID() != m.ID() || (st == pulsarclient.Shared && m2.RedeliveryCount() != 1) {
			t.Fatalf("%v: redelivered %q id %v (first %v) count %d", st, m2.Payload(), m2.ID(), m.ID(), m2.RedeliveryCount())
		}
		cons.Ack(m2)
		cons.Close()
	}
}

// TestDeadLetter: after MaxDeliveries deliveries the message goes to the
// dead-letter topic (default name) with REAL_TOPIC and ORIGIN_MESSAGE_ID,
// and is acknowledged on the input.
func TestDeadLetter(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t, nil)
	ctx := ctxT(t)
	topic := newTopic("dlq")
	dlqTopic := topic + "-sub-DLQ"
	dlq, err := cl.Subscribe(pulsarclient.ConsumerOptions{Topic: dlqTopic, SubscriptionName: "d"})
	if err != nil {
		t.Fatal(err)
	}
	defer dlq.Close()
	cons, err := cl.Subscribe(pulsarclient.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsarclient.Shared,
		NackRedeliveryDelay: 50 * time.Millisecond, DLQ: &pulsarclient.DLQPolicy{MaxDeliveries: 3}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := cl.CreateProducer(pulsarclient.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	id, err := p.Send(ctx, &pulsarclient.ProducerMessage{Payload: []byte("poison"), Key: "k", Properties: map[string]string{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.RedeliveryCount() != uint32(i) {
			t.Fatalf("delivery %d has redelivery count %d", i, m.RedeliveryCount())
		}
		cons.Nack(m)
	}
	d, err := dlq.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(d.Payload()) != "poison" || d.Key() != "k" || d.Properties()["a"] != "b" ||
		d.Properties()["REAL_TOPIC"] != topic || d.Properties()["ORIGIN_MESSAGE_ID"] != id.String() {
		t.Fatalf("dead letter %q key %q props %v (sent as %v)", d.Payload(), d.Key(), d.Properties(), id)
	}
	// Acknowledged on the input: a new consumer gets nothing.
	cons.Close()
	cons2, err := cl.Subscribe(pulsarclient.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsarclient.Shared})
	if err != nil {
		t.Fatal(err)
	}
	defer cons2.Close()
	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if m, err := cons2.Receive(sctx); err == nil {
		t.Fatalf("input still delivers %q after the dead letter", m.Payload())
	}
}

// TestReader: readers from earliest, latest, an id (exclusive and
// inclusive), batched.
func TestReader(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t, nil)
	ctx := ctxT(t)
	topic := newTopic("reader")
	p, err := cl.CreateProducer(pulsarclient.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var ids []pulsarclient.MessageID
	for i := range 5 {
		id, err := p.Send(ctx, &pulsarclient.ProducerMessage{Payload: fmt.Appendf(nil, "%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	read := func(start pulsarclient.MessageID, inclusive bool, want ...string) {
		t.Helper()
		r, err := cl.CreateReader(pulsarclient.ReaderOptions{Topic: topic, StartMessageID: start, StartMessageIDInclusive: inclusive})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for _, w := range want {
			m, err := r.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if string(m.Payload()) != w {
				t.Fatalf("from %v (inclusive %v): got %q, want %q", start, inclusive, m.Payload(), w)
			}
		}
	}
	read(pulsarclient.EarliestMessageID(), false, "0", "1", "2", "3", "4")
	read(ids[2], false, "3", "4")
	read(ids[2], true, "2", "3", "4")
	r, err := cl.CreateReader(pulsarclient.ReaderOptions{Topic: topic, StartMessageID: pulsarclient.LatestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := p.Send(ctx, &pulsarclient.ProducerMessage{Payload: []byte("new")}); err != nil {
		t.Fatal(err)
	}
	m, err := r.Next(ctx)
	if err != nil || string(m.Payload()) != "new" {
		t.Fatalf("latest reader: %v %v", m, err)
	}
}

// TestKeyShared: on a Key_Shared subscription each key goes to one of the
// two consumers only, both get keys, and together they get every message.
// (Batches are routed by their entry, so Key_Shared producers send
// unbatched here, as Pulsar clients need key-based batching for it.)
func TestKeyShared(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t, nil)
	ctx := ctxT(t)
	topic := newTopic("keyshared")
	var cs []*pulsarclient.Consumer
	for range 2 {
		c, err := cl.Subscribe(pulsarclient.ConsumerOptions{Topic: topic, SubscriptionName: "ks", Type: pulsarclient.KeyShared})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cs = append(cs, c)
	}
	p, err := cl.CreateProducer(pulsarclient.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n = 200
	for i := range n {
		p.SendAsync(ctx, &pulsarclient.ProducerMessage{Payload: fmt.Appendf(nil, "%d", i), Key: fmt.Sprint("key-", i%20)}, nil)
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	owner := map[string]int{}
	got := 0
	for got < n {
		var m *pulsarclient.Message
		var who int
		select {
		case cm := <-cs[0].Chan():
			m, who = cm.Message, 0
		case cm := <-cs[1].Chan():
			m, who = cm.Message, 1
		case <-ctx.Done():
			t.Fatalf("after %d of %d messages: %v", got, n, ctx.Err())
		}
		if o, ok := owner[m.Key()]; ok && o != who {
			t.Fatalf("key %s went to consumers %d and %d", m.Key(), o, who)
		}
		owner[m.Key()] = who
		cs[who].Ack(m)
		got++
	}
	per := [2]int{}
	for _, o := range owner {
		per[o]++
	}
	if per[0] == 0 || per[1] == 0 {
		t.Fatalf("keys per consumer %v: the subscription did not spread", per)
	}
}
