package console

import (
	"html/template"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/magnetar-mq/magnetar/topichistory"
)

// window is how much history a chart shows.
const window = 15 * time.Minute

// Chart geometry (SVG user units); console.js uses the same numbers.
const (
	chartW = 600
	chartH = 150
)

// chart is one SVG line chart of a topic's history.
type chart struct {
	ID, Title, Unit string
	// Keys are the Sample JSON fields drawn, one polyline each.
	Keys   string
	Series []series
	Max    string
	W, H   int
}

type series struct {
	Key, Label, Class string
	Points            string
	Last              string
	N                 int
}

type seriesDef struct {
	key, label string
	get        func(topichistory.Sample) float64
}

var chartDefs = []struct {
	id, title, unit string
	series          []seriesDef
}{
	{"rate", "Message rate", "msg/s", []seriesDef{
		{"msgRateIn", "in", func(s topichistory.Sample) float64 { return s.MsgRateIn }},
		{"msgRateOut", "out", func(s topichistory.Sample) float64 { return s.MsgRateOut }}}},
	{"throughput", "Throughput", "B/s", []seriesDef{
		{"msgThroughputIn", "in", func(s topichistory.Sample) float64 { return s.MsgThroughputIn }},
		{"msgThroughputOut", "out", func(s topichistory.Sample) float64 { return s.MsgThroughputOut }}}},
	{"backlog", "Backlog", "messages", []seriesDef{
		{"msgBacklog", "backlog", func(s topichistory.Sample) float64 { return float64(s.MsgBacklog) }}}},
	{"storage", "Storage size", "B", []seriesDef{
		{"storageSize", "stored", func(s topichistory.Sample) float64 { return float64(s.StorageSize) }}}},
}

// charts draws the topic's charts over the last window ending now.
func charts(h []topichistory.Sample) []chart {
	now := time.Now().UnixMilli()
	start := now - window.Milliseconds()
	var out []chart
	for _, def := range chartDefs {
		c := chart{ID: def.id, Title: def.title, Unit: def.unit, W: chartW, H: chartH}
		maxV := 0.0
		for _, s := range h {
			if s.At < start {
				continue
			}
			for _, sd := range def.series {
				maxV = math.Max(maxV, sd.get(s))
			}
		}
		top := niceCeil(maxV)
		var keys []string
		for i, sd := range def.series {
			keys = append(keys, sd.key)
			se := series{Key: sd.key, Label: sd.label, Class: "s" + strconv.Itoa(i)}
			var pts []string
			for _, s := range h {
				if s.At < start {
					continue
				}
				x := float64(chartW) * float64(s.At-start) / float64(window.Milliseconds())
				y := float64(chartH) - float64(chartH)*sd.get(s)/top
				pts = append(pts, strconv.FormatFloat(x, 'f', 1, 64)+","+strconv.FormatFloat(y, 'f', 1, 64))
				se.Last = human(sd.get(s))
			}
			se.Points, se.N = strings.Join(pts, " "), len(pts)
			c.Series = append(c.Series, se)
		}
		c.Keys = strings.Join(keys, ",")
		c.Max = human(top)
		out = append(out, c)
	}
	return out
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for v ≤ 0),
// the chart's top.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// human formats a number with an SI suffix (k, M, G, T).
func human(v float64) string {
	a := math.Abs(v)
	for _, u := range []struct {
		f float64
		s string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if a >= u.f {
			return strconv.FormatFloat(v/u.f, 'f', 1, 64) + u.s
		}
	}
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// bytesIEC formats a byte count in KiB, MiB, ...
func bytesIEC(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return strconv.FormatFloat(v, 'f', 0, 64) + " B"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i]
}

func pathEscape(s string) string { return url.PathEscape(s) }

// tenantNS returns the tenant and namespace of a full topic name.
func tenantNS(full string) (string, string, bool) {
	_, rest, ok := strings.Cut(full, "://")
	if !ok {
		return "", "", false
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) != 3 {
		return "", "", false
	}
	return parts[0], parts[1], true
}

var funcs = template.FuncMap{
	"human":    human,
	"bytes":    func(v int64) string { return bytesIEC(float64(v)) },
	"fbytes":   bytesIEC,
	"pct":      func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + "%" },
	"ms":       func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) + " ms" },
	"esc":      url.PathEscape,
	"topicurl": topicHref,
}
