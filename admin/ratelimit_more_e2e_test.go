package admin

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// The rate limits the other file does not measure: publish messages per
// namespace, publish bytes per topic, dispatch bytes per topic and the
// topic-level subscription dispatch rate. Same method: one 10 s window
// after a 2 s warm-up, ±20 %.

func TestE2EPublishRateNamespaceMessages(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10 s measurement: not in the -short tier")
	}
	t.Parallel()
	tb := startBroker(t, nil)
	ns := newNamespace(t, tb)
	const limit = 150
	mustHTTP(t, tb, "POST", "/admin/v2/namespaces/"+ns+"/publishRate", fmt.Sprintf(`{"publishThrottlingRateInMsg":%d,"publishThrottlingRateInByte":-1}`, limit), http.StatusNoContent)
	topic := "persistent://" + ns + "/" + uniqueName("t")
	p, err := tb.client(t).CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true, MaxPendingMessages: 500})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	n := publishFor(t, p, 100, 2*time.Second, rateWindow)
	rate := float64(n) / rateWindow.Seconds()
	t.Logf("namespace publish rate limit %d msg/s: measured %.1f msg/s", limit, rate)
	if !within(rate, limit, 0.2) {
		t.Fatalf("measured %.1f msg/s, limit %d", rate, limit)
	}
}

func TestE2EPublishRateTopicBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10 s measurement: not in the -short tier")
	}
	t.Parallel()
	tb := startBroker(t, nil)
	topic := "persistent://public/default/" + uniqueName("pubbytes")
	rest := "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://")
	mustHTTP(t, tb, "PUT", rest, "", http.StatusNoContent)
	const limit = 80 << 10 // bytes/s; 2 KiB messages: ~40 msg/s
	mustHTTP(t, tb, "POST", rest+"/publishRate", fmt.Sprintf(`{"publishThrottlingRateInMsg":-1,"publishThrottlingRateInByte":%d}`, limit), http.StatusNoContent)
	p, err := tb.client(t).CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true, MaxPendingMessages: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	n := publishFor(t, p, 2<<10, 2*time.Second, rateWindow)
	st, err := tb.TopicStats(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	entry := float64(st.BytesInCounter) / float64(st.MsgInCounter)
	rate := float64(n) * entry / rateWindow.Seconds()
	t.Logf("topic publish rate limit %d B/s: measured %.0f B/s (%d msgs of %.0f B)", limit, rate, n, entry)
	if !within(rate, limit, 0.2) {
		t.Fatalf("measured %.0f B/s, limit %d", rate, limit)
	}
}

func TestE2EDispatchRateTopicBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10 s measurement: not in the -short tier")
	}
	t.Parallel()
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := "persistent://public/default/" + uniqueName("dispbytes")
	c, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// fill's messages are the decimal numbers 0..2999 (1-4 bytes of
	// payload); the limit is on the bytes dispatched, counted as stored.
	fill(t, cl, topic, 3000)
	st, err := tb.TopicStats(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	entry := float64(st.BytesInCounter) / float64(st.MsgInCounter)
	limit := int(100 * entry) // about 100 msg/s
	rest := "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://")
	mustHTTP(t, tb, "POST", rest+"/dispatchRate", fmt.Sprintf(`{"dispatchThrottlingRateInMsg":-1,"dispatchThrottlingRateInByte":%d,"ratePeriodInSecond":1}`, limit), http.StatusNoContent)
	n := consumeFor(t, c, 2*time.Second, rateWindow)
	rate := float64(n) * entry / rateWindow.Seconds()
	t.Logf("topic dispatch rate limit %d B/s: measured %.0f B/s (%d msgs of %.1f B)", limit, rate, n, entry)
	if !within(rate, float64(limit), 0.2) {
		t.Fatalf("measured %.0f B/s, limit %d", rate, limit)
	}
}

func TestE2ESubscriptionDispatchRateTopic(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10 s measurement: not in the -short tier")
	}
	t.Parallel()
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := "persistent://public/default/" + uniqueName("subdisp")
	rest := "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://")
	mustHTTP(t, tb, "PUT", rest, "", http.StatusNoContent)
	const limit = 120
	mustHTTP(t, tb, "POST", rest+"/subscriptionDispatchRate", fmt.Sprintf(`{"dispatchThrottlingRateInMsg":%d,"dispatchThrottlingRateInByte":-1,"ratePeriodInSecond":1}`, limit), http.StatusNoContent)
	// Two subscriptions, each limited on its own.
	cs := make([]pulsar.Consumer, 2)
	for i := range cs {
		c, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: fmt.Sprintf("s%d", i), SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cs[i] = c
	}
	fill(t, cl, topic, 3000)
	counts := make([]int, len(cs))
	done := make(chan struct{})
	for i, c := range cs {
		go func() {
			defer func() { done <- struct{}{} }()
			counts[i] = consumeFor(t, c, 2*time.Second, rateWindow)
		}()
	}
	for range cs {
		<-done
	}
	for i, n := range counts {
		rate := float64(n) / rateWindow.Seconds()
		t.Logf("subscription s%d: limit %d msg/s, measured %.1f msg/s", i, limit, rate)
		if !within(rate, limit, 0.2) {
			t.Fatalf("subscription s%d: measured %.1f msg/s, limit %d", i, rate, limit)
		}
	}
}
