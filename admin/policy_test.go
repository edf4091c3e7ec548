package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/mledger"
)

func newNS(t testing.TB, ac pulsaradmin.Client, ns string) {
	t.Helper()
	if err := ac.Namespaces().CreateNamespace(ns); err != nil {
		t.Fatal(err)
	}
}

func subBacklog(t testing.TB, ac pulsaradmin.Client, topic, sub string) int64 {
	t.Helper()
	st, err := ac.Topics().GetStats(mustTopic(t, topic))
	if err != nil {
		t.Fatal(err)
	}
	return st.Subscriptions[sub].MsgBacklog
}

func TestPolicyBacklogQuotaHoldResumesAfterSkip(t *testing.T) {
	tb, ac := startAdmin(t)
	newNS(t, ac, "public/quota")
	if err := ac.Namespaces().SetBacklogQuota("public/quota", utils.NewBacklogQuota(1000, -1, utils.ProducerRequestHold), utils.DestinationStorage); err != nil {
		t.Fatal(err)
	}
	m, err := ac.Namespaces().GetBacklogQuotaMap("public/quota")
	if err != nil || m[utils.DestinationStorage].LimitSize != 1000 || m[utils.DestinationStorage].Policy != utils.ProducerRequestHold {
		t.Fatalf("quota map %+v %v", m, err)
	}
	topic := "persistent://public/quota/held"
	tn := subscribedTopic(t, ac, topic, "slow")
	c := tb.client(t)
	p := brokertest.Producer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true, SendTimeout: -1})
	payload := make([]byte, 100)
	// Fill the backlog past 1000 bytes with acknowledged sends.
	stored := 0
	for {
		st, err := ac.Topics().GetStats(tn)
		if err != nil {
			t.Fatal(err)
		}
		if st.Subscriptions["slow"].BacklogSize > 1000 {
			break
		}
		if stored > 50 {
			t.Fatalf("backlog never exceeded the quota: %+v", st.Subscriptions["slow"])
		}
		if _, err := p.Send(ctxT(t), &pulsar.ProducerMessage{Payload: payload}); err != nil {
			t.Fatal(err)
		}
		stored++
	}
	// Further sends are held by the broker, not failed.
	const held = 10
	done := make(chan error, held)
	for range held {
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done <- err })
	}
	waitUntil(t, "sends to be held", func() bool { return tb.HeldSends(topic) == held })
	select {
	case err := <-done:
		t.Fatalf("a held send completed (%v) before the backlog was skipped", err)
	default:
	}
	n := stored + held
	// Skipping the backlog releases the producer.
	if err := ac.Subscriptions().ClearBacklog(tn, "slow"); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	for i := range held {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatalf("held sends not released: %d/%d done", i, held)
		}
	}
	st, err := ac.Topics().GetStats(tn)
	if err != nil || st.MsgCounterIn != int64(n) {
		t.Fatalf("stats after release %+v %v", st, err)
	}
}

func TestPolicyBacklogQuotaExceptionAndEviction(t *testing.T) {
	tb, ac := startAdmin(t)
	newNS(t, ac, "public/exc")
	newNS(t, ac, "public/evict")
	if err := ac.Namespaces().SetBacklogQuota("public/exc", utils.NewBacklogQuota(500, -1, utils.ProducerException), utils.DestinationStorage); err != nil {
		t.Fatal(err)
	}
	// The client tests' older form: limit as a quoted string.
	if code, body := httpDo(t, tb, "POST", "/admin/v2/namespaces/public/evict/backlogQuota", `{"limit":"500","policy":"consumer_backlog_eviction"}`); code != 204 {
		t.Fatalf("set eviction quota %d %s", code, body)
	}
	c := tb.client(t)
	for _, ns := range []string{"exc", "evict"} {
		topic := "persistent://public/" + ns + "/t"
		if err := ac.Topics().Create(mustTopic(t, topic), 0); err != nil {
			t.Fatal(err)
		}
		if err := ac.Subscriptions().Create(mustTopic(t, topic), "slow", utils.Earliest); err != nil {
			t.Fatal(err)
		}
		p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
		if err != nil {
			t.Fatal(err)
		}
		var refused error
		for range 30 {
			if _, err := p.Send(ctxT(t), &pulsar.ProducerMessage{Payload: make([]byte, 100)}); err != nil {
				refused = err
				break
			}
		}
		p.Close()
		switch ns {
		case "exc":
			if !errors.Is(refused, pulsar.ErrProducerBlockedQuotaExceeded) {
				t.Fatalf("producer_exception: send error %v", refused)
			}
			_, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
			if err == nil || !strings.Contains(err.Error(), "ProducerBlockedQuotaExceededException") {
				t.Fatalf("producer creation over quota: %v", err)
			}
		case "evict":
			if refused != nil {
				t.Fatalf("consumer_backlog_eviction refused a send: %v", refused)
			}
			st, err := ac.Topics().GetStats(mustTopic(t, topic))
			if err != nil || st.MsgCounterIn != 30 || st.Subscriptions["slow"].MsgBacklog >= 10 || st.Subscriptions["slow"].MsgBacklog == 0 {
				t.Fatalf("eviction left backlog %+v %v", st.Subscriptions["slow"], err)
			}
		}
	}
}

