package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// promQLWords are PromQL's function names, aggregations and keywords:
// identifiers in an expression that are not metric names.
var promQLWords = map[string]bool{
	"sum": true, "avg": true, "min": true, "max": true, "count": true, "rate": true, "irate": true,
	"increase": true, "histogram_quantile": true, "by": true, "without": true, "on": true,
	"ignoring": true, "group_left": true, "group_right": true, "bool": true, "and": true, "or": true,
	"unless": true, "offset": true, "topk": true, "bottomk": true, "abs": true, "clamp_min": true,
	"clamp_max": true, "delta": true, "deriv": true, "label_values": true, "le": true, "inf": true, "nan": true,
}

var (
	promStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promRanges   = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring)\s*\([^)]*\)`)
	promIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	labelArg     = regexp.MustCompile(`,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)
	grafanaVars  = regexp.MustCompile(`\$\{?[a-zA-Z_][a-zA-Z0-9_]*\}?`)
)

// promMetrics returns the metric names an expression selects.
func promMetrics(expr string) []string {
	e := grafanaVars.ReplaceAllString(expr, "")
	// A Grafana variable query label_values(selector, label): the label
	// is not a metric.
	if strings.HasPrefix(strings.TrimSpace(e), "label_values(") {
		e = labelArg.ReplaceAllString(e, ")")
	}
	e = promStrings.ReplaceAllString(e, "")
	e = promMatchers.ReplaceAllString(e, " ")
	e = promRanges.ReplaceAllString(e, " ")
	e = promGrouping.ReplaceAllString(e, " ")
	var out []string
	for _, loc := range promIdent.FindAllStringIndex(e, -1) {
		id := e[loc[0]:loc[1]]
		rest := strings.TrimLeft(e[loc[1]:], " ")
		if promQLWords[strings.ToLower(id)] || strings.HasPrefix(rest, "(") {
			continue
		}
		if loc[0] > 0 && (e[loc[0]-1] >= '0' && e[loc[0]-1] <= '9' || e[loc[0]-1] == '.') {
			continue // the exponent or unit of a number
		}
		out = append(out, id)
	}
	return out
}

func TestPromMetrics(t *testing.T) {
	got := promMetrics(`histogram_quantile(0.99, sum by (le) (rate(bookie_journal_sync_latency_seconds_bucket{bookie=~"$bookie"}[1m]))) / ignoring(x) pulsar_rate_in{topic="a b"} + 1e3`)
	want := []string{"bookie_journal_sync_latency_seconds_bucket", "pulsar_rate_in"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("promMetrics = %v, want %v", got, want)
	}
	if got := promMetrics(`label_values(pulsar_rate_in{namespace=~"$namespace"}, topic)`); len(got) != 1 || got[0] != "pulsar_rate_in" {
		t.Fatalf("label_values: %v", got)
	}
}

// dashboardExprs collects every PromQL expression of the dashboards under
// grafana/: panel targets and query variables.
func dashboardExprs(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "grafana", "*.json"))
	if err != nil || len(files) < 3 {
		t.Fatalf("want the broker, bookie and journal dashboards under grafana/, found %v (%v)", files, err)
	}
	out := map[string][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Title  string
			Panels []struct {
				Title   string
				Targets []struct{ Expr string }
			}
			Templating struct {
				List []struct {
					Type  string
					Query any
				}
			}
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d.Title == "" || len(d.Panels) == 0 {
			t.Fatalf("%s: no title or panels", f)
		}
		for _, p := range d.Panels {
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", f, p.Title)
			}
			for _, tg := range p.Targets {
				out[filepath.Base(f)] = append(out[filepath.Base(f)], tg.Expr)
			}
		}
		for _, v := range d.Templating.List {
			if q, ok := v.Query.(map[string]any); ok && v.Type == "query" {
				out[filepath.Base(f)] = append(out[filepath.Base(f)], q["query"].(string))
			}
		}
	}
	return out
}

// TestGrafanaDashboardsE2E: every metric a dashboard under grafana/
// queries is exported on /metrics by a running standalone with traffic
// (a producer, a consumer, a backlog).
func TestGrafanaDashboardsE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	exprs := dashboardExprs(t)
	p := startStandalone(t, t.TempDir())
	c := p.client(t)
	const topic = "persistent://public/default/grafana"
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "dash"})
	if err != nil {
		t.Fatal(err)
	}
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(payload(i))}); err != nil {
			t.Fatal(err)
		}
	}
	receiveUntil(t, cons, 30*time.Second, func(seen map[string]int) bool { return len(seen) >= 5 })

	code, body := p.get(t, "/metrics")
	if code != 200 {
		t.Fatalf("/metrics: HTTP %d", code)
	}
	exported := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		exported[name] = true
	}
	checked := map[string]bool{}
	var missing []string
	for file, list := range exprs {
		for _, e := range list {
			names := promMetrics(e)
			if len(names) == 0 {
				t.Errorf("%s: query %q selects no metric", file, e)
			}
			for _, n := range names {
				checked[n] = true
				if !exported[n] {
					missing = append(missing, file+": "+n+" (in "+e+")")
				}
			}
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("not exported by a standalone: %s", m)
	}
	if len(checked) < 30 {
		t.Fatalf("only %d distinct metrics checked: the dashboards should cover broker, bookie and journal", len(checked))
	}
	t.Logf("%d distinct metrics of %d queries are exported", len(checked), func() int {
		n := 0
		for _, l := range exprs {
			n += len(l)
		}
		return n
	}())
	prod.Close()
	cons.Close()
	c.Close()
	p.stop()
}
