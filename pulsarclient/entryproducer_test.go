package pulsarclient_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/pulsarclient"
)

// TestEntryProducer: pre-built entries go out unchanged with the
// caller's sequence ids, receipts come back in order, and the producer
// ends (Closed called once) when the broker goes away.
func TestEntryProducer(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t, nil)
	ctx := ctxT(t)
	topic := newTopic("entries")
	cons, err := cl.Subscribe(pulsarclient.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	receipts := make(chan uint64, 10)
	closed := make(chan error, 2)
	ep, err := cl.CreateEntryProducer(ctx, pulsarclient.EntryProducerOptions{Topic: topic, Name: "pulsar.repl.a-->b",
		Receipt: func(seq uint64, _, _ int64) { receipts <- seq },
		Closed:  func(err error) { closed <- err }})
	if err != nil {
		t.Fatal(err)
	}
	for i, seq := range []uint64{7, 8, 1 << 40} {
		md, _ := proto.Marshal(&pb.MessageMetadata{ProducerName: proto.String("origin"), SequenceId: proto.Uint64(uint64(i)),
			PublishTime: proto.Uint64(1), PartitionKey: proto.String("k")})
		entry := pulsarproto.AppendEntry(nil, md, []byte{byte('a' + i)})
		if err := ep.Send(&pulsarproto.SendHeader{SequenceID: seq}, entry); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range []uint64{7, 8, 1 << 40} {
		select {
		case got := <-receipts:
			if got != want {
				t.Fatalf("receipt %d for sequence id %d, want %d", i, got, want)
			}
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Payload()) != string(rune('a'+i)) || m.ProducerName() != "origin" || m.Key() != "k" {
			t.Fatalf("entry %d arrived as %q from %q key %q", i, m.Payload(), m.ProducerName(), m.Key())
		}
	}
	tb.Stop(t)
	select {
	case err := <-closed:
		if err == nil {
			t.Fatal("closed without a reason")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the producer did not end with its broker")
	}
	ep.Close(nil)
	if len(closed) != 0 {
		t.Fatal("Closed called twice")
	}
}
