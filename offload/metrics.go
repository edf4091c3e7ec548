package offload

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the offloaders' Prometheus metrics (Pulsar-style names under
// brk_ledgeroffloader_). One Metrics serves every offloader of a broker;
// register it with Collectors.
type Metrics struct {
	Bytes        prometheus.Counter
	Ledgers      prometheus.Counter
	Errors       prometheus.Counter
	Deleted      prometheus.Counter
	ReadErrors   prometheus.Counter
	ReadBytes    prometheus.Counter
	ReadSeconds  prometheus.Histogram
	WriteSeconds prometheus.Histogram
}

// NewMetrics creates unregistered metrics.
func NewMetrics() *Metrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: "brk_ledgeroffloader_" + name, Help: help})
	}
	return &Metrics{
		Bytes:      c("offload_bytes_total", "Bytes of data objects written by completed offloads."),
		Ledgers:    c("offloaded_ledgers_total", "Ledgers offloaded (data and index written and verified)."),
		Errors:     c("offload_error_total", "Offload attempts that failed."),
		Deleted:    c("deleted_offloads_total", "Offloads whose objects were deleted."),
		ReadErrors: c("read_offload_error_total", "Failed reads from the object store."),
		ReadBytes:  c("read_offload_bytes_total", "Bytes read from the object store."),
		ReadSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "brk_ledgeroffloader_read_offload_latency_seconds",
			Help:    "Latency of one object store read (index GET or ranged data GET).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		WriteSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "brk_ledgeroffloader_offload_duration_seconds",
			Help:    "Duration of one ledger's offload (write and verify).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 16),
		}),
	}
}

// Collectors returns the metrics for registration.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Bytes, m.Ledgers, m.Errors, m.Deleted, m.ReadErrors, m.ReadBytes, m.ReadSeconds, m.WriteSeconds}
}
