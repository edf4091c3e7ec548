package admin

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/brokeradmin"
	"github.com/magnetar-mq/magnetar/httpapi"
)

// TestNoRouteAnswers501 walks every route registered on the broker's
// router (admin, lookup, cluster) and requests it with plausible path
// values: none may answer 501 Not Implemented ("a 501 is not a
// feature"). Requests run from the least destructive method to the
// most (GET, then PUT/POST, then DELETE), each with a timeout.
func TestNoRouteAnswers501(t *testing.T) {
	tb := startBroker(t, nil)
	mustHTTP(t, tb, "PUT", "/admin/v2/persistent/public/default/walk", "", http.StatusNoContent)
	values := map[string]string{
		"tenant": "public", "ns": "default", "domain": "persistent", "topic": "walk",
		"cluster": brokeradmin.For(tb.Broker).Node.ClusterName(), "bundle": "0x00000000_0x40000000", "sub": "s", "subName": "s",
		"ledger": "0", "entry": "0", "role": "r", "group": "g", "broker": tb.HTTPAddr(),
	}
	routes := tb.Router().Routes()
	if len(routes) < 100 {
		t.Fatalf("only %d routes registered", len(routes))
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for _, phase := range [][]string{{"GET"}, {"PUT", "POST"}, {"DELETE"}} {
		for _, rt := range routes {
			if !strings.Contains(strings.Join(phase, ","), rt.Method) {
				continue
			}
			path := fillPattern(rt.Pattern, values, "x")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			req, err := http.NewRequestWithContext(ctx, rt.Method, tb.web+path, nil)
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			cancel()
			if err != nil {
				t.Errorf("%s %s (%s): %v", rt.Method, path, rt.Pattern, err)
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			// The permission endpoints too: with authorization off they
			// store and answer grants, as Pulsar's do.
			if resp.StatusCode == http.StatusNotImplemented {
				t.Errorf("%s %s (%s) answers 501: %s", rt.Method, path, rt.Pattern, body)
			}
		}
	}
}

// permissionRoute reports whether rt is a permission endpoint
// (permissions.go).
func permissionRoute(rt *httpapi.Route) bool {
	return strings.Contains(rt.Name, ".permissions") || strings.Contains(rt.Name, "subscriptionAuthMode")
}

// TestNonPersistentInternalStats: internalStats of a non-persistent
// topic (formerly 501) answers as Pulsar's: no ledgers, one cursor entry
// per subscription, the entries-added counter.
func TestNonPersistentInternalStats(t *testing.T) {
	tb := startBroker(t, nil)
	c := tb.client(t)
	topic := "non-persistent://public/default/" + uniqueName("npstats")
	_ = brokertest.Consumer(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "np-sub"})
	p := brokertest.Producer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	for range 2 {
		if _, err := p.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := adminClient(t, tb).Topics().GetInternalStats(mustTopic(t, topic))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Cursors["np-sub"]; !ok || len(st.Ledgers) != 0 || st.EntriesAddedCounter != 2 {
		t.Fatalf("internal stats %+v", st)
	}
}
