// Package brokermetrics serves a broker's /metrics: Pulsar's topic,
// subscription, replication and broker-wide metric names in the
// Prometheus text format, the bookies' figures, the broker's publish
// latency histogram and whatever collectors the process adds (an
// in-process bookie's, the offloaders', the function worker's), with the
// Go runtime and process collectors every exporter has.
//
// It lives outside the broker core (issue 32): the core only counts (its
// rate windows, counters and the connection byte counter) and this
// package reads those through the core's read-only views —
// Broker.EachTopic and package topicstats (over Topic.Snapshot) for the
// topics, Broker.ConnBytesIn,
// Broker.Bookies and Broker.Policies — at scrape time. It hears each
// stored entry's publish latency through the core's
// PublishLatencyObserver extension point.
//
// Wiring (internal/stack, broker/brokertest), before the broker starts:
//
//	m, err := brokermetrics.Enable(b, brokermetrics.Options{Collectors: cs})
//
// Enable declares GET /metrics on the broker's route table with
// auth.AccessMetrics (Pulsar's authenticateMetricsEndpoint decides
// whether it needs credentials).
//
// Series:
//
//   - per loaded topic (labels cluster, namespace, topic): pulsar_rate_in,
//     pulsar_rate_out, pulsar_throughput_in/out, pulsar_storage_size,
//     pulsar_msg_backlog, pulsar_storage_backlog_size,
//     pulsar_producers_count, pulsar_consumers_count,
//     pulsar_subscriptions_count, pulsar_average_msg_size and the
//     pulsar_in/out_messages/bytes_total counters; per subscription
//     pulsar_subscription_*; per remote cluster pulsar_replication_*.
//   - with Config.HideTopicLevelMetrics (Pulsar's
//     exposeTopicLevelMetricsInPrometheus=false) the topic series are
//     summed per namespace instead (labels cluster, namespace), and no
//     subscription or replication series are exported, so a scrape stays
//     a few KiB whatever the number of loaded topics (nsmetrics.go).
//   - pulsar_topics_count per registered namespace (0 when none is
//     loaded), pulsar_broker_* sums over every loaded topic.
//   - bookie_SERVER_STATUS, bookie_read_only and bookie_<stat> per bookie
//     (Broker.Bookies), magnetar_connection_in_bytes_total and
//     magnetar_broker_publish_latency_seconds.
//
// Stats are read without storage reads (no earliest-message lookups), so
// a scrape costs no I/O per topic.
package brokermetrics