func TestPolicyMessageTTLMovesCursor(t *testing.T) {
	tb, ac := startAdmin(t)
	newNS(t, ac, "public/ttl")
	if err := ac.Namespaces().SetNamespaceMessageTTL("public/ttl", 1); err != nil {
		t.Fatal(err)
	}
	if ttl, err := ac.Namespaces().GetNamespaceMessageTTL("public/ttl"); err != nil || ttl != 1 {
		t.Fatalf("ttl %d %v", ttl, err)
	}
	topic := "persistent://public/ttl/t"
	tn := subscribedTopic(t, ac, topic, "s")
	c := tb.client(t)
	p := brokertest.Producer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	var last pulsar.MessageID
	var err error
	for range 5 {
		if last, err = p.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if n := subBacklog(t, ac, topic, "s"); n != 5 {
		t.Fatalf("backlog %d", n)
	}
	waitUntil(t, "TTL expiry", func() bool { return subBacklog(t, ac, topic, "s") == 0 })
	is, err := ac.Topics().GetInternalStats(tn)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d:%d", last.LedgerID(), last.EntryID())
	if md := is.Cursors["s"].MarkDeletePosition; md != want {
		t.Fatalf("mark-delete %s, want %s", md, want)
	}
}

func TestPolicyDeduplicationDropsResend(t *testing.T) {
	tb, ac := startAdmin(t)
	newNS(t, ac, "public/dedup")
	if err := ac.Namespaces().SetDeduplicationStatus("public/dedup", true); err != nil {
		t.Fatal(err)
	}
	topic := "persistent://public/dedup/t"
	c := tb.client(t)
	cons := brokertest.Consumer(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	p := brokertest.Producer(t, c, pulsar.ProducerOptions{Topic: topic, Name: "dd", DisableBatching: true})
	for _, seq := range []int64{1, 2, 2, 1, 3} {
		s := seq
		if _, err := p.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte{byte('0' + seq)}, SequenceID: &s}); err != nil {
			t.Fatal(err)
		}
	}
	got := receiveN(t, cons, 3)
	for i, want := range []string{"1", "2", "3"} {
		if string(got[i].Payload()) != want {
			t.Fatalf("message %d is %q, want %q", i, got[i].Payload(), want)
		}
	}
	st, err := ac.Topics().GetStats(mustTopic(t, topic))
	if err != nil || st.MsgCounterIn != 3 || st.DeDuplicationStatus != "Enabled" {
		t.Fatalf("stored %d messages, want 3; dedup %q (%v)", st.MsgCounterIn, st.DeDuplicationStatus, err)
	}
}

func TestPolicyMaxProducersConsumersAndAutoCreation(t *testing.T) {
	tb, ac := startAdmin(t)
	newNS(t, ac, "public/lim")
	ns := mustNS(t, "public/lim")
	if err := ac.Namespaces().SetMaxProducersPerTopic(ns, 1); err != nil {
		t.Fatal(err)
	}
	if err := ac.Namespaces().SetMaxConsumersPerTopic(ns, 1); err != nil {
		t.Fatal(err)
	}
	if n, err := ac.Namespaces().GetMaxProducersPerTopic(ns); err != nil || n != 1 {
		t.Fatalf("max producers %d %v", n, err)
	}
	c := tb.client(t)
	topic := "persistent://public/lim/t"
	_ = brokertest.Producer(t, c, pulsar.ProducerOptions{Topic: topic})
	if p2, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic}); err == nil {
		p2.Close()
		t.Fatal("second producer accepted over max_producers_per_topic=1")
	}
	_ = brokertest.Consumer(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if c2, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s2", Type: pulsar.Shared}); err == nil {
		c2.Close()
		t.Fatal("second consumer accepted over max_consumers_per_topic=1")
	}

	// Auto creation: partitioned with 2 partitions, then disallowed.
	newNS(t, ac, "public/auto")
	auto := mustNS(t, "public/auto")
	parts := 2
	if err := ac.Namespaces().SetTopicAutoCreation(auto, utils.TopicAutoCreationConfig{Allow: true, Type: utils.Partitioned, Partitions: &parts}); err != nil {
		t.Fatal(err)
	}
	pp, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/auto/p"})
	if err != nil {
		t.Fatal(err)
	}
	pp.Close()
	if md, err := ac.Topics().GetMetadata(mustTopic(t, "persistent://public/auto/p")); err != nil || md.Partitions != 2 {
		t.Fatalf("auto-created partitions %+v %v", md, err)
	}
	// The HTTP-lookup client's metadata query auto-creates too.
	if code, body := httpDo(t, tb, "GET", "/admin/v2/persistent/public/auto/q/partitions?checkAllowAutoCreation=true", ""); code != 200 || body != `{"partitions":2}` {
		t.Fatalf("HTTP partitions with auto creation: %d %q", code, body)
	}
	if err := ac.Namespaces().SetTopicAutoCreation(auto, utils.TopicAutoCreationConfig{Allow: false}); err != nil {
		t.Fatal(err)
	}
	if p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/auto/never"}); err == nil {
		p.Close()
		t.Fatal("topic auto-created although the namespace disallows it")
	}
}

