// Package pulsarclient is Magnetar's own client for the Pulsar binary
// protocol: the `magnetar client`, `magnetar perf` (default mode), the
// function worker and the functions SDK use it, so the binary links
// neither pulsar-client-go nor package testing. End-to-end tests keep
// using pulsar-client-go as the independent client.
//
// The broker's geo-replicator sends its stored entries to remote clusters
// through an EntryProducer (pre-built entries, one SEND each, no resend).
//
// It is built on protocol/pulsarproto (framing, entries, batch records,
// topic names); docs/client.md describes the protocol facts it relies on.
//
// # Shape
//
//	Client ── conn (one per broker, pooled; reader + writer goroutines)
//	  ├─ Producer ── partitionProducer per partition
//	  ├─ Consumer ── partitionConsumer per partition / matched topic
//	  └─ Reader   ── a Consumer on a non-durable Exclusive subscription
//
// A conn's reader goroutine dispatches responses by request id, receipts
// by producer id and MESSAGEs by consumer id; handlers never block on the
// network (frames go to the conn's writer goroutine, which coalesces them
// into few writes). Lookup follows Redirect answers (carrying the
// authoritative flag) up to 20 times and honours proxy_through_service_url
// (the broker URL then travels as proxy_to_broker_url in CONNECT).
//
// # Producer invariants
//
//   - Sequence ids increase by one per message, starting after the
//     last_sequence_id PRODUCER_SUCCESS reports (deduplication); an explicit
//     ProducerMessage.SequenceID is used as is and moves the counter past
//     it. A batch is sent with the first id as sequence_id and the last as
//     highest_sequence_id.
//   - Every SEND stays in the pending queue, in order, until its
//     SEND_RECEIPT (receipts arrive in order; one for sequence id s
//     completes every queued send up to s). When the connection is lost, or
//     the broker closes the producer, it reconnects (lookup, PRODUCER with
//     the same name and a higher epoch) and resends the pending frames
//     unchanged, so their sequence ids are kept and a broker with
//     deduplication drops the copies it already stored.
//   - A send fails with ErrSendTimeout when it had no receipt SendTimeout
//     after it was framed; MaxPendingMessages bounds the queue (SendAsync
//     blocks).
//   - Every callback runs exactly once.
//
// # Entry format written
//
// MessageMetadata always carries producer_name, sequence_id,
// publish_time and uncompressed_size (some clients need the latter to read
// a reassembled chunked message). With batching the payload is a batch
// (num_messages_in_batch set even for one message): records
// [u32 size][SingleMessageMetadata][payload] with properties,
// partition_key, event_time and sequence_id per message; the batch is then
// compressed as a whole. A message larger than max_message_size with
// chunking on is split into entries sharing uuid with chunk_id
// 0..num_chunks_from_msg-1 and total_chunk_msg_size (docs/chunking.md).
//
// # Codecs
//
//   - ZLIB: the zlib stream format (compress/zlib).
//   - LZ4: the LZ4 block format without a frame (sequences of token,
//     literals, 16-bit offset, match length); the decoded size comes from
//     uncompressed_size. The compressor is a greedy single-pass one.
//   - ZSTD: the writer emits a Zstandard frame of raw (stored) blocks,
//     which every zstd decoder reads but which does not shrink the data;
//     the reader decodes frames made of raw and RLE blocks only. An
//     entropy-coded ZSTD entry from another client cannot be read
//     (ErrDecompress; the entry is then acknowledged away like any
//     undecodable entry, as Pulsar clients do with a DecompressionError).
//     A full zstd codec needs a dependency outside the chosen list.
//
// # Consumer invariants
//
//   - Flow control counts messages: ReceiverQueueSize permits at
//     subscribe, and more once half of them were handed out. A batch entry
//     uses as many permits as it has messages, a chunk one.
//   - Messages reach Receive/Chan in the order of the entries and of the
//     batch; the queue is dropped on reconnect (the broker redelivers what
//     was not acknowledged).
//   - Individual acks are grouped for up to 10ms (AckWithResponse sends
//     them at once and waits for ACK_RESPONSE). A batch entry is
//     acknowledged once all its messages are; a cumulative ack inside an
//     incompletely acknowledged batch acknowledges up to the entry before.
//   - Nack redelivers after NackRedeliveryDelay: on Shared and Key_Shared
//     the named entries; on Exclusive and Failover everything
//     unacknowledged (the local queue is dropped).
//   - Dead letters: a message whose redelivery_count (from the broker) is
//     at least DLQPolicy.MaxDeliveries is not delivered; it is republished
//     to the dead-letter topic (default <topic>-<subscription>-DLQ) with
//     properties REAL_TOPIC and ORIGIN_MESSAGE_ID added, then acknowledged.
//   - Readers subscribe non-durably with start_message_id; the broker
//     starts at that entry, so the client discards what precedes the start
//     (and the start itself unless inclusive). After a reconnect the start
//     is the last message handed out.
//
// # Concurrency
//
// Client, Producer, Consumer and Reader are safe for concurrent use. Lock
// order: partitionProducer.mu / partitionConsumer.mu → conn.mu; no lock
// is held while a callback runs.
package pulsarclient
