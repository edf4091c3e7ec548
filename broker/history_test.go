package broker

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/magnetar-mq/magnetar/broker/snap"
)

// TestHistoryCountersMatchStats: the history sampler's counters-only
// read (Topic.Counters, package topichistory) gives
// what the topic's stats give (in and out counters, backlog summed over
// the subscriptions, storage size), on a topic with traffic, a
// subscription that consumed and acknowledged part of it and one that
// consumed nothing, and allocates a few words where the stats allocated
// per subscription and consumer.
func TestHistoryCountersMatchStats(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	const topic = "persistent://public/default/history-counters"
	// Acknowledgements answered: Ack returns once the broker has it.
	read := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "read", AckWithResponse: true})
	defer read.Close()
	idle := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "idle"})
	idle.Close()
	p := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	defer p.Close()
	for i := range 20 {
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("m-%02d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	ms := receiveN(t, read, 20)
	for _, m := range ms[:12] {
		if err := read.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	tp := tb.lookupTopic(topic)
	if tp == nil {
		t.Fatal("topic not loaded")
	}
	st := Topic{tp}.Snapshot(false)
	want := snap.Counters{MsgIn: st.MsgInCounter, BytesIn: st.BytesInCounter, Storage: st.StorageSize}
	for _, ss := range st.Subscriptions {
		want.MsgOut += ss.MsgOutCounter
		want.BytesOut += ss.BytesOutCounter
		want.Backlog += ss.MsgBacklog
	}
	if want.MsgIn != 20 || want.MsgOut != 20 || want.Backlog != 28 || want.Storage == 0 {
		t.Fatalf("stats counters %+v: want 20 in, 20 out, backlog 8+20, storage > 0", want)
	}
	if got := (Topic{tp}).Counters(); got != want {
		t.Fatalf("counters %+v, stats %+v", got, want)
	}
	// The closure and what it shares, and a hand-over to each busy
	// subscription's loop; Snapshot takes more.
	if a := testing.AllocsPerRun(100, func() { Topic{tp}.Counters() }); a > 8 {
		t.Errorf("counters allocates %.0f times, want at most 8", a)
	}
}
