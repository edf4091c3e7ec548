// Package snap holds the read-only values the broker core hands the
// stats, metrics, history and console packages (topicstats,
// brokermetrics, topichistory, console, brokeradmin): what the core
// counts of a loaded topic, its producers, subscriptions and consumers
// (broker.Topic.Snapshot: Topic, Publisher, Subscription, Consumer,
// Offload, Client), and the counters-only read of the history sampler
// (broker.Topic.Counters: Counters). Package topicstats builds Pulsar's
// stats shapes (JSON) from a Topic; neither the core nor this package
// builds any.
//
// Invariants: the values are plain data, copied out under the topic's
// lock and on each subscription's loop, and never shared with the core
// afterwards (a reader may keep or change them). Counters are
// cumulative since the topic (producer, consumer) loaded; messages in
// count only stored messages. Rates are those of the last window of the
// core's stats loop (brokerconf.Config.StatsUpdateInterval): every
// reader sees the same rates until the next tick, and the first window
// of a new topic or client reads 0. Times are unix milliseconds, 0 for
// never or not known. The package imports nothing of the project.
package snap
