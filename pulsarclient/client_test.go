package pulsarclient_test

import (
	"fmt"
	"github.com/magnetar-mq/magnetar/pulsarclient"
	"testing"
	"time"
)

// TestRoundTrip: sync sends with key, properties and event time arrive
// in order with their metadata, batched and unbatched.
func TestRoundTrip(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t, nil)
	for _, batching := range []bool{false, true} {
		t.Run(fmt.Sprintf("batching=%v", batching), func(t *testing.T) {
			ctx := ctxT(t)
			topic := newTopic("rt")
			cons, err := cl.Subscribe(pulsarclient.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsarclient.SubscriptionPositionEarliest})
			if err != nil {
				t.Fatal(err)
			}
			defer cons.Close()
			p, err := cl.CreateProducer(pulsarclient.ProducerOptions{Topic: topic, DisableBatching: !batching, Name: "rt-producer"})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			et := time.UnixMilli(1_700_000_000_123)
			var ids []pulsarclient.MessageID
			for i := range 20 {
				id, err := p.Send(ctx, &pulsarclient.ProducerMessage{Payload: fmt.Appendf(nil, "m%d", i), Key: fmt.Sprint("k", i%3),
					Properties: map[string]string{"i": fmt.Sprint(i)}, EventTime: et})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			for i := range 20 {
				m, err := cons.Receive(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if string(m.Payload()) != fmt.Sprintf("m%d", i) || m.Key() != fmt.Sprint("k", i%3) || m.Properties()["i"] != fmt.Sprint(i) {
					t.Fatalf("message %d: %q key %q props %v", i, m.Payload(), m.Key(), m.Properties())
				}
				if !m.EventTime().Equal(et) || m.ProducerName() != "rt-producer" || m.Topic() != topic {
					t.Fatalf("message %d: event time %v producer %q topic %q", i, m.EventTime(), m.ProducerName(), m.Topic())
				}
				if m.ID().Ledger != ids[i].Ledger || m.ID().Entry != ids[i].Entry {
					t.Fatalf("message %d id %v, send returned %v", i, m.ID(), ids[i])
				}
				if err := cons.Ack(m); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestHTTPServiceURL: with an http:// service URL topics are looked up
// over HTTP and the messages flow over the broker's binary port.
func TestHTTPServiceURL(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t, func(o *pulsarclient.ClientOptions) { o.URL = "http://" + tb.HTTPAddr() })
	ctx := ctxT(t)
	topic := newTopic("http")
	cons, err := cl.Subscribe(pulsarclient.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := cl.CreateProducer(pulsarclient.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Send(ctx, &pulsarclient.ProducerMessage{Payload: []byte("via http lookup")}); err != nil {
		t.Fatal(err)
	}
	m, err := cons.Receive(ctx)
	if err != nil || string(m.Payload()) != "via http lookup" {
		t.Fatalf("%v %v", m, err)
	}
	if _, err := pulsarclient.NewClient(pulsarclient.ClientOptions{URL: "ftp://x"}); err == nil {
		t.Fatal("ftp:// accepted")
	}
}
