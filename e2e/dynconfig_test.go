package e2e

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// TestDynamicConfigTakesEffect: Pulsar's dynamic keys that Magnetar
// reads once at start (dispatcherMaxReadBatchSize,
// maxNumPartitionsPerPartitionedTopic,
// brokerDeleteInactiveTopicsFrequencySeconds) change the running
// standalone through pulsaradmin's UpdateDynamicConfiguration, are
// answered by the values and runtime routes, and a dynamic key Magnetar
// does not read (brokerShutdownTimeoutMs) is stored as Pulsar stores it.
// dynAdmin returns a pulsaradmin client of p and a function storing a
// dynamic override through it, checked in the values and runtime
// answers.
func dynAdmin(t *testing.T, p *proc) (pulsaradmin.Client, func(k, v string)) {
	t.Helper()
	adm, err := pulsaradmin.NewClient(&pulsaradmin.Config{WebServiceURL: p.http})
	if err != nil {
		t.Fatal(err)
	}
	br := adm.Brokers()
	return adm, func(k, v string) {
		t.Helper()
		if err := br.UpdateDynamicConfiguration(k, v); err != nil {
			t.Fatalf("update %s=%s: %v", k, v, err)
		}
		vals, err := br.GetAllDynamicConfigurations()
		if err != nil || vals[k] != v {
			t.Fatalf("values after update %s=%s: %v %v", k, v, vals, err)
		}
		rt, err := br.GetRuntimeConfigurations()
		if err != nil || rt[k] != v {
			t.Fatalf("runtime after update %s=%s: %q %v", k, v, rt[k], err)
		}
	}
}

