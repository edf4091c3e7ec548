// Package server is a broker's transactions: the transaction
// coordinators it serves (package txn/coordinator, each with a log on a
// managed ledger of its own) and the participant side of its topics
// (transaction buffers, pending acks, ending transactions on the topics
// and subscriptions it serves or, through the broker's client, on other
// brokers'). docs/transactions.md has the model, formats and invariants.
//
// It is a feature of the broker core (broker/doc.go, "Extension points"),
// wired in cmd/magnetar:
//
//	txs, err := server.Enable(b, server.Config{Coordinators: 16})
//	admin.Register(b.Router(), b, admin.Options{Transactions: txs})
//
// and uses these extension points:
//
//   - SendInterceptor: a SEND with a txn id is claimed, checked against
//     the topic's buffer (ended transactions refuse it), stamped with the
//     id in its MessageMetadata, and gets a PublishInterceptor of its own
//     (txnSend) that registers the add with the buffer before the append
//     and completes it in the ledger callback.
//   - Topic.SetReadBound: every cursor of a topic with a buffer reads and
//     counts backlog only before the first entry of the oldest open
//     transaction (the max read position); GET_LAST_MESSAGE_ID then
//     answers the last entry before it that is neither a marker nor
//     aborted.
//   - DispatchFilter: entries of aborted transactions are acknowledged,
//     never delivered.
//   - AckHook: an ACK with a txn id is held (pendingack.go: conflict
//     checks, a durable log record, then ACK_RESPONSE); entries held
//     whole by an open transaction are withheld from dispatch
//     (HeldEntry, SubLoop.Withhold) and handed back (SubLoop.Redeliver)
//     when it aborts, or acknowledged (SubLoop.Acknowledge) when it
//     commits.
//   - Commands: TC_CLIENT_CONNECT_REQUEST, NEW_TXN, ADD_PARTITION_TO_TXN,
//     ADD_SUBSCRIPTION_TO_TXN, END_TXN (answered off the reader, on the
//     server's goroutines); END_TXN_ON_PARTITION and
//     END_TXN_ON_SUBSCRIPTION are SuperUserOnly (a coordinator's broker
//     client).
//   - TopicHook: at load a topic's buffer is rebuilt from its snapshot
//     and the entries after it, its subscriptions' pending acks from
//     their logs; at close the buffer is snapshotted and the logs closed.
//     TopicTicker snapshots a buffer when due.
//   - Lifecycle and BundleObserver: the assign topic is created at start
//     and, on a single node, every coordinator with a log is recovered;
//     coordinators close with their assign partition's bundle and with
//     the broker (before its topics).
//
// # State and locking
//
// A topic's state (topicTxn, in a broker.TopicSlot) holds its buffer,
// created on the first transactional SEND under topicTxn.mu, which also
// guards the open pending-ack logs. Lock order: topicTxn.mu >
// buffer.snapMu > buffer.mu > managed-ledger locks; the ledger callbacks
// take buffer.mu only. A subscription's pending acks (pendingAcks, in a
// broker.SubSlot) belong to its loop: they are read and changed only
// through broker.Subscription.Do and Call. Off (the feature not
// registered), the core refuses transactional SENDs, ACKs and commands
// with NotAllowed and its plain paths pay a nil check.
package server
