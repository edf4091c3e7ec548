package magnetartest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/magnetartest"
)

// adminCall sends one admin request as role's token and fails unless it
// answers want.
func adminCall(t *testing.T, srv *magnetartest.Server, token, method, path, body string, want int) {
	t.Helper()
	req, err := http.NewRequest(method, srv.WebURL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, out, want)
	}
}

// TestBrokerClientCredentialsDynamic: brokerClientAuthenticationParameters
// is dynamic, as in Pulsar. Server a replicates a namespace to server b,
// whose ClusterData names no credentials, so a's replicator presents a's
// own broker client token (Pulsar's fallback with authentication on).
// b signs with another key: a's token is refused there, and the
// replicator cannot connect. Once the parameters are updated through
// a's admin dynamic-config endpoint to a token b accepts, the
// replicator's next connection authenticates and every message reaches
// b.
func TestBrokerClientCredentialsDynamic(t *testing.T) {
	b := magnetartest.Start(t, magnetartest.WithTokenAuth())
	a := magnetartest.Start(t, magnetartest.WithTokenAuth())
	aTok, bTok := a.AdminToken(), b.AdminToken()

	// b refuses a's credentials (the token its broker client presents).
	old, err := pulsar.NewClient(pulsar.ClientOptions{URL: b.ServiceURL(), Authentication: pulsar.NewAuthenticationToken(aTok),
		OperationTimeout: 5 * time.Second, ConnectionTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if _, err := old.TopicPartitions("persistent://public/default/x"); err == nil {
		t.Fatal("b admitted a's token")
	}

	adminCall(t, b, bTok, "PUT", "/admin/v2/tenants/geo", `{"allowedClusters":["standalone"]}`, http.StatusNoContent)
	adminCall(t, b, bTok, "PUT", "/admin/v2/namespaces/geo/r", "", http.StatusNoContent)
	adminCall(t, a, aTok, "PUT", "/admin/v2/clusters/cb", fmt.Sprintf(`{"serviceUrl":%q,"brokerServiceUrl":%q}`, b.WebURL(), b.ServiceURL()), http.StatusNoContent)
	adminCall(t, a, aTok, "PUT", "/admin/v2/tenants/geo", `{"allowedClusters":["standalone","cb"]}`, http.StatusNoContent)
	adminCall(t, a, aTok, "PUT", "/admin/v2/namespaces/geo/r", "", http.StatusNoContent)
	adminCall(t, a, aTok, "POST", "/admin/v2/namespaces/geo/r/replication", `["standalone","cb"]`, http.StatusNoContent)

	const topic = "persistent://geo/r/rotated"
	const n = 20
	ca := client(t, a, pulsar.ClientOptions{Authentication: pulsar.NewAuthenticationToken(aTok)})
	payloads := make([]string, n)
	for i := range payloads {
		payloads[i] = fmt.Sprintf("m-%d", i)
	}
	if err := produce(t, ca, topic, payloads...); err != nil {
		t.Fatal(err)
	}
	// Not replicated with a's own token: b holds nothing yet.
	stats := func(srv *magnetartest.Server, token string) string {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.WebURL()+"/admin/v2/persistent/geo/r/rotated/stats", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return string(out)
	}
	if st := stats(a, aTok); !strings.Contains(st, `"cb":{`) || strings.Contains(st, `"connected":true`) {
		t.Fatalf("replicator to cb with a refused token: %s", st)
	}

	adminCall(t, a, aTok, "POST", "/admin/v2/brokers/configuration/brokerClientAuthenticationParameters/"+url.PathEscape("token:"+bTok), "", http.StatusOK)

	cb := client(t, b, pulsar.ClientOptions{Authentication: pulsar.NewAuthenticationToken(bTok)})
	cons, err := cb.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for i := range n {
		rctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		m, err := cons.Receive(rctx)
		cancel()
		if err != nil {
			t.Fatalf("b: message %d of %d after the update: %v (a's stats: %s)", i, n, err, stats(a, aTok))
		}
		if string(m.Payload()) != payloads[i] {
			t.Fatalf("b got %q, want %q", m.Payload(), payloads[i])
		}
		cons.Ack(m)
	}
	if st := stats(a, aTok); !strings.Contains(st, `"connected":true`) {
		t.Fatalf("replicator not connected after the update: %s", st)
	}
}
