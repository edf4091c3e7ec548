package admin

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestBadNamesAndBodies: every malformed name (".", "..", "%2e%2e",
// "%00", over-long) as tenant, namespace, topic or subscription, and
// every malformed or oversized body gets a 4xx with a reason, never a
// 5xx, and creates or changes nothing.
func TestBadNamesAndBodies(t *testing.T) {
	tb := startBroker(t, nil)
	mustDo := func(method, path, body string) {
		t.Helper()
		if code, resp := httpDo(t, tb, method, path, body); code/100 != 2 {
			t.Fatalf("%s %s: %d %s", method, path, code, resp)
		}
	}
	mustDo("PUT", "/admin/v2/persistent/public/default/t", "")
	mustDo("PUT", "/admin/v2/persistent/public/default/t/subscription/s", "")
	mustDo("POST", "/admin/v2/namespaces/public/default/retention", `{"retentionTimeInMinutes":10,"retentionSizeInMB":5}`)

	long := strings.Repeat("a", 1100)
	huge := strings.Repeat("b", 100<<10)
	bad := []string{".", "..", "%2e%2e", "%2E%2e", "%00", "a%00b", "%2F", long, huge}
	type req struct{ method, path, body string }
	var cases []req
	for _, n := range bad {
		cases = append(cases,
			req{"PUT", "/admin/v2/tenants/" + n, `{"allowedClusters":["standalone"]}`},
			req{"PUT", "/admin/v2/namespaces/public/" + n, ""},
			req{"PUT", "/admin/v2/namespaces/" + n + "/default", ""},
			req{"PUT", "/admin/v2/persistent/public/default/" + n, ""},
			req{"PUT", "/admin/v2/persistent/public/default/" + n + "/partitions", "2"},
			req{"PUT", "/admin/v2/non-persistent/public/default/" + n + "/partitions", "2"},
			req{"PUT", "/admin/v2/persistent/" + n + "/default/t", ""},
			req{"GET", "/admin/v2/tenants/" + n, ""},
			req{"DELETE", "/admin/v2/tenants/" + n, ""},
			req{"DELETE", "/admin/v2/namespaces/public/" + n, ""},
			req{"GET", "/admin/v2/namespaces/public/" + n + "/retention", ""},
			req{"GET", "/admin/v2/persistent/public/default/" + n + "/stats", ""},
			req{"DELETE", "/admin/v2/persistent/public/default/" + n, ""},
			req{"DELETE", "/admin/v2/persistent/public/default/t/subscription/" + n, ""},
		)
		if n != "%2F" { // "/" is a valid subscription name
			cases = append(cases, req{"PUT", "/admin/v2/persistent/public/default/t/subscription/" + n, ""})
		}
	}
	const sub = "/admin/v2/persistent/public/default/t/subscription/s"
	const ns = "/admin/v2/namespaces/public/default"
	cases = append(cases,
		req{"POST", sub + "/resetcursor", ""},
		req{"POST", sub + "/resetcursor", "null"},
		req{"POST", sub + "/resetcursor", "{}"},
		req{"POST", sub + "/resetcursor", `{"ledgerId":"x"}`},
		req{"POST", ns + "/autoTopicCreation", "null"},
		req{"POST", ns + "/autoTopicCreation", ""},
		req{"POST", ns + "/autoTopicCreation", `{"topicType":"partitioned"}`},
		req{"POST", ns + "/backlogQuota?backlogQuotaType=bogus", `{"limitSize":100,"limitTime":-1,"policy":"producer_request_hold"}`},
		req{"POST", ns + "/backlogQuota", `{"limitSize":-5,"limitTime":-1,"policy":"producer_request_hold"}`},
		req{"POST", ns + "/backlogQuota", `{"limitSize":100,"limitTime":-1,"policy":"bogus"}`},
		req{"POST", ns + "/backlogQuota", "null"},
		req{"DELETE", ns + "/backlogQuota?backlogQuotaType=bogus", ""},
		req{"POST", ns + "/retention", `{"retentionTimeInMinutes":153722867280912931,"retentionSizeInMB":1}`},
		req{"POST", ns + "/retention", "null"},
		req{"POST", ns + "/retention", ""},
		req{"POST", ns + "/maxConsumersPerTopic", "2147483648"},
		req{"POST", ns + "/maxProducersPerTopic", "-1"},
		req{"POST", ns + "/messageTTL", "9223372036854775808"},
		req{"POST", ns + "/deduplication", "maybe"},
		req{"PUT", "/admin/v2/tenants/newtenant", `{"allowedClusters":`},
	)
	for _, c := range cases {
		code, body := httpDo(t, tb, c.method, c.path, c.body)
		if code/100 != 4 || !strings.Contains(body, `"reason"`) {
			p := c.path
			if len(p) > 120 {
				p = p[:120] + "..."
			}
			t.Errorf("%s %s %.40q: %d %.200s; want a 4xx with a reason", c.method, p, c.body, code, body)
		}
	}

	// A 1 MB name does not fit the request line: refused by the HTTP
	// server with a 4xx.
	if code, _ := httpDo(t, tb, "PUT", "/admin/v2/persistent/public/default/"+strings.Repeat("c", 1<<20), ""); code/100 != 4 {
		t.Errorf("1 MB topic name: %d", code)
	}

	// Nothing was created or changed.
	for path, want := range map[string]string{
		"/admin/v2/tenants":                                   `["public","pulsar"]`,
		"/admin/v2/namespaces/public":                         `["public/default"]`,
		"/admin/v2/persistent/public/default":                 `["persistent://public/default/t"]`,
		"/admin/v2/persistent/public/default/partitioned":     `[]`,
		"/admin/v2/persistent/public/default/t/subscriptions": `["s"]`,
		ns + "/autoTopicCreation":                             `null`,
		ns + "/backlogQuotaMap":                               `{}`,
		ns + "/retention":                                     `{"retentionTimeInMinutes":10,"retentionSizeInMB":5}`,
		ns + "/maxConsumersPerTopic":                          `null`,
		ns + "/maxProducersPerTopic":                          `null`,
		ns + "/messageTTL":                                    `null`,
		ns + "/deduplication":                                 `null`,
	} {
		code, body := httpDo(t, tb, "GET", path, "")
		if code != 200 || strings.TrimSpace(body) != want {
			t.Errorf("GET %s: %d %s; want %s", path, code, body, want)
		}
	}
	code, body := httpDo(t, tb, "GET", sub[:strings.LastIndex(sub, "/subscription")]+"/stats", "")
	if code != 200 || !strings.Contains(body, `"msgBacklog":0`) {
		t.Errorf("stats after refused resets: %d %s", code, body)
	}
}

// TestOversizedBodiesRefusedWhole: a body over 1 MiB is refused with 413
// before it is parsed, whether its length is declared or chunked, even
// when its first megabyte is a valid value; nothing changes.
func TestOversizedBodiesRefusedWhole(t *testing.T) {
	tb := startBroker(t, nil)
	const ns = "/admin/v2/namespaces/public/default"
	valid := `{"retentionTimeInMinutes":10,"retentionSizeInMB":5}`
	padded := valid + strings.Repeat(" ", 1<<20)
	for _, tc := range []struct {
		name    string
		body    io.Reader
		chunked bool
	}{
		{"declared 50 MB", bytes.NewReader(append([]byte(valid), bytes.Repeat([]byte(" "), 50<<20)...)), false},
		{"declared 1 MiB + valid prefix", strings.NewReader(padded), false},
		{"chunked 1 MiB + valid prefix", strings.NewReader(padded), true},
	} {
		req, err := http.NewRequest("POST", "http://"+tb.HTTPAddr()+ns+"/retention", tc.body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if tc.chunked {
			req.ContentLength = -1
			req.Body = io.NopCloser(tc.body)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			// The server may close after answering; the answer is what counts.
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "reason") {
			t.Errorf("%s: %d %s; want 413", tc.name, resp.StatusCode, b)
		}
	}
	if code, body := httpDo(t, tb, "GET", ns+"/retention", ""); code != 200 || strings.TrimSpace(body) != "null" {
		t.Fatalf("retention after refused bodies: %d %s", code, body)
	}
	// A body just under the limit is accepted.
	if code, body := httpDo(t, tb, "POST", ns+"/retention", valid+strings.Repeat(" ", 1<<20-len(valid))); code/100 != 2 {
		t.Fatalf("1 MiB body: %d %s", code, body)
	}
}
