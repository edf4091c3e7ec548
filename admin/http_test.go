package admin

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-mq/magnetar/broker/brokertest"
	"github.com/magnetar-mq/magnetar/internal/version"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestE2EHTTPServiceURL runs the client with an http:// service URL: it
// looks topics up and reads partition metadata over HTTP, then talks the
// binary protocol to the broker URL the lookup returned.
func TestE2EHTTPServiceURL(t *testing.T) {
	tb := startBroker(t, nil)
	cl, err := pulsar.NewClient(pulsar.ClientOptions{
		URL:              tb.web,
		OperationTimeout: 5 * time.Second,
		Logger:           plog.DefaultNopLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topic := uniqueName("httplookup")
	cons := brokertest.Consumer(t, cl, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	prod := brokertest.Producer(t, cl, pulsar.ProducerOptions{Topic: topic})
	for i := range 3 {
		if _, err := prod.Send(ctxT(t), &pulsar.ProducerMessage{Payload: []byte{byte('a' + i)}}); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range receiveN(t, cons, 3) {
		if string(m.Payload()) != string(rune('a'+i)) {
			t.Fatalf("message %d is %q", i, m.Payload())
		}
		cons.Ack(m)
	}
}

func TestHTTPPartitionsLookupHealth(t *testing.T) {
	tb := startBroker(t, nil)
	base := "/admin/v2/persistent/public/default/pt/partitions"
	if code, body := httpDo(t, tb, "GET", base, ""); code != 200 || !strings.Contains(body, `"partitions":0`) {
		t.Fatalf("GET unknown partitions: %d %s", code, body)
	}
	if code, body := httpDo(t, tb, "PUT", base, `{"partitions":2,"properties":{"a":"b"}}`); code != 204 {
		t.Fatalf("PUT object body: %d %s", code, body)
	}
	if code, _ := httpDo(t, tb, "PUT", base, `2`); code != 204 {
		t.Fatalf("PUT same count again: %d, want idempotent 204", code)
	}
	if code, _ := httpDo(t, tb, "PUT", base, `3`); code != 409 {
		t.Fatalf("PUT other count: %d, want 409", code)
	}
	if code, _ := httpDo(t, tb, "POST", base, `1`); code != 412 {
		t.Fatalf("POST shrink: %d, want 412", code)
	}
	if code, _ := httpDo(t, tb, "POST", base, `4`); code != 204 {
		t.Fatalf("POST grow: %d", code)
	}
	if code, body := httpDo(t, tb, "GET", base, ""); code != 200 || !strings.Contains(body, `"partitions":4`) {
		t.Fatalf("GET partitions: %d %s", code, body)
	}
	code, body := httpDo(t, tb, "GET", "/admin/v2/namespaces/public/default/topics", "")
	var topics []string
	json.Unmarshal([]byte(body), &topics)
	if code != 200 || !slices.Contains(topics, "persistent://public/default/pt-partition-3") {
		t.Fatalf("namespace topics: %d %s", code, body)
	}
	if code, _ := httpDo(t, tb, "GET", "/admin/v2/namespaces/public/nope/topics", ""); code != 404 {
		t.Fatalf("unknown namespace topics: %d, want 404", code)
	}
	if code, _ := httpDo(t, tb, "DELETE", base, ""); code != 204 {
		t.Fatalf("DELETE: %d", code)
	}
	if code, _ := httpDo(t, tb, "DELETE", base, ""); code != 404 {
		t.Fatalf("DELETE again: %d, want 404", code)
	}
	if code, body := httpDo(t, tb, "GET", "/admin/v2/brokers/health", ""); code != 200 || body != "ok" {
		t.Fatalf("health: %d %q", code, body)
	}
	code, body = httpDo(t, tb, "GET", "/lookup/v2/topic/persistent/public/default/x", "")
	var lk map[string]string
	json.Unmarshal([]byte(body), &lk)
	if code != 200 || lk["brokerUrl"] != "pulsar://"+tb.ServiceAddr() {
		t.Fatalf("lookup: %d %s", code, body)
	}
	if code, body := httpDo(t, tb, "GET", "/admin/v2/brokers/version", ""); code != 200 || body != version.Get().Version || body == "" {
		t.Fatalf("version: %d %q", code, body)
	}
	if code, _ := httpDo(t, tb, "POST", "/admin/v2/brokers/health", ""); code != 405 {
		t.Fatalf("wrong method: %d, want 405", code)
	}
	if code, body := httpDo(t, tb, "GET", "/admin/v2/persistent/public/default/never-created/stats", ""); code != 404 || !strings.Contains(body, "reason") {
		t.Fatalf("stats of unknown topic: %d %s", code, body)
	}
	if code, _ := httpDo(t, tb, "GET", "/metrics", ""); code != 200 {
		t.Fatalf("metrics: %d", code)
	}
}

func TestHTTPSchemas(t *testing.T) {
	tb := startBroker(t, nil)
	base := "/admin/v2/schemas/public/default/hs/schema"
	if code, _ := httpDo(t, tb, "GET", base, ""); code != 404 {
		t.Fatalf("GET before any schema: %d, want 404", code)
	}
	code, body := httpDo(t, tb, "POST", base, `{"type":"JSON","schema":"{\"type\":\"record\",\"name\":\"R\",\"fields\":[]}","properties":{"k":"v"}}`)
	if code != 200 || !strings.Contains(body, `"version":0`) {
		t.Fatalf("POST: %d %s", code, body)
	}
	code, body = httpDo(t, tb, "GET", base, "")
	var got struct {
		Version    int               `json:"version"`
		Type       string            `json:"type"`
		Data       string            `json:"data"`
		Properties map[string]string `json:"properties"`
	}
	json.Unmarshal([]byte(body), &got)
	if code != 200 || got.Type != "JSON" || got.Data != `{"type":"record","name":"R","fields":[]}` || got.Properties["k"] != "v" {
		t.Fatalf("GET: %d %s", code, body)
	}
	if code, _ := httpDo(t, tb, "GET", base+"/0", ""); code != 200 {
		t.Fatalf("GET version 0: %d", code)
	}
	if code, _ := httpDo(t, tb, "GET", base+"/5", ""); code != 404 {
		t.Fatalf("GET missing version: %d", code)
	}
	// The broker's registry (which GET_SCHEMA reads) has it.
	if si, found, err := tb.schemas.Schema(ctxT(t), "hs", -1); err != nil || !found || si.Type != int32(pb.Schema_Json) {
		t.Fatalf("broker schema after HTTP POST: %+v %v %v", si, found, err)
	}
	if code, _ := httpDo(t, tb, "DELETE", base, ""); code != 200 {
		t.Fatalf("DELETE: %d", code)
	}
	if code, _ := httpDo(t, tb, "GET", base, ""); code != 404 {
		t.Fatalf("GET after DELETE: %d", code)
	}
}
