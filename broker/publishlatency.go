package broker

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// publishLatencyBuckets bound magnetar_broker_publish_latency_seconds:
// fine below 5 ms, where the latency targets are (BENCHMARKS.md,
// "End to end: latency"; bench/latency/NOTES.md), coarse above.
var publishLatencyBuckets = []float64{
	50e-6, 100e-6, 200e-6, 300e-6, 400e-6, 500e-6, 600e-6, 800e-6,
	1e-3, 1.25e-3, 1.5e-3, 2e-3, 2.5e-3, 3e-3, 4e-3, 5e-3, 7.5e-3,
	10e-3, 20e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1, 2.5, 10,
}

// newPublishLatency is the broker-wide histogram of the time from a
// persistent SEND's publish (after its checksum was verified) to the
// storage callback that makes it acknowledgeable: managed ledger, ledger
// client, bookie, journal group commit. Together with the bookie's
// bookie_add_entry_latency_seconds and bookie_journal_sync_latency_seconds
// it splits a client's publish latency into stages (bench/latency). One
// clock read and one observation per entry, not per message.
func newPublishLatency() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "magnetar_broker_publish_latency_seconds",
		Help:    "Persistent publish latency inside the broker: SEND handed to the topic to entry stored (acknowledgeable), per entry.",
		Buckets: publishLatencyBuckets,
	})
}

// observePublish records the latency of an entry published at start.
func (b *Broker) observePublish(start time.Time) {
	b.publishLatency.Observe(time.Since(start).Seconds())
}
