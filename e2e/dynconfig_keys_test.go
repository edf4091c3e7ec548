package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/magnetar-mq/magnetar/internal/testenv"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// TestDynamicKeySharedAndAutoTopicType: subscriptionKeySharedEnable,
// subscriptionTypesEnabled and
// allowAutoTopicCreationType/defaultNumPartitions, read from the
// configuration file and changed on the running standalone through
// pulsaradmin, do what they do in Pulsar.
func TestDynamicKeySharedAndAutoTopicType(t *testing.T) {
	conf := testenv.WriteFile(t, "test.conf", "defaultNumPartitions=2\n")
	p := startStandalone(t, t.TempDir(), "--config", conf)
	adm, set := dynAdmin(t, p)
	br := adm.Brokers()
	unset := func(k string) {
		t.Helper()
		if err := br.DeleteDynamicConfiguration(k); err != nil {
			t.Fatalf("delete %s: %v", k, err)
		}
	}
	c := p.clientWithTimeout(t, 15*time.Second)
	ctx := context.Background()

	t.Run("subscriptionKeySharedEnable", func(t *testing.T) {
		const topic = "persistent://public/default/dyn-keyshared"
		subscribe := func(sub string, typ pulsar.SubscriptionType) (pulsar.Consumer, error) {
			return c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub, Type: typ})
		}
		attached, err := subscribe("ks", pulsar.KeyShared)
		if err != nil {
			t.Fatal(err)
		}
		defer attached.Close()
		prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()

		set("subscriptionKeySharedEnable", "false")
		const pulsarMsg = "Key_Shared subscription is disabled by broker."
		for _, sub := range []string{"ks", "ks-new"} { // an existing subscription and a new one
			cons, err := subscribe(sub, pulsar.KeyShared)
			if err == nil {
				cons.Close()
				t.Fatalf("Key_Shared subscribe to %s admitted with subscriptionKeySharedEnable=false", sub)
			}
			if !strings.Contains(err.Error(), pulsarMsg) || !strings.Contains(err.Error(), "NotAllowed") {
				t.Fatalf("Key_Shared subscribe to %s: %v, want NotAllowedError %q", sub, err, pulsarMsg)
			}
		}
		shared, err := subscribe("sh", pulsar.Shared)
		if err != nil {
			t.Fatalf("Shared subscribe refused: %v", err)
		}
		shared.Close()
		// The consumer attached before the update still receives.
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Key: "k", Payload: []byte("after")}); err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if m, err := attached.Receive(rctx); err != nil || string(m.Payload()) != "after" {
			t.Fatalf("attached Key_Shared consumer: %v", err)
		}

		unset("subscriptionKeySharedEnable")
		cons, err := subscribe("ks-new", pulsar.KeyShared)
		if err != nil {
			t.Fatalf("Key_Shared subscribe after the override's removal: %v", err)
		}
		cons.Close()
	})

	t.Run("subscriptionTypesEnabled", func(t *testing.T) {
		const topic = "persistent://public/default/dyn-subtypes"
		subscribe := func(sub string, typ pulsar.SubscriptionType) (pulsar.Consumer, error) {
			return c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub, Type: typ})
		}
		attached, err := subscribe("sh", pulsar.Shared)
		if err != nil {
			t.Fatal(err)
		}
		defer attached.Close()
		prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()

		set("subscriptionTypesEnabled", "Exclusive,Failover")
		pulsarMsg := "Topic[{" + topic + "}] doesn't support Shared sub type!"
		for _, sub := range []string{"sh", "sh-new"} { // an existing subscription and a new one
			cons, err := subscribe(sub, pulsar.Shared)
			if err == nil {
				cons.Close()
				t.Fatalf("Shared subscribe to %s admitted with subscriptionTypesEnabled=Exclusive,Failover", sub)
			}
			if !strings.Contains(err.Error(), pulsarMsg) || !strings.Contains(err.Error(), "NotAllowed") {
				t.Fatalf("Shared subscribe to %s: %v, want NotAllowedError %q", sub, err, pulsarMsg)
			}
		}
		for _, typ := range []pulsar.SubscriptionType{pulsar.Exclusive, pulsar.Failover} {
			cons, err := subscribe("allowed", typ)
			if err != nil {
				t.Fatalf("subscribe of type %v refused: %v", typ, err)
			}
			cons.Close()
		}
		// The consumer attached before the update still receives.
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("after")}); err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if m, err := attached.Receive(rctx); err != nil || string(m.Payload()) != "after" {
			t.Fatalf("attached Shared consumer: %v", err)
		}

		set("subscriptionTypesEnabled", "Exclusive,Shared,Failover,Key_Shared")
		cons, err := subscribe("sh-new", pulsar.Shared)
		if err != nil {
			t.Fatalf("Shared subscribe after restoring every type: %v", err)
		}
		cons.Close()
		unset("subscriptionTypesEnabled")
	})

	t.Run("allowAutoTopicCreationType", func(t *testing.T) {
		partitions := func(topic string) int {
			t.Helper()
			prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
			if err != nil {
				t.Fatalf("producer on %s: %v", topic, err)
			}
			prod.Close()
			tn, err := utils.GetTopicName(topic)
			if err != nil {
				t.Fatal(err)
			}
			md, err := adm.Topics().GetMetadata(*tn)
			if err != nil {
				t.Fatalf("metadata of %s: %v", topic, err)
			}
			return md.Partitions
		}
		if n := partitions("persistent://public/default/dyn-auto-0"); n != 0 {
			t.Fatalf("default type: %d partitions, want a non-partitioned topic", n)
		}
		set("allowAutoTopicCreationType", "partitioned")
		if n := partitions("persistent://public/default/dyn-auto-file"); n != 2 {
			t.Fatalf("partitioned with the file's defaultNumPartitions=2: %d partitions", n)
		}
		set("defaultNumPartitions", "3")
		if n := partitions("persistent://public/default/dyn-auto-3"); n != 3 {
			t.Fatalf("partitioned, defaultNumPartitions=3: %d partitions", n)
		}
		// A namespace override wins over the broker's type.
		if err := adm.Namespaces().CreateNamespace("public/dyn-np"); err != nil {
			t.Fatal(err)
		}
		ns, _ := utils.GetNamespaceName("public/dyn-np")
		if err := adm.Namespaces().SetTopicAutoCreation(*ns, utils.TopicAutoCreationConfig{Allow: true, Type: utils.NonPartitioned}); err != nil {
			t.Fatal(err)
		}
		if n := partitions("persistent://public/dyn-np/t"); n != 0 {
			t.Fatalf("namespace override non-partitioned: %d partitions", n)
		}
		unset("allowAutoTopicCreationType")
		if n := partitions("persistent://public/default/dyn-auto-again"); n != 0 {
			t.Fatalf("after the override's removal: %d partitions, want a non-partitioned topic", n)
		}
	})
}
