package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/magnetar-mq/magnetar/internal/testbrowser"
)

// sample builds a report with every kind of content: a timeline with a
// band, a log-scale chart, a percentile curve, stacked bars, a table, and
// names that need escaping.
func sample() *Report {
	h := hdrhistogram.New(1, 1e9, 3)
	for v := int64(1); v <= 100000; v++ {
		h.RecordValue(v * 10) // 10 ns .. 1 ms
	}
	var rate, p99 []Point
	for i := range 50 {
		rate = append(rate, Point{X: float64(i) / 10, Y: 1e6 + float64(i%7)*1e4})
		p99 = append(p99, Point{X: float64(i) / 10, Y: 2 + float64(i%5)})
	}
	return &Report{
		Title:   `bench <script>alert(1)</script>`,
		Command: "magnetar bench bookie --report /tmp/r",
		Started: time.Unix(1e9, 0), Ended: time.Unix(1e9+60, 0),
		Machine:  Probe(os.TempDir()),
		Settings: []KV{{"sizes", "100"}, {"outstanding", "4096"}},
		Notes:    []string{"How to read this page."},
		Sections: []*Section{{
			Title:  "100 B",
			Text:   []string{"text"},
			Tables: []Table{{Caption: "cells", Header: []string{"kind", "ops/s"}, Rows: [][]string{{"bookie", "1,000,000"}, {"raw", "3,000,000"}}}},
			Bars: []Bars{{Title: "where an add's time goes", Unit: "µs", Segments: []string{"cache", "queue", "sync"},
				Rows: []BarRow{{Label: "mean", Values: []float64{1, 2, 900}}, {Label: "p99", Values: []float64{3, 5, 2000}}}}},
			Charts: []Chart{
				{Title: "throughput", X: Axis{Label: "s"}, Y: Axis{Label: "adds/s"}, Series: []Series{{Name: "bookie", Points: rate, Color: -1}},
					Bands: []Band{{From: 1, To: 1.2, Label: "checkpoint"}}},
				{Title: "p99 over time", X: Axis{Label: "s"}, Y: Axis{Label: "ms", Log: true}, Series: []Series{{Name: "bookie", Points: p99, Color: 0}, {Name: "raw", Points: p99, Dashed: true, Color: 1}}},
				{Title: "latency distribution", X: Axis{Label: "percentile", Percentile: true}, Y: Axis{Label: "ms", Log: true}, Series: []Series{PercentileCurve("bookie", h, 1e-6)}},
			},
		}},
	}
}

// TestHTMLSelfContained renders a report and checks the page references
// nothing outside itself (no script, link, image, import or url()), that
// text from the run is escaped, and that report.json holds the same data.
func TestHTMLSelfContained(t *testing.T) {
	r := sample()
	dir := t.TempDir()
	p, err := r.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, bad := range []string{"<script", "src=", "href=", "url(", "@import", "<link"} {
		if strings.Contains(html, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if !strings.Contains(html, "bench &lt;script&gt;") {
		t.Error("title not escaped")
	}
	for _, want := range []string{`class="plot"`, `class="series"`, `class="bar"`, `class="band"`, "99.9%", "1,000,000", "load average"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	var back Report
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Title != r.Title || len(back.Sections) != 1 || len(back.Sections[0].Charts) != 3 {
		t.Fatalf("report.json = %+v", back)
	}
}

// TestPercentileCurve checks the curve of 10 ns .. 1 ms uniform: x and y
// never decrease, the point at x = 100 (p99) is ~990 µs, the last is the
// maximum, and tick labels read as percentiles.
func TestPercentileCurve(t *testing.T) {
	s := sample().Sections[0].Charts[2].Series[0]
	if len(s.Points) < 20 {
		t.Fatalf("%d points", len(s.Points))
	}
	for i := 1; i < len(s.Points); i++ {
		if s.Points[i].X <= s.Points[i-1].X || s.Points[i].Y < s.Points[i-1].Y {
			t.Fatalf("point %d %+v after %+v", i, s.Points[i], s.Points[i-1])
		}
	}
	for _, p := range s.Points {
		if p.X > 99.9 && p.X < 100.1 && (p.Y < 0.985 || p.Y > 0.995) {
			t.Errorf("p99 = %v ms, want ~0.99", p.Y)
		}
	}
	if last := s.Points[len(s.Points)-1]; last.Y < 0.999 || last.Y > 1.001 {
		t.Errorf("last point %+v, want the maximum 1 ms", last)
	}
	for x, want := range map[float64]string{1: "0%", 10: "90%", 100: "99%", 1000: "99.9%", 1e5: "99.999%"} {
		if got := pctLabel(x); got != want {
			t.Errorf("pctLabel(%v) = %q, want %q", x, got, want)
		}
	}
}

// TestReportInBrowser opens the sample report in headless chromium: every
// chart and bar chart is rendered with a size, every series is drawn as a
// line, the bars are drawn, and the page fetched nothing.
func TestReportInBrowser(t *testing.T) {
	dir := t.TempDir()
	p, err := sample().Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testbrowser.New(t, 1280, 1000)
	figs, res := testbrowser.Report(t, ctx, p)
	if len(res) != 0 {
		t.Errorf("the page fetched %v", res)
	}
	if len(figs) != 4 {
		t.Fatalf("%d figures, want 4: %+v", len(figs), figs)
	}
	testbrowser.RequireDrawn(t, figs)
	if figs[0].Bars != 6 {
		t.Errorf("bar chart %+v: want 6 bars drawn", figs[0])
	}
}
