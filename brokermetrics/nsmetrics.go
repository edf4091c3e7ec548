package brokermetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-mq/magnetar/broker"
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

// topicSums sums the topic metrics of one namespace, or holds one
// topic's (the topic-level series).
type topicSums struct {
	rateIn, rateOut, thrIn, thrOut     float64
	storage, backlog, backlogSize      int64
	producers, consumers, subs         int
	inMsgs, inBytes, outMsgs, outBytes int64
}

func (m *topicSums) add(st *broker.TopicStats) {
	m.rateIn += st.MsgRateIn
	m.rateOut += st.MsgRateOut
	m.thrIn += st.MsgThroughputIn
	m.thrOut += st.MsgThroughputOut
	m.storage += st.StorageSize
	m.backlog += st.MsgBacklog
	m.backlogSize += st.BacklogSize
	m.producers += len(st.Publishers)
	m.subs += len(st.Subscriptions)
	for _, ss := range st.Subscriptions {
		m.consumers += len(ss.Consumers)
	}
	m.inMsgs += st.MsgInCounter
	m.inBytes += st.BytesInCounter
	m.outMsgs += st.MsgOutCounter
	m.outBytes += st.BytesOutCounter
}

// emit sends the sums as the series of descs (topicDescs or nsDescs)
// with the label values lv.
func (m *topicSums) emit(ch chan<- prometheus.Metric, descs map[string]*prometheus.Desc, lv ...string) {
	g := func(name string, v float64) {
		ch <- prometheus.MustNewConstMetric(descs[name], prometheus.GaugeValue, v, lv...)
	}
	c := func(name string, v float64) {
		ch <- prometheus.MustNewConstMetric(descs[name], prometheus.CounterValue, v, lv...)
	}
	g("pulsar_rate_in", m.rateIn)
	g("pulsar_rate_out", m.rateOut)
	g("pulsar_throughput_in", m.thrIn)
	g("pulsar_throughput_out", m.thrOut)
	g("pulsar_storage_size", float64(m.storage))
	g("pulsar_msg_backlog", float64(m.backlog))
	g("pulsar_storage_backlog_size", float64(m.backlogSize))
	g("pulsar_producers_count", float64(m.producers))
	g("pulsar_consumers_count", float64(m.consumers))
	g("pulsar_subscriptions_count", float64(m.subs))
	avg := 0.0
	if m.inMsgs > 0 {
		avg = float64(m.inBytes) / float64(m.inMsgs)
	}
	g("pulsar_average_msg_size", avg)
	c("pulsar_in_messages_total", float64(m.inMsgs))
	c("pulsar_in_bytes_total", float64(m.inBytes))
	c("pulsar_out_messages_total", float64(m.outMsgs))
	c("pulsar_out_bytes_total", float64(m.outBytes))
}
