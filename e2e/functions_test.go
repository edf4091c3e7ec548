package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

func fnConfig(name string, extra map[string]any) map[string]any {
	c := map[string]any{"tenant": "public", "namespace": "default", "name": name, "runtime": "GO",
		"inputs": []string{"persistent://public/default/" + name + "-in"}, "output": "persistent://public/default/" + name + "-out",
		"subscriptionPosition": "Earliest"}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

func subscribeOut(t testing.TB, c pulsar.Client, topic string) pulsar.Consumer {
	t.Helper()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "check",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cons.Close)
	return cons
}

func produceAll(t testing.TB, c pulsar.Client, topic string, payloads []string) {
	t.Helper()
	if err := produceErr(c, topic, payloads); err != nil {
		t.Fatal(err)
	}
}

// produceErr sends payloads unbatched (one entry each, so Shared
// dispatch and redelivery work per message).
func produceErr(c pulsar.Client, topic string, payloads []string) error {
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		return err
	}
	defer p.Close()
	errc := make(chan error, 1)
	for _, s := range payloads {
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(s)}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
	}
	if err := p.FlushWithCtx(context.Background()); err != nil {
		return err
	}
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// TestFunctionsE2EWordCount deploys the word-count function through the
// REST API with an uploaded Go binary, feeds it and checks its output,
// its durable state (also across a restart of the standalone), status,
// stats, /metrics, trigger, update in place, stop/start and delete.
func TestFunctionsE2EWordCount(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	bin := buildFnProg(t, "1")
	dir := t.TempDir()
	p := startStandalone(t, dir)
	name := "wc"
	code, body := fnUpload(t, p, http.MethodPost, "functions", name, fnConfig(name, map[string]any{"userConfig": map[string]any{"mode": "wordcount"}}), bin, "")
	if code != http.StatusNoContent {
		t.Fatalf("create: %d %s", code, body)
	}
	// A second create of the same name is refused.
	if code, body := fnUpload(t, p, http.MethodPost, "functions", name, fnConfig(name, nil), bin, ""); code != http.StatusBadRequest {
		t.Fatalf("duplicate create: %d %s", code, body)
	}
	waitRunning(t, p, "functions", name, 1)

	c := p.client(t)
	out := subscribeOut(t, c, "persistent://public/default/wc-out")
	sentences := []string{"the quick brown fox", "jumps over the lazy dog", "The End"}
	produceAll(t, c, "persistent://public/default/wc-in", sentences)
	seen := receiveUntil(t, out, 60*time.Second, func(s map[string]int) bool { return len(s) == 3 })
	for _, want := range []string{"the,quick,brown,fox", "jumps,over,the,lazy,dog", "the,end"} {
		if seen[want] != 1 {
			t.Errorf("output %q seen %d times; all: %v", want, seen[want], seen)
		}
	}
	checkCounter := func(word string, want int64) {
		t.Helper()
		code, b := p.get(t, "/admin/v3/functions/public/default/wc/state/"+word)
		if code != http.StatusOK {
			t.Fatalf("state %s: %d %s", word, code, b)
		}
		var st struct {
			Key         string `json:"key"`
			NumberValue *int64 `json:"numberValue"`
		}
		if err := json.Unmarshal(b, &st); err != nil || st.NumberValue == nil || *st.NumberValue != want || st.Key != word {
			t.Fatalf("state %s = %s, want numberValue %d", word, b, want)
		}
	}
	checkCounter("the", 3)
	checkCounter("fox", 1)
	if code, b := p.get(t, "/admin/v3/functions/public/default/wc/state/absent"); code != http.StatusNotFound {
		t.Fatalf("absent key: %d %s", code, b)
	}

	// Stats and status count the three messages; /metrics has the
	// function's series under Pulsar's names.
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := getStatus(t, p, "functions", name)
		if s.Instances[0].Status.NumOK == 3 && s.Instances[0].Status.NumReceived == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never counted 3 processed: %+v", s)
		}
		time.Sleep(100 * time.Millisecond)
	}
	code, b := p.get(t, "/admin/v3/functions/public/default/wc/stats")
	var stats struct {
		Received  int64 `json:"receivedTotal"`
		Processed int64 `json:"processedSuccessfullyTotal"`
		Instances []struct {
			Metrics struct {
				UserMetrics map[string]float64 `json:"userMetrics"`
			} `json:"metrics"`
		} `json:"instances"`
	}
	if code != http.StatusOK || json.Unmarshal(b, &stats) != nil || stats.Received != 3 || stats.Processed != 3 {
		t.Fatalf("stats: %d %s", code, b)
	}
	if len(stats.Instances) != 1 || stats.Instances[0].Metrics.UserMetrics["words"] != 2 {
		t.Fatalf("user metric words: %s", b)
	}
	_, m := p.get(t, "/metrics")
	for _, want := range []string{
		`pulsar_function_received_total{cluster="standalone",fqfn="public/default/wc",instance_id="0",name="wc",namespace="default",tenant="public"} 3`,
		`pulsar_function_processed_successfully_total{cluster="standalone",fqfn="public/default/wc",instance_id="0",name="wc",namespace="default",tenant="public"} 3`,
		`pulsar_function_process_latency_ms_count{`,
	} {
		if !strings.Contains(string(m), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// Trigger publishes to the input and answers with the output.
	var tb bytes.Buffer
	mw := multipart.NewWriter(&tb)
	mw.WriteField("data", "Hello hello")
	mw.Close()
	code, b = fnHTTP(t, http.MethodPost, p.http+"/admin/v3/functions/public/default/wc/trigger", mw.FormDataContentType(), tb.Bytes())
	if code != http.StatusOK || string(b) != "hello,hello" {
		t.Fatalf("trigger: %d %q", code, b)
	}
	checkCounter("hello", 2)

	// GET returns the config with Pulsar's field names; list names it.
	code, b = p.get(t, "/admin/v3/functions/public/default/wc")
	var got map[string]any
	if code != http.StatusOK || json.Unmarshal(b, &got) != nil || got["name"] != "wc" || got["runtime"] != "GO" ||
		fmt.Sprint(got["inputs"]) != "[persistent://public/default/wc-in]" {
		t.Fatalf("get: %d %s", code, b)
	}
	if code, b = p.get(t, "/admin/v3/functions/public/default"); code != http.StatusOK || string(bytes.TrimSpace(b)) != `["wc"]` {
		t.Fatalf("list: %d %s", code, b)
	}

	// State is durable: a restart of the standalone keeps it.
	p.stop()
	p = startStandalone(t, dir)
	checkCounter("the", 3)
	checkCounter("hello", 2)
	waitRunning(t, p, "functions", name, 1)

	// Bad input is refused with a clear error.
	if code, body := fnUpload(t, p, http.MethodPost, "functions", "bad", fnConfig("bad", map[string]any{"processingGuarantees": "SOMETIMES"}), bin, ""); code != http.StatusBadRequest || !strings.Contains(body, "processingGuarantees") {
		t.Fatalf("bad guarantee: %d %s", code, body)
	}
	if code, body := fnUpload(t, p, http.MethodPost, "functions", "bad", fnConfig("bad", map[string]any{"parallelism": 2147483647}), bin, ""); code != http.StatusBadRequest {
		t.Fatalf("huge parallelism: %d %s", code, body)
	}
	if code, _ := p.get(t, "/admin/v3/functions/public/default/nosuch/status"); code != http.StatusNotFound {
		t.Fatalf("status of a missing function: %d", code)
	}

	// Delete stops it and removes it and its state.
	if code, b := fnHTTP(t, http.MethodDelete, p.http+"/admin/v3/functions/public/default/wc", "", nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", code, b)
	}
	if code, _ := p.get(t, "/admin/v3/functions/public/default/wc"); code != http.StatusNotFound {
		t.Fatalf("get after delete: %d", code)
	}
	deadline = time.Now().Add(20 * time.Second)
	for len(instancePids(t, fnPackagePath(t, dir, bin))) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("instance still running 20s after delete")
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.stop()
}
