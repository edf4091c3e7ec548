package report

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// palette holds the series colours (colour-blind friendly, Okabe–Ito
// order, black last).
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"}

func color(i int) string { return palette[((i%len(palette))+len(palette))%len(palette)] }

// Chart geometry, in pixels.
const (
	chartW, chartH = 560, 300
	padL, padR     = 64, 14
	padT, padB     = 28, 46
	legendRow      = 16
)

// scale maps data values of one axis to pixels.
type scale struct {
	lo, hi   float64 // in axis units (log10 of the value on log axes)
	log      bool
	pct      bool
	from, to float64 // pixel range
}

func (s scale) unit(v float64) (float64, bool) {
	if s.log {
		if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return 0, false
		}
		return math.Log10(v), true
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

func (s scale) px(v float64) (float64, bool) {
	u, ok := s.unit(v)
	if !ok {
		return 0, false
	}
	if s.hi == s.lo {
		return (s.from + s.to) / 2, true
	}
	return s.from + (u-s.lo)/(s.hi-s.lo)*(s.to-s.from), true
}

// newScale fits an axis to the values vs.
func newScale(a Axis, vs []float64, from, to float64, zero bool) scale {
	s := scale{log: a.Log || a.Percentile, pct: a.Percentile, from: from, to: to}
	lo, hi := math.Inf(1), math.Inf(-1)
	if a.Max > a.Min {
		lo, hi = a.Min, a.Max
		if s.log {
			lo, hi = math.Log10(math.Max(lo, 1e-300)), math.Log10(math.Max(hi, 1e-300))
		}
	} else {
		for _, v := range vs {
			if u, ok := s.unit(v); ok {
				lo, hi = math.Min(lo, u), math.Max(hi, u)
			}
		}
		if math.IsInf(lo, 1) {
			lo, hi = 0, 1
		}
		if s.log {
			lo, hi = math.Floor(lo), math.Ceil(hi)
			if hi == lo {
				hi++
			}
		} else {
			if zero && lo > 0 {
				lo = 0
			}
			if hi == lo {
				hi = lo + 1
			}
			step := niceStep((hi - lo) / 5)
			lo, hi = math.Floor(lo/step)*step, math.Ceil(hi/step)*step
		}
	}
	s.lo, s.hi = lo, hi
	return s
}

// niceStep rounds d up to 1, 2 or 5 times a power of ten.
func niceStep(d float64) float64 {
	if d <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(d)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= d {
			return m * p
		}
	}
	return 10 * p
}

// ticks returns the tick values (data units) and their labels.
func (s scale) ticks() ([]float64, []string) {
	var vs []float64
	var ls []string
	if s.log {
		step := 1.0
		if s.hi-s.lo > 8 {
			step = 2
		}
		for e := math.Ceil(s.lo); e <= s.hi+1e-9; e += step {
			v := math.Pow(10, e)
			vs = append(vs, v)
			if s.pct {
				ls = append(ls, pctLabel(v))
			} else {
				ls = append(ls, num(v))
			}
		}
		return vs, ls
	}
	step := niceStep((s.hi - s.lo) / 5)
	for v := s.lo; v <= s.hi+step*1e-6; v += step {
		vs = append(vs, v)
		ls = append(ls, num(v))
	}
	return vs, ls
}

// pctLabel labels x = 1/(1-q) as the percentile q.
func pctLabel(x float64) string {
	q := 100 * (1 - 1/x)
	switch {
	case q <= 0:
		return "0%"
	case q < 99:
		return strconv.FormatFloat(q, 'f', -1, 64) + "%"
	}
	d := int(math.Round(math.Log10(x))) - 2 // decimals of 99.9…
	return strconv.FormatFloat(q, 'f', max(d, 0), 64) + "%"
}

