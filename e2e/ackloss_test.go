package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// payload70k is message i's body: its index and filler that differs per
// message, so a wrong or truncated delivery cannot match.
func payload70k(i int) string {
	return fmt.Sprintf("m-%06d-%s", i, strings.Repeat(string(rune('a'+i%26)), 20+i%13))
}

// TestStandaloneIndividualAcksPastEntry65535: 70,000 unbatched messages
// make one ledger of 70,000 entries (the minimum rollover time keeps it
// open); consumed with individual acks, with a kill -9 and restart in the
// middle, every message arrives byte for byte and the backlog ends at 0.
// Before the ack-state fix 3,500 messages past entry 65,535 never arrived
// and mark-delete read L:4294967295.
func TestStandaloneIndividualAcksPastEntry65535(t *testing.T) {
	const n = 70000
	const topic = "persistent://public/default/acks-past-65535"
	dir := t.TempDir()
	p := startStandalone(t, dir)
	c := p.client(t)
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		Type: pulsar.Shared, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true,
		MaxPendingMessages: 2000})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var sendErr error
	wg.Add(n)
	for i := range n {
		prod.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(payload70k(i))},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err != nil {
					mu.Lock()
					sendErr = err
					mu.Unlock()
				}
				wg.Done()
			})
	}
	wg.Wait()
	if sendErr != nil {
		t.Fatalf("send: %v", sendErr)
	}
	// Consume about half, acking each message individually.
	seen := make(map[int]bool, n)
	receive := func(cons pulsar.Consumer, until int) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for len(seen) < until {
			m, err := cons.Receive(ctx)
			if err != nil {
				t.Fatalf("receive with %d of %d seen: %v", len(seen), n, err)
			}
			var i int
			if _, err := fmt.Sscanf(string(m.Payload()), "m-%06d-", &i); err != nil || i < 0 || i >= n || string(m.Payload()) != payload70k(i) {
				t.Fatalf("unexpected payload %q", m.Payload())
			}
			seen[i] = true
			if err := cons.Ack(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	receive(cons, n/2)
	p.kill()
	c.Close()

	p = startStandalone(t, dir)
	c = p.client(t)
	cons, err = c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		Type: pulsar.Shared, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	receive(cons, n)

	// Every ack lands: the backlog drains to 0 and mark-delete is the last
	// entry, a real position.
	path := "/admin/v2/persistent/public/default/acks-past-65535/internalStats"
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := p.get(t, path)
		if code != 200 {
			t.Fatalf("internalStats: HTTP %d: %s", code, body)
		}
		var st struct {
			LastConfirmedEntry string `json:"lastConfirmedEntry"`
			Cursors            map[string]struct {
				MarkDeletePosition string `json:"markDeletePosition"`
				MessagesConsumed   int64  `json:"messagesConsumedCounter"`
			} `json:"cursors"`
		}
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatal(err)
		}
		md := st.Cursors["s"].MarkDeletePosition
		if strings.Contains(md, "4294967295") {
			t.Fatalf("mark-delete %s: a not-found sentinel became a position", md)
		}
		if md == st.LastConfirmedEntry {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mark-delete %s never reached the last entry %s", md, st.LastConfirmedEntry)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A zero-queue consumer on a topic holding unacked messages, with the
// topic unloaded before (and while) it receives: every message arrives, in
// order on an Exclusive subscription.
func TestStandaloneZeroQueueConsumerAcrossUnload(t *testing.T) {
	p := startStandalone(t, t.TempDir())
	c := p.client(t)
	for round, unloadWhileWaiting := range []bool{false, true, false, true} {
		topic := fmt.Sprintf("persistent://public/default/zeroq-%d", round)
		prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
		if err != nil {
			t.Fatal(err)
		}
		const n = 10
		for i := range n {
			if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i))}); err != nil {
				t.Fatal(err)
			}
		}
		cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Exclusive,
			EnableZeroQueueConsumer: true, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		unload := func() error {
			req, _ := http.NewRequest("PUT", p.http+"/admin/v2/persistent/"+strings.TrimPrefix(topic, "persistent://")+"/unload", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				return fmt.Errorf("unload: HTTP %d", resp.StatusCode)
			}
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		unloaded := make(chan error, 1)
		if !unloadWhileWaiting {
			unloaded <- unload()
		} else {
			go func() { unloaded <- unload() }()
		}
		var got []string
		for len(got) < n {
			m, err := receiveZeroQueue(ctx, t, p, cons, topic)
			if err != nil {
				t.Fatalf("round %d: receive after %v: %v", round, got, err)
			}
			got = append(got, string(m.Payload()))
			if err := cons.Ack(m); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		if err := <-unloaded; err != nil {
			t.Fatal(err)
		}
		for i, g := range got {
			if g != fmt.Sprint(i) {
				t.Fatalf("round %d: received %v, want 0..9 in order", round, got)
			}
		}
		cons.Close()
		prod.Close()
	}
}

// receiveZeroQueue is a zero-queue consumer's Receive that tells a permit
// the client lost from one the broker kept. pulsar-client-go v0.19.0 can
// lose the permit a waiting zero-queue Receive re-sends after a reconnect
// (the reconnect's add races the dispatcher's reset of the same count);
// the consumer then waits for ever with nothing owed by the broker. When a
// Receive times out with the broker's consumer holding no permit and no
// unacked message over a backlog, it receives again (which sends a new
// permit); a broker that holds a permit and sends nothing fails the test.
func receiveZeroQueue(ctx context.Context, t *testing.T, p *proc, cons pulsar.Consumer, topic string) (pulsar.Message, error) {
	t.Helper()
	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	m, err := cons.Receive(short)
	cancel()
	if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return m, err
	}
	code, body := p.get(t, "/admin/v2/persistent/"+strings.TrimPrefix(topic, "persistent://")+"/stats")
	if code != 200 {
		t.Fatalf("stats: HTTP %d: %s", code, body)
	}
	var st struct {
		Subscriptions map[string]struct {
			MsgBacklog int64 `json:"msgBacklog"`
			Consumers  []struct {
				AvailablePermits int64 `json:"availablePermits"`
				UnackedMessages  int64 `json:"unackedMessages"`
			} `json:"consumers"`
		} `json:"subscriptions"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	s := st.Subscriptions["s"]
	if len(s.Consumers) != 1 || s.MsgBacklog == 0 || s.Consumers[0].AvailablePermits != 0 || s.Consumers[0].UnackedMessages != 0 {
		t.Fatalf("receive timed out; broker's subscription: %s", body)
	}
	t.Logf("receive timed out with no permit at the broker (backlog %d): the client lost it; receiving again", s.MsgBacklog)
	return cons.Receive(ctx)
}
