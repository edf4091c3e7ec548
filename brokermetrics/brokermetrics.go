package brokermetrics

import (
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/bookieinfo"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/httpapi"
)

// Options are what a broker's /metrics serves besides the broker's own
// series.
type Options struct {
	// Collectors are registered as they are (an in-process bookie's
	// (*bookie.Bookie).Collector(), the offloaders'
	// (*offload.Metrics).Collectors(), the function worker's).
	Collectors []prometheus.Collector
	// Bookies reports the storage nodes: their status and numeric stats
	// (bookie_SERVER_STATUS, bookie_<stat>); nil: none.
	Bookies bookieinfo.Source
}

// Metrics is a broker's /metrics: its registry and the publish latency
// histogram it feeds (a broker.Feature).
type Metrics struct {
	b              *broker.Broker
	publishLatency prometheus.Histogram
	handler        http.Handler
}

var (
	_ broker.Feature                = (*Metrics)(nil)
	_ broker.PublishLatencyObserver = (*Metrics)(nil)
)

// Enable registers the metrics feature on b and declares GET /metrics on
// its route table. It must be called before b starts.
func Enable(b *broker.Broker, o Options) (*Metrics, error) {
	m := &Metrics{b: b, publishLatency: newPublishLatency()}
	reg := prometheus.NewRegistry()
	reg.MustRegister(unchecked{metricsCollector{b, o.Bookies}})
	if err := registerAll(reg, o.Collectors); err != nil {
		return nil, err
	}
	// The Go runtime and process collectors, as every Prometheus
	// exporter has (skipped if Options.Collectors brought them already).
	for _, c := range []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				b.Logger().Warn("register metrics collector", "err", err)
			}
		}
	}
	if err := reg.Register(m.publishLatency); err != nil {
		return nil, err
	}
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	if err := b.Use(m); err != nil {
		return nil, err
	}
	b.Router().Add(httpapi.Route{Method: "GET", Pattern: "/metrics", Access: auth.AccessMetrics,
		Handler: func(w http.ResponseWriter, r *http.Request, _ httpapi.Params) { m.handler.ServeHTTP(w, r) }})
	return m, nil
}

func registerAll(reg *prometheus.Registry, cs []prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Name names the feature.
func (m *Metrics) Name() string { return "metrics" }

// Handler is the /metrics handler (tests and embedders that serve it
// elsewhere).
func (m *Metrics) Handler() http.Handler { return m.handler }

// ObservePublishLatency records one stored entry's publish latency
// (broker.PublishLatencyObserver).
func (m *Metrics) ObservePublishLatency(d time.Duration) {
	m.publishLatency.Observe(d.Seconds())
}

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
