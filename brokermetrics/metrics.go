package brokermetrics

import (
	"context"
	"regexp"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-mq/magnetar/bookieinfo"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/topicstats"
)

// metricsCollector exports Pulsar's topic and subscription metric names
// (one sample per loaded topic, labels cluster/namespace/topic) and the
// bookies' stats (Options.Bookies), computed at scrape time. With
// Config.HideTopicLevelMetrics (exposeTopicLevelMetricsInPrometheus=false)
// the topic metrics are summed per namespace instead, as Pulsar does:
// the same names, labels cluster/namespace only, and no subscription or
// replication series (nsmetrics.go: emitSums).
type metricsCollector struct {
	b       *broker.Broker
	bookies bookieinfo.Source // nil: none
}

var (
	topicLabels = []string{"cluster", "namespace", "topic"}
	subLabels   = []string{"cluster", "namespace", "topic", "subscription"}

	descTopicsCount = prometheus.NewDesc("pulsar_topics_count", "Number of loaded topics.", []string{"cluster", "namespace"}, nil)
	topicDescs      = map[string]*prometheus.Desc{}
	topicDescNames  = []string{
		"pulsar_rate_in", "pulsar_rate_out", "pulsar_throughput_in", "pulsar_throughput_out",
		"pulsar_storage_size", "pulsar_msg_backlog", "pulsar_storage_backlog_size", "pulsar_producers_count",
		"pulsar_consumers_count", "pulsar_subscriptions_count", "pulsar_in_messages_total", "pulsar_in_bytes_total",
		"pulsar_out_messages_total", "pulsar_out_bytes_total", "pulsar_average_msg_size",
	}
	subDescs     = map[string]*prometheus.Desc{}
	subDescNames = []string{
		"pulsar_subscription_back_log", "pulsar_subscription_msg_rate_out", "pulsar_subscription_msg_throughput_out",
		"pulsar_subscription_unacked_messages", "pulsar_subscription_consumers_count", "pulsar_subscription_delayed",
	}
	brokerDescs     = map[string]*prometheus.Desc{}
	brokerDescNames = []string{
		"pulsar_broker_topics_count", "pulsar_broker_subscriptions_count", "pulsar_broker_producers_count",
		"pulsar_broker_consumers_count", "pulsar_broker_rate_in", "pulsar_broker_rate_out",
		"pulsar_broker_throughput_in", "pulsar_broker_throughput_out", "pulsar_broker_storage_size",
		"pulsar_broker_msg_backlog", "pulsar_broker_in_messages_total", "pulsar_broker_out_messages_total",
		"pulsar_broker_publish_rate_limit_times",
	}
	// Pulsar's per-topic replication metrics, labelled with the remote
	// cluster.
	replLabels    = []string{"cluster", "namespace", "topic", "remote_cluster"}
	replDescs     = map[string]*prometheus.Desc{}
	replDescNames = []string{
		"pulsar_replication_rate_in", "pulsar_replication_rate_out", "pulsar_replication_throughput_in",
		"pulsar_replication_throughput_out", "pulsar_replication_backlog", "pulsar_replication_connected_count",
		"pulsar_replication_delay_in_seconds",
	}
	descBookieStatus = prometheus.NewDesc("bookie_SERVER_STATUS", "1 when the bookie is writable, 0 when read-only.", []string{"bookie"}, nil)
	descBookieRO     = prometheus.NewDesc("bookie_read_only", "1 when the bookie is read-only.", []string{"bookie"}, nil)
	descConnBytesIn  = prometheus.NewDesc("magnetar_connection_in_bytes_total", "Bytes read from client connections (binary protocol).", nil, nil)
	metricNameRe     = regexp.MustCompile(`[^a-zA-Z0-9_]`)
)

func init() {
	for _, n := range topicDescNames {
		topicDescs[n] = prometheus.NewDesc(n, "Pulsar topic metric "+n+".", topicLabels, nil)
	}
	for _, n := range replDescNames {
		replDescs[n] = prometheus.NewDesc(n, "Pulsar replication metric "+n+".", replLabels, nil)
	}
	for _, n := range subDescNames {
		subDescs[n] = prometheus.NewDesc(n, "Pulsar subscription metric "+n+".", subLabels, nil)
	}
	for _, n := range brokerDescNames {
		brokerDescs[n] = prometheus.NewDesc(n, "Pulsar broker metric "+n+" (all loaded topics).", []string{"cluster"}, nil)
	}
}

func (mc metricsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descTopicsCount
	for _, d := range topicDescs {
		ch <- d
	}
	for _, d := range replDescs {
		ch <- d
	}
	for _, d := range subDescs {
		ch <- d
	}
	for _, d := range brokerDescs {
		ch <- d
	}
	ch <- descBookieStatus
	ch <- descBookieRO
	ch <- descConnBytesIn
}

