package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Report is one benchmark run's page.
type Report struct {
	Title string `json:"title"`
	// Command is the command line that produced it.
	Command string    `json:"command"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	Machine Machine   `json:"machine"`
	// Settings are the run's flags and defaults, in order.
	Settings []KV `json:"settings"`
	// Notes are paragraphs under the title (how to read the page).
	Notes    []string   `json:"notes,omitempty"`
	Sections []*Section `json:"sections"`
}

// KV is one setting.
type KV struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Section is a heading with its content, in this order: text, tables,
// bar charts, charts.
type Section struct {
	Title  string   `json:"title"`
	Text   []string `json:"text,omitempty"`
	Tables []Table  `json:"tables,omitempty"`
	Bars   []Bars   `json:"bars,omitempty"`
	Charts []Chart  `json:"charts,omitempty"`
}

// Table is a plain table of strings.
type Table struct {
	Caption string     `json:"caption,omitempty"`
	Header  []string   `json:"header"`
	Rows    [][]string `json:"rows"`
}

// Axis describes one axis of a chart.
type Axis struct {
	Label string `json:"label"`
	// Log draws the axis logarithmically (values ≤ 0 are dropped).
	Log bool `json:"log,omitempty"`
	// Percentile marks an x axis whose values are 1/(1-q) (PercentileCurve):
	// drawn logarithmically, ticks labelled as percentiles.
	Percentile bool `json:"percentile,omitempty"`
	// Min and Max, when Max > Min, fix the range; otherwise it fits the
	// data (a linear y axis starts at 0).
	Min float64 `json:"min,omitempty"`
	Max float64 `json:"max,omitempty"`
}

// Chart is a line chart.
type Chart struct {
	Title  string   `json:"title"`
	X      Axis     `json:"x"`
	Y      Axis     `json:"y"`
	Series []Series `json:"series"`
	// Bands shade ranges of x, behind the series.
	Bands []Band `json:"bands,omitempty"`
	// Caption is a line under the chart.
	Caption string `json:"caption,omitempty"`
}

// Series is one line of a chart.
type Series struct {
	Name   string  `json:"name"`
	Points []Point `json:"points"`
	// Dashed draws the line dashed (baselines).
	Dashed bool `json:"dashed,omitempty"`
	// Color picks a palette entry; a negative value, the series' index.
	Color int `json:"color"`
}

// Point is one point in data units.
type Point struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// Band is a shaded range of x.
type Band struct {
	From  float64 `json:"from"`
	To    float64 `json:"to"`
	Label string  `json:"label,omitempty"`
}

// Bars is a horizontal stacked bar chart: one bar per row, one segment
// per Segments entry.
type Bars struct {
	Title    string   `json:"title"`
	Unit     string   `json:"unit"`
	Segments []string `json:"segments"`
	Rows     []BarRow `json:"rows"`
	Caption  string   `json:"caption,omitempty"`
}

// BarRow is one bar: Values[i] is segment i's length.
type BarRow struct {
	Label  string    `json:"label"`
	Values []float64 `json:"values"`
}

// PercentileCurve returns h's latency distribution as a series for a
// Percentile x axis: for quantiles from 0 up to the last recorded value,
// x = 1/(1-q) and y = the value at q times scale (1e-6 turns nanoseconds
// into milliseconds).
func PercentileCurve(name string, h *hdrhistogram.Histogram, scale float64) Series {
	s := Series{Name: name, Color: -1}
	if h == nil || h.TotalCount() == 0 {
		return s
	}
	total := float64(h.TotalCount())
	// Steps of a tenth of a decade of 1/(1-q), up to the last sample.
	last := total // x of the highest value: q = 1 - 1/total
	for e := 0.0; ; e += 0.1 {
		x := math.Pow(10, e)
		if x > last {
			x = last
		}
		q := 100 * (1 - 1/x)
		s.Points = append(s.Points, Point{X: x, Y: float64(h.ValueAtQuantile(q)) * scale})
		if x >= last {
			break
		}
	}
	s.Points = append(s.Points, Point{X: last * 1.0001, Y: float64(h.Max()) * scale})
	return s
}

// Write renders r into dir/index.html and its data into dir/report.json,
// creating dir, and returns the HTML file's path.
func (r *Report) Write(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	page, err := r.HTML()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "index.html")
	if err := os.WriteFile(p, page, 0o644); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), data, 0o644); err != nil {
		return "", err
	}
	return p, nil
}

// HTML renders the page.
func (r *Report) HTML() ([]byte, error) {
	var b bytes.Buffer
	if err := pageTmpl.Execute(&b, r); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return b.Bytes(), nil
}

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"chart": func(c Chart) template.HTML { return template.HTML(c.svg()) },
	"bars":  func(b Bars) template.HTML { return template.HTML(b.svg()) },
	"when":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1180px;padding:0 16px;color:#1d2430;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 8px;border-bottom:1px solid #d8dde6;padding-bottom:4px}
code,pre{font:12.5px ui-monospace,SFMono-Regular,Menlo,monospace;background:#f3f5f8;border-radius:4px}
pre{padding:8px 10px;white-space:pre-wrap;word-break:break-all}
table{border-collapse:collapse;margin:8px 0 12px;font-size:13px}
th,td{border:1px solid #d8dde6;padding:3px 8px;text-align:right}th{background:#f3f5f8}
td:first-child,th:first-child{text-align:left}
caption{caption-side:top;text-align:left;color:#556;padding:2px 0}
.kv td{text-align:left}.kv td:first-child{color:#556}
.grid{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}
figure.chart{margin:0;border:1px solid #e3e7ee;border-radius:6px;padding:6px 8px;background:#fff}
figure.chart figcaption{font-size:12px;color:#556;max-width:560px}
svg.plot{display:block}
svg text{font:11px system-ui,sans-serif;fill:#334}
.muted{color:#667}
</style></head><body>
<h1>{{.Title}}</h1>
<p class="muted">{{when .Started}} – {{when .Ended}}</p>
{{if .Command}}<pre>{{.Command}}</pre>{{end}}
{{range .Notes}}<p>{{.}}</p>{{end}}
<h2>Machine and settings</h2>
<div class="grid">
<table class="kv" id="machine"><caption>Machine</caption>
{{range .Machine.Rows}}<tr><td>{{.Key}}</td><td>{{.Value}}</td></tr>{{end}}
</table>
<table class="kv" id="settings"><caption>Settings</caption>
{{range .Settings}}<tr><td>{{.Key}}</td><td>{{.Value}}</td></tr>{{end}}
</table>
</div>
{{range .Sections}}<section>
<h2>{{.Title}}</h2>
{{range .Text}}<p>{{.}}</p>{{end}}
{{range .Tables}}<table>{{if .Caption}}<caption>{{.Caption}}</caption>{{end}}
<tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{end}}<div class="grid">
{{range .Bars}}<figure class="chart" data-series="{{len .Rows}}">{{bars .}}{{if .Caption}}<figcaption>{{.Caption}}</figcaption>{{end}}</figure>
{{end}}{{range .Charts}}<figure class="chart" data-series="{{len .Series}}">{{chart .}}{{if .Caption}}<figcaption>{{.Caption}}</figcaption>{{end}}</figure>
{{end}}</div>
</section>
{{end}}</body></html>
`))
