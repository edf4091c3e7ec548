package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/chromedp/chromedp"

	"github.com/magnetar-mq/magnetar/internal/testbrowser"
)

// artefactDir is where the browser tests keep their screenshots:
// $MAGNETAR_ARTIFACTS when set, else a fresh directory under the system
// temp dir that outlives the test (its path is logged).
func artefactDir(t *testing.T) string {
	t.Helper()
	base := os.Getenv("MAGNETAR_ARTIFACTS")
	if base != "" {
		if err := os.MkdirAll(base, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := os.MkdirTemp(base, "console-"+t.Name()+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// browser starts headless chromium for the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	return testbrowser.New(t, 1280, 1400)
}

// do runs browser steps, failing the test on an error.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// get runs one browser action that returns a value.
func get[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func textOf(t *testing.T, ctx context.Context, css string) string {
	t.Helper()
	return strings.TrimSpace(get(t, ctx, chromedp.Text(chromedp.CSS(css))))
}

func shot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png := get(t, ctx, chromedp.FullScreenshot(100))
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	if len(png) < 1000 {
		t.Fatalf("screenshot %s is only %d bytes", name, len(png))
	}
}

// topicStatsJSON reads a topic's stats from the admin API.
func topicStatsJSON(t *testing.T, p *proc, topicPath string) map[string]any {
	t.Helper()
	code, body := p.get(t, "/admin/v2/persistent/"+topicPath+"/stats")
	if code != 200 {
		t.Fatalf("stats of %s: HTTP %d %s", topicPath, code, body)
	}
	var st map[string]any
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func subBacklog(t *testing.T, p *proc, topicPath, sub string) int64 {
	t.Helper()
	st := topicStatsJSON(t, p, topicPath)
	s, ok := st["subscriptions"].(map[string]any)[sub].(map[string]any)
	if !ok {
		t.Fatalf("no subscription %s in %v", sub, st["subscriptions"])
	}
	return int64(s["msgBacklog"].(float64))
}

// waitFor polls cond (an observable state, not a timer) until it holds.
func consoleWaitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestConsoleE2E drives the console of a standalone with traffic in
// headless chromium: the namespace's topic list, a topic page whose
// charts have points and whose backlog matches the admin API, the
// confirmation a destructive action needs (cancel changes nothing,
// confirm skips the backlog through the admin API), and the error page
// of a missing topic.
func TestConsoleE2E(t *testing.T) {
	ctx := browser(t)
	shots := artefactDir(t)
	p := startStandalone(t, t.TempDir(), "--console-sample-interval", "1s")
	c := p.client(t)

	const topic = "persistent://public/default/console-t"
	const parted = "persistent://public/default/console-p"
	// A durable subscription with a backlog and no consumer connected.
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "audit"})
	if err != nil {
		t.Fatal(err)
	}
	cons.Close()
	if code, _, body := httpDo(t, "PUT", p.http+"/admin/v2/persistent/public/default/console-p/partitions", "3", false); code != 204 {
		t.Fatalf("create partitioned: %d %s", code, body)
	}
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "console-producer"})
	if err != nil {
		t.Fatal(err)
	}
	pprod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: parted})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// Traffic until the sampler has seen it: a rate needs two samples
	// around some sends, so keep sending until the history shows one.
	var n int64
	consoleWaitFor(t, "3 history samples with traffic", 60*time.Second, func() bool {
		if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(payload(int(n)))}); err != nil {
			t.Fatal(err)
		}
		if _, err := pprod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(payload(int(n))), Key: strconv.FormatInt(n, 10)}); err != nil {
			t.Fatal(err)
		}
		n++
		_, body := p.get(t, "/console/topics/persistent/public/default/console-t/history")
		var h struct{ Samples []map[string]float64 }
		if err := json.Unmarshal(body, &h); err != nil {
			t.Fatalf("history JSON: %v: %s", err, body)
		}
		in := 0.0
		for _, s := range h.Samples {
			in += s["msgRateIn"]
		}
		return len(h.Samples) >= 3 && in > 0
	})
	if got := subBacklog(t, p, "public/default/console-t", "audit"); got != n {
		t.Fatalf("admin backlog %d, want %d", got, n)
	}

	// Namespace page: both topics listed, backlog as the admin API says.
	do(t, ctx, "namespace page", chromedp.Navigate(p.http+"/console/namespaces/public/default"), chromedp.WaitVisible(chromedp.ID("topics")))
	rows := get(t, ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#topics tbody tr[data-topic]")).map(r => r.dataset.topic)`))
	backlog := textOf(t, ctx, `#topics tr[data-topic="`+topic+`"] td.backlog`)
	shot(t, ctx, shots, "namespace")
	if !contains(rows, topic) || !contains(rows, parted) {
		t.Fatalf("topic list %v lacks %s or %s", rows, topic, parted)
	}
	if backlog != strconv.FormatInt(n, 10) {
		t.Fatalf("namespace page backlog %q, admin API %d", backlog, n)
	}

	// Topic page: charts with points, numbers matching the admin API.
	do(t, ctx, "topic page", chromedp.Navigate(p.http+"/console/topics/persistent/public/default/console-t"), chromedp.WaitVisible(chromedp.ID("chart-rate")))
	statBacklog := textOf(t, ctx, "#stat-backlog")
	subRowBacklog := textOf(t, ctx, `#subscriptions tr[data-sub="audit"] td.backlog`)
	points := get(t, ctx, chromedp.AttributeValue(chromedp.CSS(`#chart-rate polyline[data-key="msgRateIn"]`), "points")).Value
	nPoints := get(t, ctx, chromedp.Evaluate[int](`document.querySelector('#chart-backlog polyline').points.numberOfItems`))
	shot(t, ctx, shots, "topic")
	adminBacklog := subBacklog(t, p, "public/default/console-t", "audit")
	if statBacklog != strconv.FormatInt(adminBacklog, 10) || subRowBacklog != statBacklog {
		t.Fatalf("topic page backlog %q / subscription row %q, admin API %d", statBacklog, subRowBacklog, adminBacklog)
	}
	if len(strings.Fields(points)) < 3 || nPoints < 3 {
		t.Fatalf("rate chart points %q, backlog chart %d points: want ≥ 3", points, nPoints)
	}
	// Some rate point is above the baseline (y < 150): the sends show.
	above := false
	for _, pt := range strings.Fields(points) {
		_, y, _ := strings.Cut(pt, ",")
		if v, _ := strconv.ParseFloat(y, 64); v < 150 {
			above = true
		}
	}
	if !above {
		t.Fatalf("rate chart is flat at zero: %q", points)
	}
	// The script redraws from the history JSON: the point count grows.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`document.querySelector('#chart-backlog polyline').points.numberOfItems > %d`, nPoints),
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("charts not refreshed by the script: %v", err)
	}

	// Peek changes nothing and needs no confirmation: the backlog's
	// first messages appear on the page.
	do(t, ctx, "peek", chromedp.Click(chromedp.CSS(`#subscriptions tr[data-sub="audit"] button[data-action="peek"]`)),
		chromedp.WaitVisible(chromedp.ID("peek-output")))
	if out := textOf(t, ctx, "#peek-output"); !strings.Contains(out, payload(0)) || !strings.Contains(out, "#3") {
		t.Fatalf("peek shows %q, want the first three messages from %s", out, payload(0))
	}
	if got := subBacklog(t, p, "public/default/console-t", "audit"); got != n {
		t.Fatalf("peek changed the backlog to %d", got)
	}

	// Skip all needs its confirmation: Cancel leaves the backlog alone.
	skipAll := chromedp.CSS(`#subscriptions tr[data-sub="audit"] button[data-action="skip_all"]`)
	do(t, ctx, "click skip all", chromedp.Click(skipAll), chromedp.WaitVisible(chromedp.ID("confirm")))
	open := get(t, ctx, chromedp.Evaluate[bool](`document.getElementById("confirm").open`))
	shot(t, ctx, shots, "confirm")
	if !open {
		t.Fatal("skip all did not open the confirmation dialog")
	}
	if got := subBacklog(t, p, "public/default/console-t", "audit"); got != n {
		t.Fatalf("backlog %d before confirming, want %d", got, n)
	}
	do(t, ctx, "cancel", chromedp.Click(chromedp.ID("confirm-cancel")), chromedp.WaitNotVisible(chromedp.ID("confirm")))
	// The dialog's close event is queued: wait for the page to report.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("action-result").dataset.state === "cancelled"`,
		chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("after cancel: %v (page says %q)", err, textOf(t, ctx, "#action-result"))
	}
	if got := subBacklog(t, p, "public/default/console-t", "audit"); got != n {
		t.Fatalf("cancel changed the backlog to %d", got)
	}
	// Confirm: the page calls the admin API and the backlog is gone.
	do(t, ctx, "confirm skip all", chromedp.Click(skipAll), chromedp.WaitVisible(chromedp.ID("confirm")), chromedp.Click(chromedp.ID("confirm-ok")))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("action-result").dataset.state === "ok"`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("confirmed skip all: %v (page says %q)", err, textOf(t, ctx, "#action-result"))
	}
	if got := subBacklog(t, p, "public/default/console-t", "audit"); got != 0 {
		t.Fatalf("backlog %d after confirmed skip all, want 0", got)
	}

	// Reset cursor to a time before the first send (chosen in the row's
	// date-time field, in the browser's time zone): the backlog is back.
	do(t, ctx, "topic page again", chromedp.Navigate(p.http+"/console/topics/persistent/public/default/console-t"), chromedp.WaitVisible(chromedp.ID("subscriptions")))
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
		const d = new Date(%d), pad = v => String(v).padStart(2, "0");
		const el = document.querySelector('#subscriptions tr[data-sub="audit"] .reset-time');
		el.value = d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + "T" + pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
		return el.value !== "";
	})()`, start.Add(-2*time.Second).UnixMilli()))); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "reset cursor", chromedp.Click(chromedp.CSS(`#subscriptions tr[data-sub="audit"] button[data-action="reset"]`)),
		chromedp.WaitVisible(chromedp.ID("confirm")))
	if got := subBacklog(t, p, "public/default/console-t", "audit"); got != 0 {
		t.Fatalf("reset moved the cursor before its confirmation: backlog %d", got)
	}
	do(t, ctx, "confirm reset", chromedp.Click(chromedp.ID("confirm-ok")))
	consoleWaitFor(t, "the backlog back after the reset", 20*time.Second, func() bool {
		return subBacklog(t, p, "public/default/console-t", "audit") == n
	})
	// Delete, confirmed: the subscription is gone.
	do(t, ctx, "topic page again", chromedp.Navigate(p.http+"/console/topics/persistent/public/default/console-t"), chromedp.WaitVisible(chromedp.ID("subscriptions")))
	do(t, ctx, "delete", chromedp.Click(chromedp.CSS(`#subscriptions tr[data-sub="audit"] button[data-action="delete"]`)),
		chromedp.WaitVisible(chromedp.ID("confirm")))
	if text := textOf(t, ctx, "#confirm-text"); !strings.Contains(text, "audit") || !strings.Contains(text, strconv.FormatInt(n, 10)) {
		t.Fatalf("delete confirmation says %q: want the subscription and its backlog", text)
	}
	do(t, ctx, "confirm delete", chromedp.Click(chromedp.ID("confirm-ok")))
	consoleWaitFor(t, "the subscription deleted", 20*time.Second, func() bool {
		st := topicStatsJSON(t, p, "public/default/console-t")
		_, ok := st["subscriptions"].(map[string]any)["audit"]
		return !ok
	})

	// Partitioned topic: one page over its partitions.
	do(t, ctx, "partitioned topic page", chromedp.Navigate(p.http+"/console/topics/persistent/public/default/console-p"), chromedp.WaitVisible(chromedp.ID("partitions")))
	if parts := get(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#partitions tbody tr").length`)); parts != 3 {
		t.Fatalf("partitioned topic page lists %d partitions, want 3", parts)
	}

	// A missing topic is an error page (404), not a 500.
	do(t, ctx, "missing topic", chromedp.Navigate(p.http+"/console/topics/persistent/public/default/no-such-topic"), chromedp.WaitVisible(chromedp.ID("error")))
	status := get(t, ctx, chromedp.AttributeValue(chromedp.ID("error"), "data-status")).Value
	msg := textOf(t, ctx, "#error-message")
	shot(t, ctx, shots, "missing-topic")
	if status != "404" || !strings.Contains(msg, "no-such-topic") {
		t.Fatalf("missing topic page: status %q message %q", status, msg)
	}
	for path, want := range map[string]int{
		"/console/topics/persistent/public/default/no-such-topic":         404,
		"/console/topics/persistent/public/nope/t":                        404,
		"/console/topics/bogus/public/default/t":                          404,
		"/console/topics/persistent/public/default/no-such-topic/history": 404,
		"/console/namespaces/public/nope":                                 404,
		"/console/tenants/nope":                                           404,
		"/console/no/such/page":                                           404,
		"/console":                                                        200,
		"/console/bookies":                                                200,
		"/console/brokers":                                                200,
	} {
		if code, body := p.get(t, path); code != want {
			t.Errorf("GET %s: HTTP %d, want %d: %.300s", path, code, want, body)
		}
	}

	// Bookies: the standalone's bookie, writable, with disk and journal
	// figures.
	do(t, ctx, "bookies page", chromedp.Navigate(p.http+"/console/bookies"), chromedp.WaitVisible(chromedp.ID("bookies")))
	state := textOf(t, ctx, `#bookies tr[data-bookie] td.state`)
	bookieRow := textOf(t, ctx, `#bookies tr[data-bookie]`)
	shot(t, ctx, shots, "bookies")
	if state != "writable" || !strings.Contains(bookieRow, "%") || !strings.Contains(bookieRow, " ms") {
		t.Fatalf("bookie row %q (state %q): want writable with disk usage and journal sync latency", bookieRow, state)
	}
	prod.Close()
	pprod.Close()
	c.Close()
	p.stop()
}

// TestConsoleDisabledE2E: --console=false serves no console.
func TestConsoleDisabledE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	p := startStandalone(t, t.TempDir(), "--console=false")
	if code, _ := p.get(t, "/console"); code != 404 {
		t.Fatalf("GET /console with --console=false: HTTP %d, want 404", code)
	}
	if code, _ := p.get(t, "/admin/v2/clusters"); code != 200 {
		t.Fatalf("admin API gone with the console: HTTP %d", code)
	}
	p.stop()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