// num formats a tick or value compactly.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 1e9:
		return trim(v/1e9) + "G"
	case a >= 1e6:
		return trim(v/1e6) + "M"
	case a >= 1e4:
		return trim(v/1e3) + "k"
	case a >= 1:
		return trim(v)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func trim(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

func esc(s string) string { return html.EscapeString(s) }

// svg renders the chart.
func (c Chart) svg() string {
	var xs, ys []float64
	for _, s := range c.Series {
		for _, p := range s.Points {
			xs, ys = append(xs, p.X), append(ys, p.Y)
		}
	}
	for _, b := range c.Bands {
		xs = append(xs, b.From, b.To)
	}
	legendRows := (len(c.Series) + 2) / 3
	h := chartH + legendRows*legendRow
	plotB := float64(chartH - padB)
	xsc := newScale(c.X, xs, padL, chartW-padR, false)
	ysc := newScale(c.Y, ys, plotB, padT, true)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`, chartW, h, chartW, h, esc(c.Title))
	fmt.Fprintf(&b, `<text x="%d" y="16" font-weight="600">%s</text>`, padL, esc(c.Title))
	// Bands.
	for _, bd := range c.Bands {
		x0, ok0 := xsc.px(bd.From)
		x1, ok1 := xsc.px(bd.To)
		if !ok0 || !ok1 {
			continue
		}
		x0, x1 = math.Max(x0, padL), math.Min(x1, chartW-padR)
		if x1 < x0+1 {
			x1 = x0 + 1
		}
		fmt.Fprintf(&b, `<rect class="band" x="%.1f" y="%d" width="%.1f" height="%.1f" fill="#f5b041" fill-opacity="0.18"><title>%s</title></rect>`, x0, padT, x1-x0, plotB-padT, esc(bd.Label))
	}
	// Grid, ticks and labels.
	tv, tl := ysc.ticks()
	for i, v := range tv {
		y, ok := ysc.px(v)
		if !ok || y < padT-0.5 || y > plotB+0.5 {
			continue
		}
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e6e9ef"/>`, padL, chartW-padR, y, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, padL-5, y, esc(tl[i]))
	}
	tv, tl = xsc.ticks()
	for i, v := range tv {
		x, ok := xsc.px(v)
		if !ok || x < padL-0.5 || x > chartW-padR+0.5 {
			continue
		}
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%.1f" stroke="#e6e9ef"/>`, x, x, padT, plotB)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x, plotB+14, esc(tl[i]))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%.1f" fill="none" stroke="#b8c0cc"/>`, padL, padT, chartW-padR-padL, plotB-padT)
	fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="middle">%s</text>`, (padL+chartW-padR)/2, plotB+30, esc(c.X.Label))
	fmt.Fprintf(&b, `<text transform="translate(14 %.1f) rotate(-90)" text-anchor="middle">%s</text>`, (padT+plotB)/2, esc(c.Y.Label))
	// Series.
	for i, s := range c.Series {
		col := s.Color
		if col < 0 {
			col = i
		}
		var pts []string
		for _, p := range s.Points {
			x, okx := xsc.px(p.X)
			y, oky := ysc.px(p.Y)
			if okx && oky {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, math.Max(math.Min(y, plotB), padT)))
			}
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(&b, `<polyline class="series" data-points="%d" fill="none" stroke="%s" stroke-width="1.8"%s points="%s"><title>%s</title></polyline>`,
			len(pts), color(col), dash, strings.Join(pts, " "), esc(s.Name))
		if len(pts) == 1 { // a lone point shows as a dot
			fmt.Fprintf(&b, `<circle cx="%s" r="2.5" fill="%s"/>`, strings.Replace(pts[0], ",", `" cy="`, 1), color(col))
		}
		lx := padL + (i%3)*((chartW-padL-padR)/3)
		ly := chartH - 6 + (i/3)*legendRow
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2.5"%s/><text x="%d" y="%d" dominant-baseline="middle">%s</text>`,
			lx, lx+18, ly, ly, color(col), dash, lx+23, ly, esc(s.Name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// Bar chart geometry.
const (
	barLabelW = 190
	barRowH   = 24
)

// svg renders the stacked bars.
func (c Bars) svg() string {
	maxTotal := 0.0
	for _, r := range c.Rows {
		t := 0.0
		for _, v := range r.Values {
			t += math.Max(v, 0)
		}
		maxTotal = math.Max(maxTotal, t)
	}
	if maxTotal == 0 {
		maxTotal = 1
	}
	step := niceStep(maxTotal / 5)
	top := math.Ceil(maxTotal/step) * step
	plotT := 28
	plotB := plotT + len(c.Rows)*barRowH
	legendRows := (len(c.Segments) + 3) / 4
	h := plotB + 34 + legendRows*legendRow
	x0, x1 := float64(barLabelW), float64(chartW-padR)
	px := func(v float64) float64 { return x0 + v/top*(x1-x0) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`, chartW, h, chartW, h, esc(c.Title))
	fmt.Fprintf(&b, `<text x="8" y="16" font-weight="600">%s</text>`, esc(c.Title))
	for v := 0.0; v <= top+step*1e-6; v += step {
		x := px(v)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#e6e9ef"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`, x, x, plotT, plotB, x, plotB+14, num(v))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, (x0+x1)/2, plotB+28, esc(c.Unit))
	for i, r := range c.Rows {
		y := plotT + i*barRowH + 3
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" dominant-baseline="middle">%s</text>`, barLabelW-6, y+(barRowH-6)/2, esc(r.Label))
		at := 0.0
		for j, v := range r.Values {
			if v <= 0 {
				continue
			}
			name := ""
			if j < len(c.Segments) {
				name = c.Segments[j]
			}
			fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%d" width="%.2f" height="%d" fill="%s"><title>%s %s: %s</title></rect>`,
				px(at), y, px(at+v)-px(at), barRowH-6, color(j), esc(r.Label), esc(name), num(v))
			at += v
		}
	}
	for j, s := range c.Segments {
		lx := 8 + (j%4)*((chartW-16)/4)
		ly := plotB + 44 + (j/4)*legendRow
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="10" fill="%s"/><text x="%d" y="%d" dominant-baseline="middle">%s</text>`, lx, ly-5, color(j), lx+16, ly, esc(s))
	}
	b.WriteString(`</svg>`)
	return b.String()
}
