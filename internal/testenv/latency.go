package testenv

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// LatencyProbe times a call made at an interval until Check or Report (or the
// end of the test, if it fails before).
type LatencyProbe struct {
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
	mu       sync.Mutex
	took     []time.Duration
}

// StartLatencyProbe calls call every interval until the probe stops.
func StartLatencyProbe(t *testing.T, every time.Duration, call func()) *LatencyProbe {
	p := &LatencyProbe{stop: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
			t0 := time.Now()
			call()
			d := time.Since(t0)
			p.mu.Lock()
			p.took = append(p.took, d)
			p.mu.Unlock()
		}
	}()
	t.Cleanup(p.halt)
	return p
}

// halt stops the probe and waits for its goroutine.
func (p *LatencyProbe) halt() {
	p.stopOnce.Do(func() { close(p.stop) })
	p.wg.Wait()
}

// Check stops the probe and requires 99 % of the calls within 200 ms and
// every one within 1 s: the loop never stops answering. (The slowest
// calls on a loaded 2-core machine are turns of the loop stretched by
// the scheduler and the garbage collector, a few milliseconds of work
// each.)
func (p *LatencyProbe) Check(t *testing.T, what string) {
	t.Helper()
	p99, worst := p.Report(t, what)
	if p99 > 200*time.Millisecond || worst > time.Second {
		t.Errorf("stats calls: p99 %v, slowest %v; want <= 200ms and <= 1s", p99, worst)
	}
}

// Report stops the probe, logs its figures and returns the p99 and the
// slowest call.
func (p *LatencyProbe) Report(t *testing.T, what string) (p99, worst time.Duration) {
	t.Helper()
	p.halt()
	slices.Sort(p.took)
	if len(p.took) == 0 {
		t.Fatalf("%s: no stats call finished", what)
	}
	p99, worst = p.took[len(p.took)*99/100], p.took[len(p.took)-1]
	t.Logf("%s; %d stats calls: median %v, p99 %v, slowest %v", what, len(p.took), p.took[len(p.took)/2], p99, worst)
	return p99, worst
}
