// Package topichistory keeps the recent history of every loaded topic
// for the web console's charts: its message and byte rates in and out,
// its backlog (summed over its subscriptions) and its stored bytes, one
// Sample per Config.HistoryInterval (default 5 s), the last
// Config.HistoryLength kept (default 15 minutes' worth, at most 900).
//
// It lives outside the broker core (issue 32). The Sampler is a
// broker.Feature with a Lifecycle: its goroutine, started with the
// broker, walks the loaded topics (Broker.EachTopic) each interval and
// reads each one's counters through the core's read-only view
// Topic.Counters, which builds no stats (a few words a topic per tick;
// broker's TestHistoryCountersMatchStats and the scale test guard it).
// A rate needs two readings: a topic's first tick only primes its
// counters, and a counter that went backwards (the topic was reloaded)
// gives a rate of 0. A topic that is no longer loaded on a tick loses
// its history.
//
// Memory: a ring per topic holds runs, a run being one sample or a
// stretch of identical idle samples (no traffic, the same backlog and
// storage size) taken at regular ticks, kept as its first sample, the
// time of its last and its length; an idle topic costs one run instead
// of HistoryLength samples. Reading expands the runs, spreading an idle
// stretch's times evenly between its first and last sample (both exact).
// Every topic sampled on one tick shares the tick's time, so the
// histories of a partitioned topic's partitions line up (the console
// sums them by time).
//
// Wiring (internal/stack, with the console):
//
//	h, err := topichistory.Enable(b) // before b.Start
//	console.Register(b.Router(), console.BrokerSource(b, h, bookies), log)
package topichistory
