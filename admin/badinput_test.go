package admin

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
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
	bad := []string{".", "..", "%2e%2e", "%2E%2e", "%00", "a%00b", "%2F", long}
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
		// Pulsar checks an override only while it allows creation.
		req{"POST", ns + "/autoTopicCreation", `{"allowAutoTopicCreation":true,"topicType":"partitioned"}`},
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
		// The harness fails any error answer naming a metadata path or
		// other internal text (checkErrorBodies).
		code, body := httpDo(t, tb, c.method, c.path, c.body)
		if code/100 != 4 || !strings.Contains(body, `"reason"`) {
			p := c.path
			if len(p) > 120 {
				p = p[:120] + "..."
			}
			t.Errorf("%s %s %.40q: %d %.200s; want a 4xx with a reason", c.method, p, c.body, code, body)
		}
	}

	// A 100 KiB or 1 MB name does not fit the request line
	// (httpMaxRequestHeaderSize, 8 KiB): refused by the HTTP server with
	// 431.
	for _, n := range []int{100 << 10, 1 << 20} {
		if code, _ := httpDirect(t, tb, "PUT", "/admin/v2/persistent/public/default/"+strings.Repeat("c", n), ""); code != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("%d-byte topic name: %d, want 431", n, code)
		}
	}

	// Nothing was created or changed.
	for path, want := range map[string]string{
		"/admin/v2/tenants":                                   `["public","pulsar"]`,
		"/admin/v2/namespaces/public":                         `["public/default"]`,
		"/admin/v2/persistent/public/default":                 `["persistent://public/default/t"]`,
		"/admin/v2/persistent/public/default/partitioned":     `[]`,
		"/admin/v2/persistent/public/default/t/subscriptions": `["s"]`,
		ns + "/autoTopicCreation":                             ``,
		ns + "/backlogQuotaMap":                               `{}`,
		ns + "/retention":                                     `{"retentionTimeInMinutes":10,"retentionSizeInMB":5}`,
		ns + "/maxConsumersPerTopic":                          ``,
		ns + "/maxProducersPerTopic":                          ``,
		ns + "/messageTTL":                                    ``,
		ns + "/deduplication":                                 ``,
	} {
		code, body := httpDo(t, tb, "GET", path, "")
		wantCode := http.StatusOK
		if want == "" {
			wantCode = http.StatusNoContent // unset, as Pulsar answers it
		}
		if code != wantCode || strings.TrimSpace(body) != want {
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
	if code, body := httpDo(t, tb, "GET", ns+"/retention", ""); code != http.StatusNoContent || body != "" {
		t.Fatalf("retention after refused bodies: %d %s", code, body)
	}
	// A body just under the limit is accepted.
	if code, body := httpDo(t, tb, "POST", ns+"/retention", valid+strings.Repeat(" ", 1<<20-len(valid))); code/100 != 2 {
		t.Fatalf("1 MiB body: %d %s", code, body)
	}
}

// TestInternalErrorsAreGeneric (issue 31 item 6): when the metadata
// store fails, admin calls answer 500 with the generic reason and
// nothing else; the error (which may name store paths, files or hosts)
// is only logged.
func TestInternalErrorsAreGeneric(t *testing.T) {
	var meta *embedded.Store
	tb := startBrokerOpts(t, brokerOpts{register: func(_ *broker.Broker, m *embedded.Store) { meta = m }})
	mustDo := func(method, path, body string) {
		t.Helper()
		if code, resp := httpDo(t, tb, method, path, body); code/100 != 2 {
			t.Fatalf("%s %s: %d %s", method, path, code, resp)
		}
	}
	mustDo("PUT", "/admin/v2/persistent/public/default/t", "")
	meta.Close()
	n500 := 0
	for _, c := range [][3]string{
		{"GET", "/admin/v2/namespaces/public/default/retention", ""},
		{"POST", "/admin/v2/namespaces/public/default/retention", `{"retentionTimeInMinutes":1,"retentionSizeInMB":1}`},
		{"GET", "/admin/v2/tenants", ""},
		{"PUT", "/admin/v2/tenants/t2", `{"allowedClusters":["standalone"]}`},
		{"GET", "/admin/v2/persistent/public/default", ""},
		{"PUT", "/admin/v2/persistent/public/default/t2", ""},
		{"GET", "/admin/v2/schemas/public/default/t/schema", ""},
		{"GET", "/lookup/v2/topic/persistent/public/default/t", ""},
	} {
		code, body := httpDo(t, tb, c[0], c[1], c[2])
		if p := metadataPathIn(body); p != "" {
			t.Errorf("%s %s: %d names metadata path %s: %s", c[0], c[1], code, p, body)
		}
		if code == 500 {
			n500++
			if r := reasonOf(t, body); r != httpapi.InternalReason {
				t.Errorf("%s %s: 500 with reason %q: only the generic reason may reach the client", c[0], c[1], r)
			}
		}
	}
	if n500 == 0 {
		t.Fatal("no call failed with the metadata store closed")
	}
}

// TestErrorCheckCatchesLeaks: the harness's checking proxy
// (checkErrorBodies) records an error answer naming a metadata path, the
// metadata directory or an internal error's text, passes every answer
// through unchanged, and records nothing for clean errors or for
// successful answers (which may name what they like).
func TestErrorCheckCatchesLeaks(t *testing.T) {
	dir := t.TempDir()
	answers := map[string]struct {
		code int
		body string
		leak bool
	}{
		"/path":    {412, `{"reason":"cannot write /managed-ledgers/public/default/persistent/x"}`, true},
		"/dir":     {500, `{"reason":"open ` + dir + `/meta/000001.log: no space left"}`, true},
		"/storage": {404, `{"reason":"Message not found: read 1:1: mledger: invalid position"}`, true},
		"/panic":   {500, "panic: runtime error: index out of range\n\ngoroutine 7 [running]:", true},
		"/clean":   {404, `{"reason":"Topic not found"}`, false},
		"/ok":      {200, `{"ledgers":"/managed-ledgers/public/default/persistent/x"}`, false},
	}
	backend := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answers[r.URL.Path]
		w.WriteHeader(a.code)
		io.WriteString(w, a.body)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go backend.Serve(ln)
	defer backend.Close()
	ec, err := newErrorCheck(ln.Addr().String(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ec.srv.Close()
	want := 0
	for p, a := range answers {
		code, body := httpDoAt(t, ec.url, nil, "GET", p, "")
		if code != a.code || body != a.body {
			t.Fatalf("%s through the proxy: %d %q, want %d %q", p, code, body, a.code, a.body)
		}
		if a.leak {
			want++
		}
		if n := len(ec.leaks()); n != want {
			t.Fatalf("after %s: %d leaks recorded, want %d: %v", p, n, want, ec.leaks())
		}
	}
}
