package admin

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/brokeradmin"
)

// The rate limit tests measure one 10 s window each (after a 2 s warm-up
// that drains the bucket's initial burst), ±20 %, and run in parallel,
// each on its own broker.

const rateWindow = 10 * time.Second

// rateCase is one rate limit set through the admin API and measured
// with a real client.
type rateCase struct {
	name string
	// policy is the endpoint (publishRate, dispatchRate,
	// subscriptionDispatchRate), set on the namespace or (topicLevel)
	// on the topic.
	policy     string
	topicLevel bool
	// rate is the limit in messages per second; with bytes the limit is
	// on bytes: rate × the stored size of one entry.
	rate  int
	bytes bool
	// size is the payload of each message.
	size int
	// subs is the number of subscriptions measured at once (each has its
	// own limit); 0 measures publishing.
	subs int
}

// TestE2ERateLimits: publish rates (messages and bytes, namespace and
// topic), dispatch rates (messages and bytes) and subscription dispatch
// rates (each subscription its own budget) hold within 20 % over a 10 s
// window; GET answers the limit set, and a throttled topic counts its
// rate-limited publishes.
func TestE2ERateLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("10 s measurements: not in the -short tier")
	}
	for _, c := range []rateCase{
		{name: "publish-topic-messages", policy: "publishRate", topicLevel: true, rate: 200, size: 100},
		{name: "publish-namespace-messages", policy: "publishRate", rate: 150, size: 100},
		{name: "publish-namespace-bytes", policy: "publishRate", rate: 100, bytes: true, size: 1 << 10},
		{name: "publish-topic-bytes", policy: "publishRate", topicLevel: true, rate: 40, bytes: true, size: 2 << 10},
		{name: "dispatch-topic-messages", policy: "dispatchRate", topicLevel: true, rate: 150, size: 4, subs: 1},
		{name: "dispatch-topic-bytes", policy: "dispatchRate", topicLevel: true, rate: 100, bytes: true, size: 4, subs: 1},
		{name: "subscription-dispatch-namespace", policy: "subscriptionDispatchRate", rate: 100, size: 4, subs: 2},
		{name: "subscription-dispatch-topic", policy: "subscriptionDispatchRate", topicLevel: true, rate: 120, size: 4, subs: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t)
		})
	}
}

func (c rateCase) run(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	ns := newNamespace(t, tb)
	local := uniqueName("t")
	topic := "persistent://" + ns + "/" + local
	path := "/admin/v2/namespaces/" + ns + "/" + c.policy
	if c.topicLevel {
		mustHTTP(t, tb, "PUT", "/admin/v2/persistent/"+ns+"/"+local, "", http.StatusNoContent)
		path = "/admin/v2/persistent/" + ns + "/" + local + "/" + c.policy
	}
	consumers := make([]pulsar.Consumer, c.subs)
	for i := range consumers {
		consumers[i] = brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: fmt.Sprintf("s%d", i),
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	}
	// Unlimited yet: a backlog to dispatch, or one message that gives
	// the stored size of an entry.
	n := 1
	if c.subs > 0 {
		n = 3000
	}
	fill(t, cl, topic, n, c.size)
	entry := entrySize(t, tb, topic)
	msgs, bytes := c.rate, -1
	limit := float64(c.rate)
	if c.bytes {
		msgs, bytes = -1, int(float64(c.rate)*entry)
		limit = float64(bytes)
	}
	body := fmt.Sprintf(`{"publishThrottlingRateInMsg":%d,"publishThrottlingRateInByte":%d}`, msgs, bytes)
	if c.subs > 0 {
		body = fmt.Sprintf(`{"dispatchThrottlingRateInMsg":%d,"dispatchThrottlingRateInByte":%d,"ratePeriodInSecond":1}`, msgs, bytes)
	}
	mustHTTP(t, tb, "POST", path, body, http.StatusNoContent)
	if out := mustHTTP(t, tb, "GET", path, "", http.StatusOK); !strings.Contains(out, fmt.Sprint(max(msgs, bytes))) {
		t.Fatalf("GET %s = %s, want the limit %d", c.policy, out, max(msgs, bytes))
	}
	unit := "msg/s"
	if c.bytes {
		unit = "B/s"
	}
	check := func(who string, n int64) {
		rate := float64(n) / rateWindow.Seconds()
		if c.bytes {
			rate *= entry
		}
		t.Logf("%s: limit %.0f %s, measured %.1f %s (%d messages of %.0f B stored)", who, limit, unit, rate, unit, n, entry)
		if !within(rate, limit, 0.2) {
			t.Errorf("%s: measured %.1f %s, limit %.0f", who, rate, unit, limit)
		}
	}
	if c.subs == 0 {
		p := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true, MaxPendingMessages: 500})
		check("publish", publishFor(t, p, c.size, 2*time.Second, rateWindow))
		st, err := brokeradmin.For(tb.Broker).Reads.TopicStats(context.Background(), topic)
		if err != nil || st.PublishRateLimitedTimes == 0 {
			t.Fatalf("publishRateLimitedTimes = %d, %v; want > 0", st.PublishRateLimitedTimes, err)
		}
		return
	}
	counts := make([]int64, len(consumers))
	var wg sync.WaitGroup
	for i, cons := range consumers {
		wg.Go(func() { counts[i] = consumeFor(t, cons, 2*time.Second, rateWindow) })
	}
	wg.Wait()
	for i, n := range counts {
		check(fmt.Sprintf("subscription s%d", i), n)
	}
}

