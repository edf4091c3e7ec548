// Package report writes a benchmark's results as one self-contained HTML
// file (`magnetar perf --report DIR`, `magnetar bench bookie --report
// DIR`): tables, line charts drawn as inline SVG (throughput and latency
// percentiles over time, latency distributions as percentile curves),
// stacked bars (where an operation's time went), and the machine and
// settings the run used. The page fetches nothing: no scripts, fonts or
// styles from elsewhere, so it opens from a file, offline, years later.
//
// # Model
//
// A Report is a title, the Machine (Probe reads it from /proc and the
// benchmark's directory), Settings (the flags), and Sections, each with
// text, tables, charts and bar charts. A Chart holds Series of points in
// data units; axes are linear, logarithmic, or a percentile axis on which
// x = 1/(1-q) is drawn logarithmically so 90 %, 99 %, 99.9 % ... are
// evenly spaced (PercentileCurve turns an HdrHistogram into such a
// series). Bands shade x ranges (checkpoints on a timeline).
//
// # Output
//
// Write renders the report into DIR/index.html and the data behind it
// into DIR/report.json. In the HTML each chart is an <svg class="plot">
// inside a <figure class="chart" data-series=N>; each series is a
// <polyline class="series" data-points=N>, each bar a <rect class="bar">.
// Tests check a report by those classes in a real browser.
package report
