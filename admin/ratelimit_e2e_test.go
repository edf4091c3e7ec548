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
)

// The rate limit tests measure one 10 s window each (after a warm-up
// that drains the bucket's initial burst) and run in parallel, each on
// its own broker.

const rateWindow = 10 * time.Second

var policyTopicSeq atomic.Int64

func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1000000, policyTopicSeq.Add(1))
}

// mustHTTP runs a request and fails unless it answers want.
func mustHTTP(t testing.TB, tb *testBroker, method, path, body string, want int) string {
	t.Helper()
	code, out := httpDo(t, tb, method, path, body)
	if code != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, code, out, want)
	}
	return out
}

// newNamespace creates public/<unique> and returns it.
func newNamespace(t testing.TB, tb *testBroker) string {
	t.Helper()
	ns := "public/" + uniqueName("ns")
	mustHTTP(t, tb, "PUT", "/admin/v2/namespaces/"+ns, "", http.StatusNoContent)
	return ns
}

func within(got, want, tol float64) bool {
	return got >= want*(1-tol) && got <= want*(1+tol)
}

// publishFor sends messages of size bytes as fast as the broker accepts
// them for warm+window and returns how many were acknowledged inside the
// window.
func publishFor(t *testing.T, p pulsar.Producer, size int, warm, window time.Duration) int64 {
	t.Helper()
	payload := make([]byte, size)
	start := time.Now()
	from, to := start.Add(warm), start.Add(warm+window)
	var inWindow atomic.Int64
	var failed atomic.Int64
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

func TestE2EPublishRateTopicMessages(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10 s (or one-minute) measurement: not in the -short tier")
	}
	t.Parallel()
	tb := startBroker(t, nil)
	topic := "persistent://public/default/" + uniqueName("pubrate")
	rest := "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://")
	mustHTTP(t, tb, "PUT", rest, "", http.StatusNoContent)
	const limit = 200
	mustHTTP(t, tb, "POST", rest+"/publishRate", fmt.Sprintf(`{"publishThrottlingRateInMsg":%d,"publishThrottlingRateInByte":-1}`, limit), http.StatusNoContent)
	p, err := tb.client(t).CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true, MaxPendingMessages: 500})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	n := publishFor(t, p, 100, 2*time.Second, rateWindow)
	rate := float64(n) / rateWindow.Seconds()
	t.Logf("topic publish rate limit %d msg/s: measured %.1f msg/s", limit, rate)
	if !within(rate, limit, 0.2) {
		t.Fatalf("measured %.1f msg/s, limit %d", rate, limit)
	}
	st, err := tb.TopicStats(context.Background(), topic)
	if err != nil || st.PublishRateLimitedTimes == 0 {
		t.Fatalf("publishRateLimitedTimes = %d, %v; want > 0", st.PublishRateLimitedTimes, err)
	}
}

func TestE2EPublishRateNamespaceBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10 s (or one-minute) measurement: not in the -short tier")
	}
	t.Parallel()
	tb := startBroker(t, nil)
	ns := newNamespace(t, tb)
	const limit = 100 << 10 // bytes/s; 1 KiB messages: 100 msg/s
	mustHTTP(t, tb, "POST", "/admin/v2/namespaces/"+ns+"/publishRate", fmt.Sprintf(`{"publishThrottlingRateInMsg":-1,"publishThrottlingRateInByte":%d}`, limit), http.StatusNoContent)
	if out := mustHTTP(t, tb, "GET", "/admin/v2/namespaces/"+ns+"/publishRate", "", http.StatusOK); !strings.Contains(out, fmt.Sprint(limit)) {
		t.Fatalf("GET publishRate = %s", out)
	}
	topic := "persistent://" + ns + "/" + uniqueName("t")
	p, err := tb.client(t).CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true, MaxPendingMessages: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	n := publishFor(t, p, 1<<10, 2*time.Second, rateWindow)
	st, err := tb.TopicStats(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	entry := float64(st.BytesInCounter) / float64(st.MsgInCounter) // payload + metadata
	rate := float64(n) * entry / rateWindow.Seconds()
	t.Logf("namespace publish rate limit %d B/s: measured %.0f B/s (%d msgs of %.0f B)", limit, rate, n, entry)
	if !within(rate, limit, 0.2) {
		t.Fatalf("measured %.0f B/s, limit %d", rate, limit)
	}
}

// fill publishes n small messages without limits.
func fill(t *testing.T, cl pulsar.Client, topic string, n int) {
	t.Helper()
	p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := 0; i < n; i++ {
		wg.Add(1)
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i))}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
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
func consumeFor(t *testing.T, c pulsar.Consumer, warm, window time.Duration) int {
	t.Helper()
	start := time.Now()
	from, to := start.Add(warm), start.Add(warm+window)
	n := 0
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

func TestE2EDispatchRateTopic(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10 s (or one-minute) measurement: not in the -short tier")
	}
	t.Parallel()
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := "persistent://public/default/" + uniqueName("disp")
	c, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const limit = 150
	rest := "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://")
	mustHTTP(t, tb, "POST", rest+"/dispatchRate", fmt.Sprintf(`{"dispatchThrottlingRateInMsg":%d,"dispatchThrottlingRateInByte":-1,"ratePeriodInSecond":1}`, limit), http.StatusNoContent)
	fill(t, cl, topic, 3000)
	n := consumeFor(t, c, 2*time.Second, rateWindow)
	rate := float64(n) / rateWindow.Seconds()
	t.Logf("topic dispatch rate limit %d msg/s: measured %.1f msg/s", limit, rate)
	if !within(rate, limit, 0.2) {
		t.Fatalf("measured %.1f msg/s, limit %d", rate, limit)
	}
}

func TestE2ESubscriptionDispatchRateNamespace(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10 s (or one-minute) measurement: not in the -short tier")
	}
	t.Parallel()
	tb := startBroker(t, nil)
	cl := tb.client(t)
	ns := newNamespace(t, tb)
	const limit = 100
	mustHTTP(t, tb, "POST", "/admin/v2/namespaces/"+ns+"/subscriptionDispatchRate", fmt.Sprintf(`{"dispatchThrottlingRateInMsg":%d,"dispatchThrottlingRateInByte":-1,"ratePeriodInSecond":1}`, limit), http.StatusNoContent)
	topic := "persistent://" + ns + "/" + uniqueName("t")
	var cs []pulsar.Consumer
	for _, sub := range []string{"a", "b"} {
		c, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cs = append(cs, c)
	}
	fill(t, cl, topic, 2000)
	counts := make([]int, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[i] = consumeFor(t, c, 2*time.Second, rateWindow)
		}()
	}
	wg.Wait()
	for i, n := range counts {
		rate := float64(n) / rateWindow.Seconds()
		t.Logf("subscription %d dispatch rate limit %d msg/s: measured %.1f msg/s", i, limit, rate)
		if !within(rate, limit, 0.2) {
			t.Fatalf("subscription %d: measured %.1f msg/s, limit %d (each subscription has its own limit)", i, rate, limit)
		}
	}
}

func TestE2ESubscribeRateTopic(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10 s (or one-minute) measurement: not in the -short tier")
	}
	t.Parallel()
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := "persistent://public/default/" + uniqueName("subrate")
	mustHTTP(t, tb, "PUT", "/admin/v2/persistent/"+strings.TrimPrefix(topic, "persistent://"), "", http.StatusNoContent)
	const limit = 5 // per second per consumer
	rest := "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://")
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
