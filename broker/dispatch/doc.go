// Package dispatch is a topic's subscription and its dispatch loop: the
// consumers attached to it with their permits and pending entries, the
// reads from its cursor, redelivery, the choice of a consumer for each
// entry (over package broker/selector), the unacked limits and dispatch
// rate limits, and its stats. The broker core (package broker) makes a
// Subscription for each subscription of a topic (Init or New, with a
// Config: the cursor, the parse function, the limits' sources, the
// features' Hooks), serves the protocol's commands over it (SUBSCRIBE:
// AddConsumer; FLOW: Flow; ACK: Ack; REDELIVER_UNACKNOWLEDGED_MESSAGES:
// Redeliver; SEEK: DisconnectAll and Seek; a consumer or connection
// leaving: RemoveConsumer) and keeps the topic's list of subscriptions.
// This package imports nothing of the broker but the leaves it is built
// on (broker/selector, broker/entryset, broker/storage, broker/snap);
// internal/lint checks it.
//
// # The loop owns the state
//
// One loop goroutine owns a subscription's dispatch state: the cursor,
// the consumers, their permits, the pending entries, the replay and
// delayed sets, the counters. Everything else submits closures with Do
// (async) or Call (sync) and never touches that state; every method but
// Do, Call, Wake, Close, Limit and the names (Name, TopicName, Logger)
// is the loop's, to be called inside such a closure. The loop goroutine
// runs only while it has timers or queued work: idle, it exits; Do (a
// flow, an ack, a consumer joining) and Wake (new entries, with consumers
// connected) start it again, and Call runs its function inline while
// nobody owns the state (the caller owns the loop state meanwhile; the
// handover goes through Subscription.run, a leaf lock), so an idle
// subscription holds no goroutine, nor does a live one whose consumers
// wait for messages (loop.go). At most maxOps closures wait for the loop;
// Do blocks beyond. Call returns only once f ran, or once the loop
// exited without running it (false). The loop never takes a lock of its
// caller's (the core's topic locks), so code holding those may call a
// subscription; a closure must never Call the subscription it runs on.
//
// # Consumers and their sinks
//
// A consumer's frames go to its Sink (the core's connection; a recorder
// in tests), called on the loop: SendMessage queues one MESSAGE frame
// carrying a stored entry as read (the bytes are the sink's to queue,
// not to change), SendActiveChange an ACTIVE_CONSUMER_CHANGE,
// CloseConsumer a broker-initiated CLOSE_CONSUMER (and the sink forgets
// the consumer id). A sink must not block, must not call back into the
// subscription (no Call; Do only from another goroutine), and Writable
// must report whether the connection can take more now: a sink that said
// no wakes the subscription (Wake) once it drained.
//
// # Hooks
//
// The core's features reach the loop through Hooks, called on the loop:
// Skip (a dispatch filter: an entry acknowledged and never delivered,
// such as one of an aborted transaction; it gets the whole
// MessageMetadata when Filtering), Hold (an ack hook withholds an entry
// read for dispatch; the feature gives it back with Return), Skipped (a
// marker or skipped entry was acknowledged) and MarkDeleteMoved. They
// must not block or take locks of their caller's. A feature acknowledges
// on the subscription's behalf with Acknowledge, withholds a delivered
// entry with Withhold and puts one back with Requeue or Return, all on
// the loop.
//
// # Dispatch and redelivery
//
// Permits are counted in messages: an entry of an N-message batch uses N
// (the count may go negative; dispatch stops at <= 0). A consumer whose
// Sink is not Writable (the core's connection: its outbound queue is
// above half of MaxOutboundBytes) is treated as having no permits until
// the writer drains it (backpressure); a client that accepts nothing for
// WriteTimeout is disconnected (by the core). Entries go to the
// replay set (redelivered first, in position order) when they are nacked,
// when their consumer leaves, or when the consumer they are routed to
// cannot take them (Key_Shared keeps per-key order this way). Except for
// Key_Shared, a read fetches no more entries than the consumers have
// permits for. Redelivery counts are kept per entry per subscription.
//
// Pending (delivered, unacked) and delayed entries keep their position,
// message count and key, not their bytes; redeliveries re-read them from
// the managed ledger, one read per dispatch batch (cursor.ReadAt).
// Every operation on these sets is O(log n) or better in the number of
// entries a client can make them hold (package broker/entryset,
// requeue.go): the replay set is a heap plus a sorted front, cumulative acks pop a heap of
// pending entries by position, delayed entries wait in a heap by due
// time, and the pending set of a consumer that leaves moves to the replay
// set a chunk per turn of the loop; one dispatch call sends at most about
// dispatchTurn entries before the loop serves its other work.
// Shared and Key_Shared dispatch stops for a consumer (subscription)
// holding MaxUnackedPerConsumer (...PerSubscription) unacked messages
// and resumes at half (docs/limits.md).
//
// Selection: Exclusive (one consumer), Failover (active = index
// partition % n of consumers sorted by priority, name, arrival; told with
// ACTIVE_CONSUMER_CHANGE to every consumer when the choice changes, and to
// a new consumer 100 ms after its SUCCESS, since the Go client drops the
// command until it has processed SUCCESS), Shared (round-robin over
// consumers with permits), Key_Shared (Murmur3 of ordering key / partition key
// mod 65536: split hash ranges in AUTO_SPLIT mode, or a consistent-hash
// ring with Config.ConsistentHashing (the broker's
// KeySharedUseConsistentHashing), declared ranges in
// STICKY; a consumer joining late is held to the entries read before it
// joined until they are acknowledged; keyshared.go, docs/policies.md).
//
// Chunked messages are kept whole per consumer on Shared and Key_Shared
// subscriptions (chunk.go, docs/chunking.md). Non-persistent topics have
// no storage: their subscriptions read a QueueCursor, which Offer fills
// with an entry when some consumer has permits (it is dropped
// otherwise), and their pending entries keep their bytes.
package dispatch
