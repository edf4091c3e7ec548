package admin

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker/brokertest"
)

// Issue 9 item 5 over the REST API: a reset-cursor to a message id
// beyond the end, a skip of MaxInt64 messages and out-of-range TTLs never
// make messages published later count as acknowledged.
func TestCursorMovesPastTheEndLoseNothing(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	for _, tc := range []struct {
		name string
		move func(path string) (int, string)
	}{
		{"reset-future-ledger", func(path string) (int, string) {
			return httpDo(t, tb, "POST", path+"/resetcursor", `{"ledgerId":123456789,"entryId":0}`)
		}},
		{"reset-maxint64-entry", func(path string) (int, string) {
			return httpDo(t, tb, "POST", path+"/resetcursor", fmt.Sprintf(`{"ledgerId":%d,"entryId":%d}`, int64(math.MaxInt64)-1, int64(math.MaxInt64)))
		}},
		{"reset-time-maxint64", func(path string) (int, string) {
			return httpDo(t, tb, "POST", fmt.Sprintf("%s/resetcursor/%d", path, int64(math.MaxInt64)), "")
		}},
		{"skip-maxint64", func(path string) (int, string) {
			return httpDo(t, tb, "POST", fmt.Sprintf("%s/skip/%d", path, int64(math.MaxInt64)), "")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "persistent://public/default/" + uniqueName("pastend")
			cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
			if err != nil {
				t.Fatal(err)
			}
			cons.Close()
			prod := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
			for i := range 3 {
				if _, err := prod.Send(ctxT(t), &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "old-%d", i)}); err != nil {
					t.Fatal(err)
				}
			}
			path := adminPath(topic) + "/subscription/s"
			if code, body := tc.move(path); code/100 != 2 {
				t.Fatalf("move: %d %s", code, body)
			}
			const later = 20
			for i := range later {
				if _, err := prod.Send(ctxT(t), &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "new-%d", i)}); err != nil {
					t.Fatal(err)
				}
			}
			cons = brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
			for i, m := range receiveN(t, cons, later) {
				if want := fmt.Sprintf("new-%d", i); string(m.Payload()) != want {
					t.Fatalf("message %d = %q, want %q", i, m.Payload(), want)
				}
				cons.Ack(m)
			}
		})
	}
}

// Out-of-range expiry values are refused and the backlog is unchanged.
func TestExpiryOutOfRangeKeepsBacklog(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client(t)
	topic := "persistent://public/default/" + uniqueName("ttl")
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	cons.Close()
	prod := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	for range 5 {
		if _, err := prod.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	tp := strings.TrimPrefix(topic, "persistent://")
	for _, v := range []string{"9223372036854775807", "2147483648", "-2", "1e3"} {
		if code, _ := httpDo(t, tb, "POST", "/admin/v2/namespaces/public/default/messageTTL", v); code/100 != 4 {
			t.Errorf("messageTTL %s: %d, want 4xx", v, code)
		}
		if code, _ := httpDo(t, tb, "POST", "/admin/v2/persistent/"+tp+"/subscription/s/expireMessages/"+v, ""); code/100 != 4 {
			t.Errorf("expireMessages/%s: %d, want 4xx", v, code)
		}
	}
	code, body := httpDo(t, tb, "GET", "/admin/v2/persistent/"+tp+"/stats", "")
	if code != http.StatusOK || !strings.Contains(body, `"msgBacklog":5`) {
		t.Fatalf("backlog after refused expiries: %d %s", code, body)
	}
}
