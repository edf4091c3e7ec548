package broker

import (
	"fmt"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker/selector"
)

// keysIn returns n keys whose slots are in [lo, hi].
func keysIn(n, lo, hi int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		k := fmt.Sprintf("k%d", i)
		if s := selector.Slot([]byte(k)); s >= lo && s <= hi {
			out = append(out, k)
		}
	}
	return out
}

// TestE2EKeySharedAutoSplitThreeKeys: in the default auto-split mode two
// consumers share three keys spread over both halves of the hash range:
// both receive, each key stays on one consumer, in order.
func TestE2EKeySharedAutoSplitThreeKeys(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("ks")
	keys := []string{"alpha", "beta", "gamma"}
	var lower, upper int
	for _, k := range keys {
		if selector.Slot([]byte(k)) < selector.Slots/2 {
			lower++
		} else {
			upper++
		}
	}
	if lower == 0 || upper == 0 {
		t.Fatalf("test keys do not span both halves (%d/%d)", lower, upper)
	}
	var cs []pulsar.Consumer
	for i := 0; i < 2; i++ {
		cs = append(cs, mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.KeyShared,
			Name: fmt.Sprintf("c%d", i)}))
	}
	p := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	const n = 30
	sendAsyncAll(t, p, n, func(i int) *pulsar.ProducerMessage {
		return &pulsar.ProducerMessage{Key: keys[i%3], Payload: []byte(fmt.Sprint(i))}
	})
	owner := map[string]int{}
	last := map[string]int{}
	counts := make([]int, 2)
	receiveAcross(t, cs, n, func(i int, m pulsar.Message) {
		counts[i]++
		k := m.Key()
		if o, ok := owner[k]; ok && o != i {
			t.Errorf("key %s went to consumers %d and %d", k, o, i)
		}
		owner[k] = i
		var seq int
		fmt.Sscan(string(m.Payload()), &seq)
		if l, ok := last[k]; ok && seq < l {
			t.Errorf("key %s out of order: %d after %d", k, seq, l)
		}
		last[k] = seq
		cs[i].Ack(m)
	})
	t.Logf("three keys over two consumers: %v", counts)
	if counts[0] == 0 || counts[1] == 0 {
		t.Fatalf("a consumer received nothing: %v", counts)
	}
}

// TestE2EKeySharedStickyRanges: consumers declaring sticky hash ranges
// in their KeySharedMeta get exactly the keys of their ranges; a consumer
// whose range overlaps another's is refused.
func TestE2EKeySharedStickyRanges(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := newTopicName("sticky")
	sticky := func(lo, hi int) *pulsar.KeySharedPolicy {
		p, err := pulsar.NewKeySharedPolicySticky([]int{lo, hi})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	low := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.KeyShared, KeySharedPolicy: sticky(0, 32767)})
	high := mustConsumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.KeyShared, KeySharedPolicy: sticky(32768, 65535)})
	if c, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.KeyShared,
		KeySharedPolicy: sticky(30000, 40000)}); err == nil {
		c.Close()
		t.Fatal("a consumer with an overlapping sticky range was accepted")
	}
	keys := append(keysIn(3, 0, 32767), keysIn(3, 32768, 65535)...)
	p := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendAsyncAll(t, p, len(keys)*4, func(i int) *pulsar.ProducerMessage {
		return &pulsar.ProducerMessage{Key: keys[i%len(keys)], Payload: []byte("x")}
	})
	receiveAcross(t, []pulsar.Consumer{low, high}, len(keys)*4, func(i int, m pulsar.Message) {
		slot := selector.Slot([]byte(m.Key()))
		if (i == 0) != (slot <= 32767) {
			t.Errorf("key %s (slot %d) went to consumer %d", m.Key(), slot, i)
		}
	})
}
