package broker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/brokerconf"
	"github.com/magnetar-mq/magnetar/policy"
)

func TestE2ENonPersistent(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	local := newTopicName("np")
	topic := "non-persistent://public/default/" + local
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	// Nobody subscribed yet: dropped.
	sendAsyncAll(t, prod, 3, func(i int) *pulsar.ProducerMessage { return &pulsar.ProducerMessage{Payload: []byte("lost")} })
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	// Messages are dropped until the consumer's FLOW arrived.
	waitUntil(t, "the non-persistent consumer to have permits", func() bool {
		st := getStatsPath(t, tb, "non-persistent/public/default/"+local)
		s := st.Subscriptions["s"]
		return len(s.Consumers) == 1 && s.Consumers[0].AvailablePermits > 0
	})
	sendAsyncAll(t, prod, 5, payloadMsg)
	for i, m := range receiveN(t, cons, 5) {
		if got, want := string(m.Payload()), fmt.Sprintf("m-%d", i); got != want {
			t.Fatalf("message %d = %q, want %q", i, got, want)
		}
		cons.Ack(m)
	}
}

func TestE2EProducerAccessModes(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("access")
	named := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, Name: "p1"})
	if _, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "p1"}); err == nil || !strings.Contains(err.Error(), "ProducerBusy") {
		t.Fatalf("duplicate producer name: %v, want ProducerBusy", err)
	}
	if _, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, ProducerAccessMode: pulsar.ProducerAccessModeExclusive}); err == nil || !strings.Contains(err.Error(), "ProducerBusy") {
		t.Fatalf("exclusive over shared: %v, want ProducerBusy", err)
	}
	named.Close()
	ex, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, ProducerAccessMode: pulsar.ProducerAccessModeExclusive})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, ProducerAccessMode: pulsar.ProducerAccessModeExclusive}); err == nil || !strings.Contains(err.Error(), "ProducerFenced") {
		t.Fatalf("second exclusive: %v, want ProducerFenced", err)
	}
	if _, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic}); err == nil || !strings.Contains(err.Error(), "ProducerBusy") {
		t.Fatalf("shared over exclusive: %v, want ProducerBusy", err)
	}
	// WaitForExclusive blocks until the exclusive producer leaves.
	got := make(chan error, 1)
	go func() {
		w, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, ProducerAccessMode: pulsar.ProducerAccessModeWaitForExclusive})
		if err == nil {
			_, err = w.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("from waiter")})
			w.Close()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("WaitForExclusive returned while the topic was held: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	ex.Close()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("WaitForExclusive: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitForExclusive producer never became ready")
	}
}

func TestE2EBatchIndexAck(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("batchidx")
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		EnableBatchIndexAcknowledgment: true, AckWithResponse: true, NackRedeliveryDelay: 100 * time.Millisecond})
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 4, BatchingMaxPublishDelay: time.Minute})
	sendAsyncAll(t, prod, 4, payloadMsg)
	msgs := receiveN(t, cons, 4)
	// Ack 0 and 2, nack 1 and 3: only 1 and 3 come back.
	for i, m := range msgs {
		if i%2 == 0 {
			if err := cons.Ack(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	cons.Nack(msgs[1])
	cons.Nack(msgs[3])
	var again []string
	for _, m := range receiveN(t, cons, 2) {
		again = append(again, string(m.Payload()))
		cons.Ack(m)
	}
	slices.Sort(again)
	if !slices.Equal(again, []string{"m-1", "m-3"}) {
		t.Fatalf("redelivered %v, want [m-1 m-3]", again)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if m, err := cons.Receive(ctx); err == nil {
		t.Fatalf("acked index redelivered: %q", m.Payload())
	}
}

func TestE2ERegexConsumer(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	prefix := newTopicName("regex")
	for i := 0; i < 2; i++ {
		p := mustProducer(t, cl, pulsar.ProducerOptions{Topic: fmt.Sprintf("%s-%d", prefix, i)})
		p.Close()
	}
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{TopicsPattern: "persistent://public/default/" + prefix + "-.*", SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	for i := 0; i < 2; i++ {
		p := mustProducer(t, cl, pulsar.ProducerOptions{Topic: fmt.Sprintf("%s-%d", prefix, i), DisableBatching: true})
		sendAsyncAll(t, p, 1, payloadMsg)
	}
	topics := map[string]bool{}
	for _, m := range receiveN(t, cons, 2) {
		topics[m.Topic()] = true
		cons.Ack(m)
	}
	if len(topics) != 2 {
		t.Fatalf("regex consumer got messages from %v", topics)
	}
}

func TestE2EDelayedDelivery(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("delayed")
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic})
	start := time.Now()
	if _, err := prod.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte("later"), DeliverAfter: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if _, err := prod.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte("now")}); err != nil {
		t.Fatal(err)
	}
	msgs := receiveN(t, cons, 2)
	if string(msgs[0].Payload()) != "now" || string(msgs[1].Payload()) != "later" {
		t.Fatalf("order %q, %q", msgs[0].Payload(), msgs[1].Payload())
	}
	// deliver_at_time has millisecond resolution: allow rounding.
	if d := time.Since(start); d < 290*time.Millisecond {
		t.Fatalf("delayed message delivered after %v", d)
	}
}

