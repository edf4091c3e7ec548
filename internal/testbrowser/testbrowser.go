// Package testbrowser starts headless chromium for tests that check a
// page in a real browser (the console, benchmark reports), through
// chromedp. Only tests import it. Debian's chromium is what scripts/test
// installs for the all and e2e tiers; outside -short a missing browser
// fails the test, under -short the test is skipped.
package testbrowser

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Path finds chromium.
func Path(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: browser tests need chromium")
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	t.Fatal("chromium not found: install Debian's chromium package (scripts/test does)")
	return ""
}

// New starts headless chromium with a window of width x height and
// returns a context for chromedp actions, valid for three minutes at most;
// the browser stops when the test ends.
func New(t testing.TB, width, height int) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(Path(t)),
		chromedp.NoSandbox, // the tests run as root in CI
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelC(); cancelA() })
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancelT)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// Figure is what the browser drew of one chart of a benchmark report
// (bench/report): its title, its rendered size, its series and how many
// of them are drawn lines (two points or more, a non-empty bounding box),
// and its drawn bars.
type Figure struct {
	Title  string  `json:"title"`
	W      float64 `json:"w"`
	H      float64 `json:"h"`
	Series int     `json:"series"`
	Drawn  int     `json:"drawn"`
	Bars   int     `json:"bars"`
}

// figuresJS collects the Figures of the page.
const figuresJS = `Array.from(document.querySelectorAll('figure.chart')).map(f => {
  const svg = f.querySelector('svg.plot');
  const r = svg.getBoundingClientRect();
  const lines = Array.from(svg.querySelectorAll('polyline.series'));
  const drawn = lines.filter(l => l.points.numberOfItems >= 2 && l.getBBox().width > 0 && l.getBBox().width + l.getBBox().height > 2).length;
  const bars = Array.from(svg.querySelectorAll('rect.bar')).filter(b => b.getBBox().width > 0).length;
  return {title: svg.getAttribute('aria-label'), w: r.width, h: r.height, series: lines.length, drawn: drawn, bars: bars};
})`

// Report opens the report page file in the browser and returns its
// figures and the URLs of every resource the page fetched besides itself
// (none, for a self-contained page).
func Report(t testing.TB, ctx context.Context, file string) ([]Figure, []string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+file), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
		t.Fatalf("open %s: %v", file, err)
	}
	figs, err := chromedp.Run(ctx, chromedp.Evaluate[[]Figure](figuresJS))
	if err != nil {
		t.Fatalf("figures of %s: %v", file, err)
	}
	res, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`performance.getEntriesByType('resource').map(e => e.name)`))
	if err != nil {
		t.Fatalf("resources of %s: %v", file, err)
	}
	return figs, res
}

// RequireDrawn fails the test unless every figure was rendered with a
// size (at least 100 px each way) and every series of it drawn as a line.
func RequireDrawn(t testing.TB, figs []Figure) {
	t.Helper()
	for _, f := range figs {
		if f.W < 100 || f.H < 100 {
			t.Errorf("%q rendered %vx%v", f.Title, f.W, f.H)
		}
		if f.Drawn != f.Series {
			t.Errorf("%q: %d of %d series drawn", f.Title, f.Drawn, f.Series)
		}
	}
}
