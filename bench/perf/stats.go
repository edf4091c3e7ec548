package perf

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds, in microseconds.
const (
	histMinUs = 1
	histMaxUs = 60_000_000
	histSig   = 3
)

// Stats aggregates counters and latency histograms of one run. Each worker
// (producer or consumer) records into its own Shard so recording does not
// contend; Tick and Summary merge the shards.
type Stats struct {
	start  time.Time
	shards []*Shard

	mu       sync.Mutex // serialises Tick
	lastTick time.Time
	lastMsgs int64
	lastB    int64
	lastErrs int64

	windows  []Window        // closed windows, set when the workers returned
	timeline []TimelinePoint // progress intervals (Common.Timeline), likewise
}

// Shard is one worker's part of Stats. Record is safe for concurrent use.
type Shard struct {
	msgs  atomic.Int64
	bytes atomic.Int64
	errs  atomic.Int64

	mu       sync.Mutex
	interval *hdrhistogram.Histogram
	total    *hdrhistogram.Histogram
	win      *hdrhistogram.Histogram // nil unless windows are on (window.go)
}

// NewStats returns Stats with n shards, started at start.
func NewStats(n int, start time.Time) *Stats {
	s := &Stats{start: start, lastTick: start}
	for range n {
		s.shards = append(s.shards, &Shard{
			interval: hdrhistogram.New(histMinUs, histMaxUs, histSig),
			total:    hdrhistogram.New(histMinUs, histMaxUs, histSig),
		})
	}
	return s
}

// Shard returns shard i.
func (s *Stats) Shard(i int) *Shard { return s.shards[i] }

// Record counts one message of size bytes with latency lat (lat < 0: no
// latency sample).
func (sh *Shard) Record(size int, lat time.Duration) { sh.RecordN(1, size, lat) }

// RecordN counts n messages of bytes bytes in total that share one latency
// lat (lat < 0: no latency sample): a batch acknowledged by one receipt, or
// an entry of n messages received at once. The latency is recorded with
// weight n, as n samples.
func (sh *Shard) RecordN(n, bytes int, lat time.Duration) {
	if n <= 0 {
		return
	}
	sh.msgs.Add(int64(n))
	sh.bytes.Add(int64(bytes))
	if lat < 0 {
		return
	}
	us := lat.Microseconds()
	if us < histMinUs {
		us = histMinUs
	} else if us > histMaxUs {
		us = histMaxUs
	}
	sh.mu.Lock()
	sh.interval.RecordValues(us, int64(n))
	sh.total.RecordValues(us, int64(n))
	if sh.win != nil {
		sh.win.RecordValues(us, int64(n))
	}
	sh.mu.Unlock()
}

// Errors counts n failed operations.
func (sh *Shard) Errors(n int) { sh.errs.Add(int64(n)) }

// Error counts one failed operation.
func (sh *Shard) Error() { sh.errs.Add(1) }

// Count returns the messages recorded so far over all shards.
func (s *Stats) Count() int64 {
	var n int64
	for _, sh := range s.shards {
		n += sh.msgs.Load()
	}
	return n
}

// Interval is what happened between two ticks.
type Interval struct {
	Elapsed  time.Duration // since the previous tick
	Msgs     int64
	Bytes    int64
	Errors   int64
	Total    int64 // messages since the start
	P50, P99 time.Duration
	Max      time.Duration
	Samples  int64 // latency samples in the interval
}

// MsgRate returns messages per second over the interval.
func (iv Interval) MsgRate() float64 { return perSec(float64(iv.Msgs), iv.Elapsed) }

// MBRate returns megabytes (1e6) per second over the interval.
func (iv Interval) MBRate() float64 { return perSec(float64(iv.Bytes)/1e6, iv.Elapsed) }

// Tick closes the current interval at now and returns it.
func (s *Stats) Tick(now time.Time) Interval {
	s.mu.Lock()
	defer s.mu.Unlock()
	merged := hdrhistogram.New(histMinUs, histMaxUs, histSig)
	var msgs, bytes, errs int64
	for _, sh := range s.shards {
		msgs += sh.msgs.Load()
		bytes += sh.bytes.Load()
		errs += sh.errs.Load()
		sh.mu.Lock()
		merged.Merge(sh.interval)
		sh.interval.Reset()
		sh.mu.Unlock()
	}
	iv := Interval{
		Elapsed: now.Sub(s.lastTick),
		Msgs:    msgs - s.lastMsgs,
		Bytes:   bytes - s.lastB,
		Errors:  errs - s.lastErrs,
		Total:   msgs,
		Samples: merged.TotalCount(),
	}
	if iv.Samples > 0 {
		iv.P50 = usDur(merged.ValueAtQuantile(50))
		iv.P99 = usDur(merged.ValueAtQuantile(99))
		iv.Max = usDur(merged.Max())
	}
	s.lastTick, s.lastMsgs, s.lastB, s.lastErrs = now, msgs, bytes, errs
	return iv
}

// Latency is a latency distribution in microseconds.
type Latency struct {
	Samples int64   `json:"samples"`
	Mean    float64 `json:"mean_us"`
	P50     int64   `json:"p50_us"`
	P95     int64   `json:"p95_us"`
	P99     int64   `json:"p99_us"`
	P999    int64   `json:"p999_us"`
	Max     int64   `json:"max_us"`
}

