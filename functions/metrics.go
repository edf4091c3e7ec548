package functions

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names follow Pulsar's function metrics (prefix pulsar_function_,
// pulsar_source_ or pulsar_sink_ by kind), labelled tenant, namespace,
// name, instance_id, cluster and fqfn.
var metricLabels = []string{"tenant", "namespace", "name", "instance_id", "cluster", "fqfn"}

type metricDesc struct {
	received, processed, userExc, sysExc, latency, last, restarts *prometheus.Desc
}

func newDescs(prefix string) metricDesc {
	d := func(n, help string) *prometheus.Desc {
		return prometheus.NewDesc(prefix+n, help, metricLabels, nil)
	}
	return metricDesc{
		received:  d("received_total", "Messages received by the instance."),
		processed: d("processed_successfully_total", "Messages processed successfully."),
		userExc:   d("user_exceptions_total", "Errors returned by the user code."),
		sysExc:    d("system_exceptions_total", "Errors of the runtime (publish, ack, state)."),
		latency:   d("process_latency_ms", "Mean processing latency in milliseconds (sum and count)."),
		last:      d("last_invocation", "Unix time in ms of the last invocation."),
		restarts:  d("instance_restarts_total", "Times the instance process was restarted."),
	}
}

var descs = map[Kind]metricDesc{
	KindFunction: newDescs("pulsar_function_"),
	KindSource:   newDescs("pulsar_source_"),
	KindSink:     newDescs("pulsar_sink_"),
}

var userMetricDesc = prometheus.NewDesc("pulsar_function_user_metric_", "A metric recorded by the user code (label metric).",
	append(append([]string{}, metricLabels...), "metric"), nil)

// Collector returns the worker's Prometheus collector: one series per
// local instance (instances of other workers are on their /metrics).
func (w *Worker) Collector() prometheus.Collector { return (*collector)(w) }

type collector Worker

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs {
		for _, x := range []*prometheus.Desc{d.received, d.processed, d.userExc, d.sysExc, d.latency, d.last, d.restarts} {
			ch <- x
		}
	}
	ch <- userMetricDesc
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	w := (*Worker)(c)
	w.mu.Lock()
	insts := make([]*instance, 0, len(w.instances))
	for _, in := range w.instances {
		insts = append(insts, in)
	}
	w.mu.Unlock()
	for _, in := range insts {
		s, _, _, restarts := in.stats()
		parts := strings.SplitN(in.key.fqfn, "/", 3)
		if len(parts) != 3 {
			continue
		}
		lv := []string{parts[0], parts[1], parts[2], strconv.Itoa(in.key.id), w.opts.Cluster, in.key.fqfn}
		d := descs[in.key.kind]
		ch <- prometheus.MustNewConstMetric(d.received, prometheus.CounterValue, float64(s.Received), lv...)
		ch <- prometheus.MustNewConstMetric(d.processed, prometheus.CounterValue, float64(s.Processed), lv...)
		ch <- prometheus.MustNewConstMetric(d.userExc, prometheus.CounterValue, float64(s.UserExceptions), lv...)
		ch <- prometheus.MustNewConstMetric(d.sysExc, prometheus.CounterValue, float64(s.SystemExceptions), lv...)
		ch <- prometheus.MustNewConstSummary(d.latency, uint64(s.LatencyCount), s.LatencySumMs, nil, lv...)
		ch <- prometheus.MustNewConstMetric(d.last, prometheus.GaugeValue, float64(s.LastInvocation), lv...)
		ch <- prometheus.MustNewConstMetric(d.restarts, prometheus.CounterValue, float64(restarts), lv...)
		if in.key.kind == KindFunction {
			for name, v := range s.UserMetrics {
				ch <- prometheus.MustNewConstMetric(userMetricDesc, prometheus.GaugeValue, v, append(lv, name)...)
			}
		}
	}
}
