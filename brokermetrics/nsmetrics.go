package brokermetrics

import (
	"github.com/magnetar-mq/magnetar/topicstats"
	"github.com/prometheus/client_golang/prometheus"
)

// Namespace aggregation of the topic metrics, for
// exposeTopicLevelMetricsInPrometheus=false: one series per namespace
// whatever the number of topics, so a scrape stays small with a million
// topics loaded.

var nsDescs = map[string]*prometheus.Desc{}

func init() {
	for _, n := range topicDescNames {
		nsDescs[n] = prometheus.NewDesc(n, "Pulsar topic metric "+n+" (sum over the namespace's loaded topics).", []string{"cluster", "namespace"}, nil)
	}
}

// emitSums sends the sums of one namespace's topics (or of one topic)
// as the series of descs (topicDescs or nsDescs) with the label values
// lv.
func emitSums(ch chan<- prometheus.Metric, m *topicstats.Sums, descs map[string]*prometheus.Desc, lv ...string) {
	g := func(name string, v float64) {
		ch <- prometheus.MustNewConstMetric(descs[name], prometheus.GaugeValue, v, lv...)
	}
	c := func(name string, v float64) {
		ch <- prometheus.MustNewConstMetric(descs[name], prometheus.CounterValue, v, lv...)
	}
	g("pulsar_rate_in", m.RateIn)
	g("pulsar_rate_out", m.RateOut)
	g("pulsar_throughput_in", m.ThroughputIn)
	g("pulsar_throughput_out", m.ThroughputOut)
	g("pulsar_storage_size", float64(m.Storage))
	g("pulsar_msg_backlog", float64(m.Backlog))
	g("pulsar_storage_backlog_size", float64(m.BacklogSize))
	g("pulsar_producers_count", float64(m.Producers))
	g("pulsar_consumers_count", float64(m.Consumers))
	g("pulsar_subscriptions_count", float64(m.Subscriptions))
	g("pulsar_average_msg_size", m.AverageMsgSize())
	c("pulsar_in_messages_total", float64(m.MsgIn))
	c("pulsar_in_bytes_total", float64(m.BytesIn))
	c("pulsar_out_messages_total", float64(m.MsgOut))
	c("pulsar_out_bytes_total", float64(m.BytesOut))
}
