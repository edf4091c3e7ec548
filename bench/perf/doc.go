// Package perf is the load generator behind `magnetar perf produce` and
// `magnetar perf consume` (NewCommand builds them; the binary only adds
// it to its tree): pulsar-perf-like producers and consumers built
// on Magnetar's full protocol client (package pulsarclient: batching,
// compression, TLS, authentication, lookup redirects, reconnects), or with
// --raw on a lean single-purpose protocol client (see Raw mode), with a
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
// # Raw mode
//
// RawProduce and RawConsume (`--raw`) replace pulsarclient with a lean
// client on protocol/pulsarproto, so the server can be measured beyond
// what a general client costs per message (NOTES.md, "What binds";
// those notes measured the default mode when it was pulsar-client-go).
// Partitioned topics are expanded into their partitions first (asked with
// pulsarclient), each served by its own producers or consumers. Then it
// speaks the binary protocol over plain TCP, per producer or consumer on
// its own connection: CONNECT, LOOKUP (only a Connect
// answer is accepted, and the connection to the service URL is kept: a
// single broker or a proxy; Redirect and Failed are errors), PRODUCER or
// SUBSCRIBE, PING answered with PONG, CLOSE_PRODUCER / CLOSE_CONSUMER at the
// end.
//
// Producer: every SEND is a batch built afresh like a real client builds
// it: per message a SingleMessageMetadata (payload_size, sequence_id) and
// the payload bytes (the same payload slice each time), per batch a
// MessageMetadata (producer_name from PRODUCER_SUCCESS, sequence_id of the
// first message, publish_time, uncompressed_size, num_messages_in_batch,
// highest_sequence_id) and the 0x0e01 CRC32C over metadata and body;
// SEND carries num_messages and highest_sequence_id. Sequence ids start at
// 0 and increase by one per message. A batch closes at batch-max-messages,
// before it would pass batch-max-bytes, when max-pending messages are
// outstanding (it is then sent rather than left waiting), and with --rate
// after batch-delay from its first message. --disable-batching sends each
// message as a plain (non-batch) SEND. Receipts must come in order with the
// batch's first sequence id (and last as highest_sequence_id, when set); a
// receipt out of order, a SEND_ERROR or a lost connection ends that
// producer, counts its unacknowledged messages as errors and is the
// summary's first_error. Publish latency is from the write of a batch to
// its receipt, recorded once per batch weighted by its message count (time
// spent in the open batch is not included, unlike the Go client's figure).
//
// Consumer: SUBSCRIBE (type and initial position from the flags, durable),
// FLOW of the receiver queue size, and a FLOW of what was received once
// that reaches half the queue (permits counted in messages, as the client
// does). Every MESSAGE's entry has its checksum verified and its metadata
// decoded, and every SingleMessageMetadata of a batch is walked (messages
// an ack_set marks as acknowledged are skipped): messages and payload
// bytes are counted, end-to-end latency (receive time minus publish_time,
// ms) recorded once per entry weighted by its message count. Acks are per
// entry: --ack-mode cumulative (the default on exclusive and failover
// subscriptions) sends one cumulative ACK for the latest entry, individual
// (the default on shared and key_shared) one ACK listing every entry
// received, at most 1000 ids a frame; both are sent when the socket's read
// buffer runs dry, so at most once per read burst. none never acks.
//
// Not supported: compression and encryption (a compressed entry is a
// consumer error; producers never compress), chunking, TLS and
// authentication, schemas, keys and properties, reconnection (a broker
// CLOSE_PRODUCER / CLOSE_CONSUMER or a dropped connection ends that
// producer or consumer), following a lookup to another broker, and the
// Go client's memory limit.
//
// Both hot paths allocate nothing per message in steady state (see
// TestRawHotPathsDoNotAllocate and the BenchmarkRaw* benchmarks): batches
// are built in one reused buffer with the headers written right-aligned in
// front of the body so a batch goes out in one write; MESSAGE and
// SEND_RECEIPT are decoded by hand (protowire) and a consumer decodes an
// entry in place in its read buffer (which holds a whole default-size
// frame); ACK and FLOW are encoded by hand. Other commands use the
// generated code.
//
// # Ack modes of the default consumer
//
// Consume acks every message individually by default. --ack-mode
// cumulative acks cumulatively every 100th message of each topic
// partition and the last one of each before closing; none never acks.
//
// # Latency windows and payload timestamps
//
// --window D (Common.Window) also reports every D of the run as its own
// latency distribution (Summary.Windows: start, length, samples,
// p50/p99/p999/max in µs), for targets stated per window. A last window
// shorter than D/2 is dropped. Off, the hot path records nothing more.
// produce --payload-timestamp writes each message's send time (Unix ns,
// big-endian) into the first 8 payload bytes, and consume
// --payload-timestamp measures end-to-end latency from it in µs instead of
// from the metadata's millisecond publish time (which the Go client sets
// when a batch is created); producer and consumer must share a clock. Not
// in raw mode. bench/latency/run.sh uses both.
//
// # Reports
//
// --report DIR writes an HTML page (package bench/report; Report builds
// it) with the summary, messages per second and latency p50/p99/max per
// progress interval (Common.Timeline keeps them in Summary.Timeline, with
// or without the progress line), the latency distribution as a percentile
// curve (Summary.LatencyHistogram) and the windows, beside the machine and
// the flags (the value of --auth-params is not written).
//
// The driver that compares Magnetar with the NATS JetStream peer is
// run.sh in this directory; results and analysis are in NOTES.md.
package perf