func TestE2ERestartKeepsSubscriptions(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("restart")
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "durable", AckWithResponse: true})
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendAsyncAll(t, prod, 10, payloadMsg)
	for _, m := range receiveN(t, cons, 4) {
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	cons.Close()
	prod.Close()
	cl.Close()
	tb2 := tb.restart(t)
	st := getStats(t, tb2, topic)
	if s, ok := st.Subscriptions["durable"]; !ok || s.MsgBacklog != 6 {
		t.Fatalf("after restart subscription stats %+v (present %v), want backlog 6", s, ok)
	}
	cl2 := tb2.client(t)
	cons2 := mustConsumer(t, cl2, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "durable"})
	for i, m := range receiveN(t, cons2, 6) {
		if got, want := string(m.Payload()), fmt.Sprintf("m-%d", i+4); got != want {
			t.Fatalf("after restart message %d = %q, want %q", i, got, want)
		}
	}
}

func TestE2EUnloadReconnects(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("unload")
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", AckWithResponse: true})
	prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	sendAsyncAll(t, prod, 3, payloadMsg)
	for _, m := range receiveN(t, cons, 3) {
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := tb.UnloadTopic(topic); err != nil || !ok {
		t.Fatalf("UnloadTopic = %v, %v", ok, err)
	}
	// Producer and consumer reconnect by themselves. (Sending while the
	// Go client's producer reconnects races inside the client, so wait.)
	waitUntil(t, "producer and consumer registered", func() bool {
		st := getStats(t, tb, topic)
		return len(st.Publishers) == 1 && len(st.Subscriptions["s"].Consumers) == 1
	})
	prod.Close()
	prod = mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendAsyncAll(t, prod, 3, func(i int) *pulsar.ProducerMessage {
		return &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("after-%d", i))}
	})
	for i, m := range receiveN(t, cons, 3) {
		if got, want := string(m.Payload()), fmt.Sprintf("after-%d", i); got != want {
			t.Fatalf("after unload got %q, want %q", got, want)
		}
		cons.Ack(m)
	}
}

func TestE2EDeadLetter(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("dlq")
	dlq := topic + "-DLQ"
	cons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		NackRedeliveryDelay: 50 * time.Millisecond,
		DLQ:                 &pulsar.DLQPolicy{MaxDeliveries: 2, DeadLetterTopic: dlq}})
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendAsyncAll(t, prod, 1, func(int) *pulsar.ProducerMessage { return &pulsar.ProducerMessage{Payload: []byte("poison")} })
	var counts []uint32
	for i := 0; i < 2; i++ {
		m := receiveN(t, cons, 1)[0]
		counts = append(counts, m.RedeliveryCount())
		cons.Nack(m)
	}
	if !slices.Equal(counts, []uint32{0, 1}) {
		t.Fatalf("redelivery counts %v, want [0 1]", counts)
	}
	dcons := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: dlq, SubscriptionName: "s-DLQ-reader", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if got := string(receiveN(t, dcons, 1)[0].Payload()); got != "poison" {
		t.Fatalf("dead letter topic got %q", got)
	}
}

func TestE2EUnsubscribeWithOtherConsumers(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("unsub2")
	a := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err := a.Unsubscribe(); err == nil {
		t.Fatal("unsubscribe with another consumer attached succeeded")
	}
	// Forced: the other consumer is disconnected (it reconnects and so
	// creates the subscription again, as with Pulsar).
	if err := a.UnsubscribeForce(); err != nil {
		t.Fatalf("forced unsubscribe: %v", err)
	}
}

func TestE2EDedupSurvivesRestart(t *testing.T) {
	tb := startBroker(t, func(c *brokerconf.Config) { c.Deduplication = true })
	cl := tb.client(t)
	topic := newTopicName("dedup-restart")
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, Name: "dp", BatchingMaxMessages: 3, BatchingMaxPublishDelay: time.Minute})
	sendAsyncAll(t, prod, 3, payloadMsg) // one batch, sequence ids 0..2
	prod.Close()
	cl.Close()
	checkDedupAfterRestart(t, tb, topic, "dp")
}

// Deduplication enabled by namespace policy (not the broker setting)
// also survives a restart: the sequence ids are recovered from the log
// tail into the state the policy path checks, so a re-send is dropped.
func TestE2EPolicyDedupSurvivesRestart(t *testing.T) {
	tb := startBroker(t, nil)
	on := true
	if err := tb.Policies().Update(ctxT(t), "public/default", func(p *policy.Policies) error {
		p.DeduplicationEnabled = &on
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	cl := tb.client(t)
	topic := newTopicName("pdedup-restart")
	prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, Name: "pd", DisableBatching: true})
	for i := range 3 {
		if _, err := prod.Send(ctxT(t), payloadMsg(i)); err != nil {
			t.Fatal(err)
		}
	}
	prod.Close()
	cl.Close()
	checkDedupAfterRestart(t, tb, topic, "pd")
}

// checkDedupAfterRestart restarts tb; producer name then re-sends
// sequence id 2 (dropped as a duplicate) and a new message: the topic
// holds m-0..m-2 and "new".
func checkDedupAfterRestart(t *testing.T, tb *testBroker, topic, name string) {
	t.Helper()
	tb2 := tb.restart(t)
	cl2 := tb2.client(t)
	cons := mustConsumer(t, cl2, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	prod2 := mustProducer(t, cl2, pulsar.ProducerOptions{Topic: topic, Name: name, DisableBatching: true})
	seq := int64(2)
	if _, err := prod2.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte("dup"), SequenceID: &seq}); err != nil {
		t.Fatal(err)
	}
	if _, err := prod2.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte("new")}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range receiveN(t, cons, 4) {
		got = append(got, string(m.Payload()))
	}
	if !slices.Equal(got, []string{"m-0", "m-1", "m-2", "new"}) {
		t.Fatalf("after restart got %v", got)
	}
}
