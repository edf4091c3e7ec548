// Package perf is the load generator behind `magnetar perf produce` and
// `magnetar perf consume`: pulsar-perf-like producers and consumers built
// on the official Go client (github.com/apache/pulsar-client-go), with a
// rate limiter, a live one-line progress report every second and a final
// summary that can also be printed as JSON for scripts.
//
// # Measurements
//
// Publish latency is the time from SendAsync to its callback, in
// microseconds, recorded in an HDR histogram (1 µs .. 60 s, 3 significant
// digits). Consume latency is end-to-end: receive time minus the message's
// publish time (the client stamps publish time in milliseconds, so the
// figure is only meaningful for tailing consumers on one machine).
//
// # Invariants
//
//   - Counters are updated only from completion callbacks (produce) or after
//     a message was handed to the application (consume); errors never count
//     as messages.
//   - Every goroutine a run starts is waited for before Produce/Consume
//     return; producers are flushed and closed, consumers closed.
//   - The rate limiter never lets the cumulative count run ahead of
//     rate*elapsed by more than one burst (it does not "catch up" after a
//     stall by more than that either).
//
// The driver that compares Magnetar with the NATS JetStream peer is
// run.sh in this directory; results and analysis are in BENCH_NOTES.md.
package perf
