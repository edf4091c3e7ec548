package bookie

import (
	"runtime/metrics"
	"time"
)

// schedMetric is the runtime's histogram of the time goroutines spent
// runnable before they ran: on a machine whose cores the bookie's
// goroutines (and the driver's) saturate, the committer and the
// completion goroutine wait there, and that wait is in the adds' p99.
const schedMetric = "/sched/latencies:seconds"

// schedLatencies reads the scheduling-latency histogram so far.
func schedLatencies() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: schedMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return s[0].Value.Float64Histogram()
}

// schedQuantile is the q-quantile (0..1) of the scheduling latencies
// between before and after (bucket upper bounds; 0 when none), both from
// schedLatencies in one process.
func schedQuantile(before, after *metrics.Float64Histogram, q float64) time.Duration {
	if before == nil || after == nil || len(before.Counts) != len(after.Counts) {
		return 0
	}
	var total uint64
	for i := range after.Counts {
		total += after.Counts[i] - before.Counts[i]
	}
	if total == 0 {
		return 0
	}
	want := uint64(q * float64(total))
	var seen uint64
	for i := range after.Counts {
		seen += after.Counts[i] - before.Counts[i]
		if seen > want {
			return time.Duration(after.Buckets[i+1] * float64(time.Second))
		}
	}
	return time.Duration(after.Buckets[len(after.Buckets)-1] * float64(time.Second))
}