func (mc metricsCollector) Collect(ch chan<- prometheus.Metric) {
	b := mc.b
	cfg := b.Config()
	cluster := cfg.ClusterName
	ch <- prometheus.MustNewConstMetric(descConnBytesIn, prometheus.CounterValue, float64(b.ConnBytesIn()))
	perNS := namespacesForMetrics(b)
	tot := map[string]float64{}
	defer func() {
		for _, n := range brokerDescNames {
			ch <- prometheus.MustNewConstMetric(brokerDescs[n], prometheus.GaugeValue, tot[n], cluster)
		}
	}()
	hide := cfg.HideTopicLevelMetrics
	nsSums := map[string]*topicstats.Sums{}
	defer func() {
		for ns, m := range nsSums {
			emitSums(ch, m, nsDescs, cluster, ns)
		}
	}()
	stats := topicstats.For(b)
	b.EachTopic(func(t broker.Topic) bool {
		ns := t.TopicName().NamespaceName()
		perNS[ns]++
		st := stats.Light(t)
		if hide {
			m := nsSums[ns]
			if m == nil {
				m = &topicstats.Sums{}
				nsSums[ns] = m
			}
			m.Add(&st)
		}
		tot["pulsar_broker_topics_count"]++
		tot["pulsar_broker_publish_rate_limit_times"] += float64(st.PublishRateLimitedTimes)
		full := t.Name()
		consumers := 0
		for _, ss := range st.Subscriptions {
			consumers += len(ss.Consumers)
		}
		for n, v := range map[string]float64{
			"pulsar_broker_subscriptions_count": float64(len(st.Subscriptions)),
			"pulsar_broker_producers_count":     float64(len(st.Publishers)),
			"pulsar_broker_consumers_count":     float64(consumers),
			"pulsar_broker_rate_in":             st.MsgRateIn,
			"pulsar_broker_rate_out":            st.MsgRateOut,
			"pulsar_broker_throughput_in":       st.MsgThroughputIn,
			"pulsar_broker_throughput_out":      st.MsgThroughputOut,
			"pulsar_broker_storage_size":        float64(st.StorageSize),
			"pulsar_broker_msg_backlog":         float64(st.MsgBacklog),
			"pulsar_broker_in_messages_total":   float64(st.MsgInCounter),
			"pulsar_broker_out_messages_total":  float64(st.MsgOutCounter),
		} {
			tot[n] += v
		}
		if hide {
			return true
		}
		var one topicstats.Sums
		one.Add(&st)
		emitSums(ch, &one, topicDescs, cluster, ns, full)
		for name, ss := range st.Subscriptions {
			sl := []string{cluster, ns, full, name}
			sg := func(n string, v float64) {
				ch <- prometheus.MustNewConstMetric(subDescs[n], prometheus.GaugeValue, v, sl...)
			}
			sg("pulsar_subscription_back_log", float64(ss.MsgBacklog))
			sg("pulsar_subscription_msg_rate_out", ss.MsgRateOut)
			sg("pulsar_subscription_msg_throughput_out", ss.MsgThroughputOut)
			sg("pulsar_subscription_unacked_messages", float64(ss.UnackedMessages))
			sg("pulsar_subscription_consumers_count", float64(len(ss.Consumers)))
			sg("pulsar_subscription_delayed", float64(ss.MsgDelayed))
		}
		for remote, rs := range st.Replication {
			rl := []string{cluster, ns, full, remote}
			rg := func(n string, v float64) {
				ch <- prometheus.MustNewConstMetric(replDescs[n], prometheus.GaugeValue, v, rl...)
			}
			connected := 0.0
			if rs.Connected {
				connected = 1
			}
			rg("pulsar_replication_rate_in", rs.MsgRateIn)
			rg("pulsar_replication_rate_out", rs.MsgRateOut)
			rg("pulsar_replication_throughput_in", rs.MsgThroughputIn)
			rg("pulsar_replication_throughput_out", rs.MsgThroughputOut)
			rg("pulsar_replication_backlog", float64(rs.ReplicationBacklog))
			rg("pulsar_replication_connected_count", connected)
			rg("pulsar_replication_delay_in_seconds", float64(rs.ReplicationDelayInSeconds))
		}
		return true
	})
	for ns, n := range perNS {
		ch <- prometheus.MustNewConstMetric(descTopicsCount, prometheus.GaugeValue, float64(n), cluster, ns)
	}
	mc.collectBookies(ch)
}

// namespacesForMetrics returns every registered namespace with a zero
// count, so pulsar_topics_count has a sample per namespace even with no
// topic loaded.
func namespacesForMetrics(b *broker.Broker) map[string]int {
	out := map[string]int{}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pol := b.Policies()
	tenants, err := pol.Tenants(ctx)
	if err != nil {
		return out
	}
	for _, t := range tenants {
		nss, err := pol.Namespaces(ctx, t)
		if err != nil {
			continue
		}
		for _, ns := range nss {
			out[ns] = 0
		}
	}
	return out
}

func (mc metricsCollector) collectBookies(ch chan<- prometheus.Metric) {
	if mc.bookies == nil {
		return
	}
	for _, bk := range mc.bookies.Bookies() {
		status, ro := 1.0, 0.0
		if bk.ReadOnly {
			status, ro = 0, 1
		}
		ch <- prometheus.MustNewConstMetric(descBookieStatus, prometheus.GaugeValue, status, bk.BookieID)
		ch <- prometheus.MustNewConstMetric(descBookieRO, prometheus.GaugeValue, ro, bk.BookieID)
		keys := make([]string, 0, len(bk.Stats))
		for k := range bk.Stats {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			d := prometheus.NewDesc("bookie_"+metricNameRe.ReplaceAllString(k, "_"), "Bookie stat "+k+".", []string{"bookie"}, nil)
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, bk.Stats[k], bk.BookieID)
		}
	}
}

// unchecked makes the collector "unchecked" (its bookie descriptors are
// dynamic): Describe sends nothing.
type unchecked struct{ c prometheus.Collector }

func (u unchecked) Describe(chan<- *prometheus.Desc)    {}
func (u unchecked) Collect(ch chan<- prometheus.Metric) { u.c.Collect(ch) }