func TestDynamicConfigTakesEffect(t *testing.T) {
	// An hour between inactivity checks: no topic is deleted unless the
	// update below takes effect.
	p := startStandalone(t, t.TempDir(), "--delete-inactive-topics-frequency", "1h")
	adm, update := dynAdmin(t, p)
	br := adm.Brokers()
	c := p.client(t)
	ctx := context.Background()

	t.Run("dispatcherMaxReadBatchSize", func(t *testing.T) {
		// A Key_Shared subscription reads a whole batch whatever the
		// consumer's permits: with one permit, the cursor's read
		// position moves on by the batch size after the first delivery.
		const topic = "persistent://public/default/dyn-batch"
		prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		var first pulsar.MessageID
		for i := range 50 {
			id, err := prod.Send(ctx, &pulsar.ProducerMessage{Key: "k", Payload: []byte(strconv.Itoa(i))})
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = id
			}
		}
		readAhead := func(sub string) int64 {
			t.Helper()
			cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub, Type: pulsar.KeyShared,
				SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, ReceiverQueueSize: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer cons.Close()
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if _, err := cons.Receive(rctx); err != nil { // the first read happened
				t.Fatal(err)
			}
			tn, _ := utils.GetTopicName(topic)
			st, err := adm.Topics().GetInternalStats(*tn)
			if err != nil {
				t.Fatal(err)
			}
			rp := st.Cursors[sub].ReadPosition
			_, entry, _ := strings.Cut(rp, ":")
			e, err := strconv.ParseInt(entry, 10, 64)
			if err != nil {
				t.Fatalf("read position %q: %v", rp, err)
			}
			return e - first.EntryID()
		}
		if got := readAhead("before"); got != 50 {
			t.Fatalf("with the default batch of 100 the first read took %d entries, want all 50", got)
		}
		update("dispatcherMaxReadBatchSize", "5")
		// Reads of 5 move the read position in steps of 5; the flow the
		// client sends after its Receive may let a second read land
		// before the stats call, so 10 (or more) is as right as 5.
		if got := readAhead("after"); got <= 0 || got >= 50 || got%5 != 0 {
			t.Fatalf("with dispatcherMaxReadBatchSize=5 the reads took %d entries, want steps of 5", got)
		}
		if err := br.DeleteDynamicConfiguration("dispatcherMaxReadBatchSize"); err != nil {
			t.Fatal(err)
		}
		if got := readAhead("deleted"); got != 50 {
			t.Fatalf("after the override's removal the first read took %d entries, want 50 again", got)
		}
		for _, v := range []string{"0", "-1", "many"} {
			wantStatus(t, br.UpdateDynamicConfiguration("dispatcherMaxReadBatchSize", v), http.StatusPreconditionFailed)
		}
	})

	t.Run("maxNumPartitionsPerPartitionedTopic", func(t *testing.T) {
		tn := func(s string) utils.TopicName {
			n, _ := utils.GetTopicName("persistent://public/default/" + s)
			return *n
		}
		update("maxNumPartitionsPerPartitionedTopic", "3")
		wantStatus(t, adm.Topics().Create(tn("dyn-parts-4"), 4), http.StatusPreconditionFailed)
		if err := adm.Topics().Create(tn("dyn-parts-3"), 3); err != nil {
			t.Fatal(err)
		}
		wantStatus(t, adm.Topics().Update(tn("dyn-parts-3"), 4), http.StatusPreconditionFailed)
		// 0 is Pulsar's "no limit" (not Magnetar's default of 10,000).
		update("maxNumPartitionsPerPartitionedTopic", "0")
		if err := adm.Topics().Create(tn("dyn-parts-4"), 4); err != nil {
			t.Fatal(err)
		}
		if err := adm.Topics().Create(tn("dyn-parts-big"), 10001); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("brokerShutdownTimeoutMs", func(t *testing.T) {
		// Pulsar marks it dynamic; Magnetar has no such timeout (a
		// SIGTERM drains and stops), so the value is stored and
		// answered, as Pulsar stores it, without effect.
		update("brokerShutdownTimeoutMs", "1000")
		names, err := br.GetDynamicConfigurationNames()
		if err != nil || !slices.Contains(names, "brokerShutdownTimeoutMs") || !slices.Contains(names, "loadBalancerSheddingIntervalMinutes") {
			t.Fatalf("names: %v %v", names, err)
		}
		wantStatus(t, br.UpdateDynamicConfiguration("brokerShutdownTimeoutMs", "soon"), http.StatusPreconditionFailed)
		wantStatus(t, br.UpdateDynamicConfiguration("maxUnackedMessagesPerConsumer", "1"), http.StatusPreconditionFailed)
	})

	t.Run("loadBalancerNamespaceBundleMaxTopics", func(t *testing.T) {
		// The standalone's leader splits a bundle with more topics than
		// the threshold (default 1000) at every shedding pass: lowered
		// to 1, the one bundle of a namespace holding two loaded topics
		// is split at the next pass.
		if err := adm.Namespaces().CreateNsWithNumBundles("public/dyn-lb", 1); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"a", "b"} {
			prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/dyn-lb/" + name})
			if err != nil {
				t.Fatal(err)
			}
			defer prod.Close()
		}
		bundles := func() int {
			var b struct {
				Boundaries []string `json:"boundaries"`
			}
			getJSON(t, p.http+"/admin/v2/namespaces/public/dyn-lb/bundles", &b)
			return len(b.Boundaries) - 1
		}
		if n := bundles(); n != 1 {
			t.Fatalf("%d bundles at start", n)
		}
		update("loadBalancerNamespaceBundleMaxTopics", "1")
		update("loadBalancerSheddingIntervalMinutes", "1") // the next pass a minute from now
		deadline := time.Now().Add(3 * time.Minute)
		for bundles() == 1 {
			if time.Now().After(deadline) {
				t.Fatal("the bundle of two topics was not split with loadBalancerNamespaceBundleMaxTopics=1")
			}
			time.Sleep(200 * time.Millisecond)
		}
		wantStatus(t, br.UpdateDynamicConfiguration("loadBalancerSheddingIntervalMinutes", "0"), http.StatusPreconditionFailed)
	})

	t.Run("peekWithoutAutoSubscriptionCreation", func(t *testing.T) {
		// A peek creates the subscription it names at the earliest
		// message (apache/pulsar#8182), unless automatic subscription
		// creation is off for the topic: then 412 (apache/pulsar#26279).
		const topic = "persistent://public/default/dyn-peek"
		tn, _ := utils.GetTopicName(topic)
		prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("m")}); err != nil {
			t.Fatal(err)
		}
		update("allowAutoSubscriptionCreation", "false")
		_, err = adm.Subscriptions().PeekMessages(*tn, "peeker", 1)
		wantStatus(t, err, http.StatusPreconditionFailed)
		if subs, err := adm.Subscriptions().List(*tn); err != nil || slices.Contains(subs, "peeker") {
			t.Fatalf("subscriptions after a refused peek: %v %v", subs, err)
		}
		update("allowAutoSubscriptionCreation", "true")
		msgs, err := adm.Subscriptions().PeekMessages(*tn, "peeker", 1)
		if err != nil || len(msgs) != 1 || string(msgs[0].Payload) != "m" {
			t.Fatalf("peek with creation allowed: %v %v", msgs, err)
		}
		if subs, err := adm.Subscriptions().List(*tn); err != nil || !slices.Contains(subs, "peeker") {
			t.Fatalf("the peek did not create its subscription: %v %v", subs, err)
		}
	})

	t.Run("brokerDeleteInactiveTopicsFrequencySeconds", func(t *testing.T) {
		const topic = "persistent://public/default/dyn-inactive"
		prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		if err != nil {
			t.Fatal(err)
		}
		prod.Close() // loaded, no producer, no subscription: inactive
		wantStatus(t, br.UpdateDynamicConfiguration("brokerDeleteInactiveTopicsFrequencySeconds", "0"), http.StatusPreconditionFailed)
		update("brokerDeleteInactiveTopicsFrequencySeconds", "1")
		// The maximum inactivity is not set, so it is the frequency (1s):
		// the next check, a second away, deletes the topic.
		ns, _ := utils.GetNamespaceName("public/default")
		deadline := time.Now().Add(60 * time.Second)
		for {
			parted, plain, err := adm.Topics().List(*ns)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(parted, topic) && !slices.Contains(plain, topic) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not deleted a minute after the check frequency became 1s: %v", topic, plain)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}
