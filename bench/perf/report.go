package perf

import (
	"fmt"
	"time"

	"github.com/magnetar-mq/magnetar/bench/report"
)

// Report builds the HTML report of a run (`magnetar perf ... --report`):
// the summary, messages per second and latency percentiles over time
// (Summary.Timeline: run with Common.Timeline), per-window latencies
// (Common.Window), and the latency distribution as a percentile curve.
// settings are the run's flags as the command saw them; m is the machine
// as probed at the start (LoadEnd is filled here).
func Report(sum Summary, settings []report.KV, m report.Machine, command string, started, ended time.Time) *report.Report {
	m.LoadEnd = report.LoadAverage()
	what := "publish latency (send to receipt)"
	if sum.LatencyOf == "end_to_end" {
		what = "end-to-end latency (publish to receive)"
	}
	r := &report.Report{
		Title:   "magnetar perf " + sum.Kind,
		Command: command,
		Started: started, Ended: ended,
		Machine:  m,
		Settings: settings,
		Notes:    []string{fmt.Sprintf("Latency is %s, in an HDR histogram of microseconds. Timelines are the progress intervals; the distribution merges the whole run.", what)},
	}
	l := sum.Latency
	sec := &report.Section{Title: "Summary"}
	sec.Tables = append(sec.Tables, report.Table{
		Header: []string{"messages", "MB", "errors", "seconds", "msg/s", "MB/s", "mean", "p50", "p95", "p99", "p99.9", "max"},
		Rows: [][]string{{fmt.Sprint(sum.Messages), fmt.Sprintf("%.2f", float64(sum.Bytes)/1e6), fmt.Sprint(sum.Errors), fmt.Sprintf("%.2f", sum.Seconds),
			fmt.Sprintf("%.0f", sum.MsgRate), fmt.Sprintf("%.2f", sum.MBRate), fmtDur(time.Duration(l.Mean * 1e3)), fmtDur(usDur(l.P50)), fmtDur(usDur(l.P95)),
			fmtDur(usDur(l.P99)), fmtDur(usDur(l.P999)), fmtDur(usDur(l.Max))}},
	})
	if sum.FirstError != "" {
		sec.Text = append(sec.Text, "First error: "+sum.FirstError)
	}
	if len(sum.Timeline) > 0 {
		rate := report.Chart{Title: "messages per second", X: report.Axis{Label: "seconds"}, Y: report.Axis{Label: "msg/s"}}
		lat := report.Chart{Title: "latency over time", X: report.Axis{Label: "seconds"}, Y: report.Axis{Label: "milliseconds", Log: true}}
		var msgs, p50, p99, mx []report.Point
		for _, p := range sum.Timeline {
			x := p.End - p.Seconds/2
			if p.Seconds > 0 {
				msgs = append(msgs, report.Point{X: x, Y: float64(p.Msgs) / p.Seconds})
			}
			if p.Samples > 0 {
				p50 = append(p50, report.Point{X: x, Y: float64(p.P50) / 1e3})
				p99 = append(p99, report.Point{X: x, Y: float64(p.P99) / 1e3})
				mx = append(mx, report.Point{X: x, Y: float64(p.Max) / 1e3})
			}
		}
		rate.Series = []report.Series{{Name: "messages", Points: msgs, Color: 0}}
		lat.Series = []report.Series{{Name: "p50", Points: p50, Color: 2}, {Name: "p99", Points: p99, Color: 0}, {Name: "max", Points: mx, Color: 3}}
		sec.Charts = append(sec.Charts, rate, lat)
	}
	if h := sum.LatencyHistogram(); h != nil && h.TotalCount() > 0 {
		sec.Charts = append(sec.Charts, report.Chart{
			Title: "latency distribution", X: report.Axis{Label: "percentile", Percentile: true}, Y: report.Axis{Label: "milliseconds", Log: true},
			Series: []report.Series{report.PercentileCurve(sum.LatencyOf, h, 1e-3)},
		})
	}
	r.Sections = append(r.Sections, sec)
	if len(sum.Windows) > 0 {
		ws := &report.Section{Title: "Windows", Text: []string{"Latency percentiles per window of the run (--window): a target such as \"p99 within a bound in every window\" is checked against these."}}
		tab := report.Table{Header: []string{"start (s)", "seconds", "messages", "p50", "p99", "p99.9", "max"}}
		var p99, mx []report.Point
		for _, w := range sum.Windows {
			tab.Rows = append(tab.Rows, []string{fmt.Sprintf("%.1f", w.Start), fmt.Sprintf("%.1f", w.Seconds), fmt.Sprint(w.Msgs),
				fmtDur(usDur(w.P50)), fmtDur(usDur(w.P99)), fmtDur(usDur(w.P999)), fmtDur(usDur(w.Max))})
			if w.Msgs > 0 {
				x := w.Start + w.Seconds/2
				p99 = append(p99, report.Point{X: x, Y: float64(w.P99) / 1e3})
				mx = append(mx, report.Point{X: x, Y: float64(w.Max) / 1e3})
			}
		}
		ws.Tables = append(ws.Tables, tab)
		ws.Charts = append(ws.Charts, report.Chart{Title: "p99 and max per window", X: report.Axis{Label: "seconds"}, Y: report.Axis{Label: "milliseconds", Log: true},
			Series: []report.Series{{Name: "p99", Points: p99, Color: 0}, {Name: "max", Points: mx, Color: 3}}})
		r.Sections = append(r.Sections, ws)
	}
	return r
}