// Summary is the result of a whole run; it is also the --json output.
type Summary struct {
	Kind      string  `json:"kind"` // "produce" or "consume"
	Messages  int64   `json:"messages"`
	Bytes     int64   `json:"bytes"`
	Errors    int64   `json:"errors"`
	Seconds   float64 `json:"seconds"`
	MsgRate   float64 `json:"msgs_per_sec"`
	MBRate    float64 `json:"mb_per_sec"`
	Latency   Latency `json:"latency"`
	LatencyOf string  `json:"latency_of"` // "publish" or "end_to_end"
	// FirstError is the first failure seen (sends that failed), if any.
	FirstError string `json:"first_error,omitempty"`
	// Windows are the per-window latencies (Common.Window), if any.
	Windows []Window `json:"windows,omitempty"`
	// Timeline holds every progress interval (Common.Timeline), if kept.
	Timeline []TimelinePoint `json:"timeline,omitempty"`

	latency *hdrhistogram.Histogram // the whole run's, in microseconds
}

// LatencyHistogram returns the whole run's latencies in microseconds
// (nil for a Summary not made by Stats.Summary).
func (s Summary) LatencyHistogram() *hdrhistogram.Histogram { return s.latency }

// TimelinePoint is one progress interval of a run (Common.Timeline).
type TimelinePoint struct {
	End     float64 `json:"end_s"` // seconds from the run's start
	Seconds float64 `json:"seconds"`
	Msgs    int64   `json:"msgs"`
	Bytes   int64   `json:"bytes"`
	Errors  int64   `json:"errors"`
	Samples int64   `json:"samples"` // latency samples
	P50     int64   `json:"p50_us"`
	P99     int64   `json:"p99_us"`
	Max     int64   `json:"max_us"`
}

// point turns an interval ending at end into a TimelinePoint.
func (s *Stats) point(iv Interval, end time.Time) TimelinePoint {
	return TimelinePoint{
		End: end.Sub(s.start).Seconds(), Seconds: iv.Elapsed.Seconds(), Msgs: iv.Msgs, Bytes: iv.Bytes, Errors: iv.Errors,
		Samples: iv.Samples, P50: iv.P50.Microseconds(), P99: iv.P99.Microseconds(), Max: iv.Max.Microseconds(),
	}
}

// Summary returns the totals from the start to end.
func (s *Stats) Summary(kind string, end time.Time) Summary {
	merged := hdrhistogram.New(histMinUs, histMaxUs, histSig)
	sum := Summary{Kind: kind, Seconds: end.Sub(s.start).Seconds()}
	for _, sh := range s.shards {
		sum.Messages += sh.msgs.Load()
		sum.Bytes += sh.bytes.Load()
		sum.Errors += sh.errs.Load()
		sh.mu.Lock()
		merged.Merge(sh.total)
		sh.mu.Unlock()
	}
	sum.Windows = s.windows
	sum.Timeline = s.timeline
	sum.latency = merged
	el := end.Sub(s.start)
	sum.MsgRate = perSec(float64(sum.Messages), el)
	sum.MBRate = perSec(float64(sum.Bytes)/1e6, el)
	if n := merged.TotalCount(); n > 0 {
		sum.Latency = Latency{
			Samples: n,
			Mean:    merged.Mean(),
			P50:     merged.ValueAtQuantile(50),
			P95:     merged.ValueAtQuantile(95),
			P99:     merged.ValueAtQuantile(99),
			P999:    merged.ValueAtQuantile(99.9),
			Max:     merged.Max(),
		}
	}
	return sum
}

// FormatInterval renders the live progress line.
func FormatInterval(kind string, iv Interval) string {
	line := fmt.Sprintf("%s: %10.0f msg/s %8.2f MB/s total %d", kind, iv.MsgRate(), iv.MBRate(), iv.Total)
	if iv.Errors > 0 {
		line += fmt.Sprintf(" errors %d", iv.Errors)
	}
	if iv.Samples > 0 {
		line += fmt.Sprintf(" | lat p50 %s p99 %s max %s", fmtDur(iv.P50), fmtDur(iv.P99), fmtDur(iv.Max))
	}
	return line
}

// String renders the final human-readable summary.
func (s Summary) String() string {
	out := fmt.Sprintf("%s summary: %d msgs, %.2f MB in %.2fs = %.0f msg/s, %.2f MB/s",
		s.Kind, s.Messages, float64(s.Bytes)/1e6, s.Seconds, s.MsgRate, s.MBRate)
	if s.Errors > 0 {
		out += fmt.Sprintf(", %d errors (first: %s)", s.Errors, s.FirstError)
	}
	if l := s.Latency; l.Samples > 0 {
		out += fmt.Sprintf("\n%s latency: mean %s p50 %s p95 %s p99 %s p99.9 %s max %s",
			s.LatencyOf, fmtDur(time.Duration(l.Mean*1e3)), fmtDur(usDur(l.P50)), fmtDur(usDur(l.P95)),
			fmtDur(usDur(l.P99)), fmtDur(usDur(l.P999)), fmtDur(usDur(l.Max)))
	}
	return out
}

func perSec(v float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return v / d.Seconds()
}

func usDur(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond))
}