// entrySize is the stored size of topic's entries so far (payload and
// metadata), on average.
func entrySize(t *testing.T, tb *testBroker, topic string) float64 {
	t.Helper()
	st, err := brokeradmin.For(tb.Broker).Reads.TopicStats(context.Background(), topic)
	if err != nil || st.MsgInCounter == 0 {
		t.Fatalf("stats of %s: %+v, %v", topic, st, err)
	}
	return float64(st.BytesInCounter) / float64(st.MsgInCounter)
}

// publishFor sends messages of size bytes as fast as the broker accepts
// them for warm+window and returns how many were acknowledged inside the
// window.
func publishFor(t *testing.T, p pulsar.Producer, size int, warm, window time.Duration) int64 {
	t.Helper()
	payload := make([]byte, size)
	start := time.Now()
	from, to := start.Add(warm), start.Add(warm+window)
	var inWindow, failed atomic.Int64
	var wg sync.WaitGroup
	for time.Now().Before(to) {
		wg.Add(1)
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			defer wg.Done()
			if err != nil {
				failed.Add(1)
				return
			}
			if now := time.Now(); now.After(from) && now.Before(to) {
				inWindow.Add(1)
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d sends failed", n)
	}
	return inWindow.Load()
}

// fill publishes n messages of size bytes without limits.
func fill(t *testing.T, cl pulsar.Client, topic string, n, size int) {
	t.Helper()
	p := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range n {
		wg.Add(1)
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: make([]byte, size)}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				failed.Add(1)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d fill sends failed", failed.Load())
	}
}

// consumeFor receives (and acks) for warm+window and returns how many
// messages arrived inside the window.
func consumeFor(t *testing.T, c pulsar.Consumer, warm, window time.Duration) int64 {
	t.Helper()
	start := time.Now()
	from, to := start.Add(warm), start.Add(warm+window)
	var n int64
	for {
		ctx, cancel := context.WithDeadline(context.Background(), to)
		m, err := c.Receive(ctx)
		cancel()
		if err != nil {
			return n
		}
		c.Ack(m)
		if now := time.Now(); now.After(from) && now.Before(to) {
			n++
		}
	}
}

// TestE2ESubscribeRateTopic: a topic's subscribeRate refuses a consumer
// that subscribes more often than its limit, and lets the limit through.
func TestE2ESubscribeRateTopic(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10 s measurement: not in the -short tier")
	}
	t.Parallel()
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic, rest := newTopic(t, tb, "subrate")
	const limit = 5 // per second per consumer
	mustHTTP(t, tb, "POST", rest+"/subscribeRate", fmt.Sprintf(`{"subscribeThrottlingRatePerConsumer":%d,"ratePeriodInSecond":1}`, limit), http.StatusNoContent)
	start := time.Now()
	warm := 2 * time.Second
	from, to := start.Add(warm), start.Add(warm+rateWindow)
	ok, refused := 0, 0
	for time.Now().Before(to) {
		c, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Name: "same-consumer"})
		now := time.Now()
		if err != nil {
			if !strings.Contains(err.Error(), "TooManyRequests") && !strings.Contains(err.Error(), "subscribe rate") {
				t.Fatalf("subscribe: %v", err)
			}
			if now.After(from) {
				refused++
			}
			time.Sleep(20 * time.Millisecond) // pace the retries (50/s, ten times the limit)
			continue
		}
		c.Close()
		if now.After(from) && now.Before(to) {
			ok++
		}
	}
	rate := float64(ok) / rateWindow.Seconds()
	t.Logf("subscribe rate limit %d/s per consumer: measured %.1f/s (%d refused)", limit, rate, refused)
	if !within(rate, limit, 0.2) || refused == 0 {
		t.Fatalf("measured %.1f subscribes/s with %d refused, limit %d", rate, refused, limit)
	}
}
