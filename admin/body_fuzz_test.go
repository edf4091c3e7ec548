package admin

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/magnetar-mq/magnetar/httpapi"
)

// policyEndpoints are the namespace policy routes whose bodies
// FuzzPolicyBodies fuzzes (path after .../namespaces/public/default/).
var policyEndpoints = []string{
	"retention", "messageTTL", "maxProducersPerTopic", "maxConsumersPerTopic", "deduplication",
	"autoTopicCreation", "backlogQuota", "backlogQuota?backlogQuotaType=message_age",
	"backlogQuota?backlogQuotaType=destination_storage",
}

// FuzzPolicyBodies POSTs arbitrary bodies to the namespace policy routes
// (through the router, no network): the answer is never a 5xx; a refused
// body (4xx) changes nothing the GET route shows; an accepted one reads
// back, and POSTing what GET returns is accepted and changes nothing
// (round trip). One broker serves every input of a worker.
func FuzzPolicyBodies(f *testing.F) {
	for i, body := range []string{
		`{"retentionTimeInMinutes":60,"retentionSizeInMB":100}`, `3600`, `5`, `7`, `true`,
		`{"allowAutoTopicCreation":true,"topicType":"partitioned","defaultNumPartitions":2}`,
		`{"limitSize":1048576,"limitTime":-1,"policy":"producer_request_hold"}`,
		`{"limitTime":60,"policy":"consumer_backlog_eviction"}`, `{"limitSize":10,"policy":"producer_exception"}`,
	} {
		f.Add(byte(i), []byte(body))
	}
	f.Add(byte(0), []byte(`{"retentionTimeInMinutes":-2}`))
	f.Add(byte(5), []byte(`null`))
	f.Add(byte(6), []byte(`{"limitSize":-5,"policy":"nope"}`))
	f.Add(byte(2), []byte(`2147483648`))
	// The metadata store commits with fsync; on tmpfs that costs nothing,
	// which makes the target several times faster.
	dir := f.TempDir()
	if shm, err := os.MkdirTemp("/dev/shm", "fuzzpolicy"); err == nil {
		dir = shm
		f.Cleanup(func() { os.RemoveAll(shm) })
	}
	tb := startBrokerOpts(f, brokerOpts{metaDir: dir})
	rt, err := tb.Router().Handler(httpapi.Guard{})
	if err != nil {
		f.Fatal(err)
	}
	do := func(method, path string, body []byte) (int, []byte) {
		req := httptest.NewRequest(method, "/admin/v2/namespaces/public/default/"+path, bytes.NewReader(body))
		if len(body) > 0 {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		rt.ServeHTTP(rec, req)
		return rec.Code, rec.Body.Bytes()
	}
	getPath := func(ep string) string {
		if ep == "retention" || ep == "messageTTL" || ep == "maxProducersPerTopic" || ep == "maxConsumersPerTopic" ||
			ep == "deduplication" || ep == "autoTopicCreation" {
			return ep
		}
		return "backlogQuotaMap"
	}
	f.Fuzz(func(t *testing.T, which byte, body []byte) {
		ep := policyEndpoints[int(which)%len(policyEndpoints)]
		gp := getPath(ep)
		code0, before := do("GET", gp, nil)
		if code0 != http.StatusOK && code0 != http.StatusNoContent {
			t.Fatalf("GET %s = %d %s", gp, code0, before)
		}
		code, answer := do("POST", ep, body)
		if code >= 500 {
			t.Fatalf("POST %s %q = %d %s", ep, body, code, answer)
		}
		_, after := do("GET", gp, nil)
		if code/100 != 2 {
			if !bytes.Equal(before, after) {
				t.Fatalf("refused POST %s %q (%d %s) changed %s from %s to %s", ep, body, code, answer, gp, before, after)
			}
			return
		}
		if gp != ep {
			return // backlogQuotaMap holds every quota type
		}
		if code, answer := do("POST", ep, after); code/100 != 2 {
			t.Fatalf("POST %s of what GET returned (%s, after %q) = %d %s", ep, after, body, code, answer)
		}
		if _, again := do("GET", gp, nil); !bytes.Equal(again, after) {
			t.Fatalf("round trip of %s changed %s to %s (after %q)", ep, after, again, body)
		}
	})
}