func TestPolicyRetentionKeepsAckedLedgersUntilLimit(t *testing.T) {
	mcfg := mledger.Config{MaxEntriesPerLedger: 2, MinLedgerRolloverTime: -1, TrimInterval: -1, CursorPersistInterval: time.Millisecond}
	tb := startBrokerOpts(t, brokerOpts{mcfg: mcfg})
	ac := adminClient(t, tb)
	newNS(t, ac, "public/ret")
	// Keep up to 1 MB of consumed data.
	if err := ac.Namespaces().SetRetention("public/ret", utils.RetentionPolicies{RetentionTimeInMinutes: -1, RetentionSizeInMB: 1}); err != nil {
		t.Fatal(err)
	}
	if r, err := ac.Namespaces().GetRetention("public/ret"); err != nil || r.RetentionSizeInMB != 1 {
		t.Fatalf("retention %+v %v", r, err)
	}
	topic := "persistent://public/ret/t"
	c := tb.client(t)
	cons := brokertest.Consumer(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	p := brokertest.Producer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	payload := make([]byte, 100<<10)
	sendAck := func(n int) {
		for range n {
			if _, err := p.Send(ctxT(t), &pulsar.ProducerMessage{Payload: payload}); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range receiveN(t, cons, n) {
			if err := cons.Ack(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The factory hands out the managed ledger the topic has open.
	ml, err := tb.factory.Open(ctxT(t), topic, mcfg)
	if err != nil {
		t.Fatal(err)
	}
	consumed := func() bool {
		md := ml.Stats().Cursors[0].MarkDelete
		return md == ml.Stats().LastConfirmed
	}
	trimmedTo := func(maxEntries int64) bool {
		if err := ml.Trim(context.Background()); err != nil {
			t.Fatal(err)
		}
		return ml.Stats().NumberOfEntries <= maxEntries
	}
	// 4 x 100 KB acknowledged: below 1 MB, every ledger is kept.
	sendAck(4)
	waitUntil(t, "acks to reach the cursor", consumed)
	if err := ml.Cursor("s").Flush(ctxT(t)); err != nil { // trim uses the persisted mark-delete
		t.Fatal(err)
	}
	if trimmedTo(3) {
		t.Fatalf("retention did not keep the acked ledgers: %d entries left", ml.Stats().NumberOfEntries)
	}
	// 12 more: the oldest acked ledgers go until the topic fits in 1 MB.
	sendAck(12)
	waitUntil(t, "acks to reach the cursor", consumed)
	waitUntil(t, "trim down to the retention size", func() bool { return trimmedTo(12) })
	if s := ml.Stats(); s.TotalSize > 1<<20+200<<10 || s.NumberOfEntries < 8 {
		t.Fatalf("after trim: %d entries, %d bytes", s.NumberOfEntries, s.TotalSize)
	}
}

func TestPolicyMessageAgeQuotaHold(t *testing.T) {
	tb, ac := startAdmin(t)
	newNS(t, ac, "public/age")
	if err := ac.Namespaces().SetBacklogQuota("public/age", utils.NewBacklogQuota(-1, 1, utils.ProducerRequestHold), utils.MessageAge); err != nil {
		t.Fatal(err)
	}
	topic := "persistent://public/age/t"
	tn := subscribedTopic(t, ac, topic, "slow")
	c := tb.client(t)
	p := brokertest.Producer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true, SendTimeout: -1})
	if _, err := p.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte("old")}); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	// The quota is a time limit: the backlog ages past it 1 s after the
	// send at the latest (the message was stamped before Send returned).
	waitUntil(t, "the backlog to age past 1s", func() bool { return time.Since(sent) > 1100*time.Millisecond })
	done := make(chan error, 1)
	p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte("new")}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done <- err })
	waitUntil(t, "the send to be held", func() bool { return tb.HeldSends(topic) == 1 })
	if err := ac.Subscriptions().SkipMessages(tn, "slow", 1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctxT(t).Done():
		t.Fatal("held send not released after the old message was skipped")
	}
}
