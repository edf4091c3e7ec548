// Package broker serves the Pulsar binary protocol (for unmodified Pulsar
// clients) over topics stored in managed ledgers: protocol handling,
// topics, subscriptions, dispatch, the limits of the topics it owns on
// its hot paths, and /metrics. The admin REST API (lookup included)
// lives in package admin and reaches the broker only through the role
// interfaces admin declares (admin/roles.go); tenants, namespaces and
// their policies live in package policy, whose Store a topic resolves
// its policy from when it loads (each topic holds its resolved policy;
// package enforcement keeps it current).
//
// # Usage
//
//	b, err := broker.New(brokerconf.Config{ServiceAddr: ":6650", HTTPAddr: ":8080"},
//		broker.Deps{Metadata: store, OpenLedger: storage.Opener(factory, mledger.Config{})})
//	err = b.Start(ctx)        // binds both listeners; b.ServiceAddr(), b.HTTPAddr()
//	...
//	err = b.Close()           // graceful: stop accepting, answer in-flight sends,
//	                          // flush connections, close managed ledgers
//
// The configuration (Config below: its fields, defaults and validation)
// is package brokerconf's; a persistent topic's storage is reached
// through package broker/storage (Opener adapts package mledger); the
// values a topic's snapshot hands the stats packages are package
// broker/snap's. All three are leaves that know no broker.
//
// The broker serves its HTTP listeners from b.Router(), an httpapi.Table
// on which the core declares no route itself (/metrics is package
// brokermetrics'); other packages declare their
// routes (each with its access rule; see package httpapi) before Start,
// the binary the admin API with admin.Register(b.Router(),
// admin.BrokerDeps(b), built on package brokeradmin). Start refuses a table with duplicate or
// rule-less routes. No HTTP handler is a method of the broker's types.
//
// # Model
//
//	Broker ── topics (loaded on first use; auto-created unless disabled)
//	  topic ── producers (by name; access modes) ── subscriptions (by name)
//	    subscription ── cursor (durable or not) ── consumers
//	conn ── producers and consumers by client-assigned id
//
// Which consumer of a subscription gets an entry is package
// broker/selector's (the four subscription types' algorithms, over the
// consumer as selector.Consumer). The administration surface is package
// brokeradmin's, over the core's seams (its doc.go lists them: Registry,
// Topic and the view's primitives in viewops.go, Topic.Snapshot,
// EachTopic, Policies, ownership); the core never imports it. *Broker
// itself keeps what the features and the wiring use (Start, Close, Use,
// Topic, EachTopic, Metadata, Config, Policies, Ownership, Router and the
// bound addresses). Its parts are values of their own: the listeners
// (listeners.go), the cluster membership (ownership.go: the Ownership
// package brokercluster implements, plugged in through Deps.JoinCluster),
// the command authorization seam (access.go: how each command type is
// routed, the CommandAuthorizer package brokerauthz implements) and the
// producer-name generator (producername.go). Tiered storage is package
// tiered's, behind LedgerHook and PolicyObserver.
//
// A persistent topic is one managed ledger, which the core reads and
// writes through package broker/storage's ManagedLedger and Cursor (its
// Opener adapts package mledger; tests may use fakes); one SEND (a Pulsar batch) is
// one entry, stored exactly as received from the 0x0e01 magic to the end,
// and sent to consumers unchanged. The entry is the broker's from the SEND
// on and never modified: a SEND frame above pulsarproto.OwnedFrameThreshold
// was read straight into a buffer of its own, which becomes the entry
// as is; a smaller one is copied out of the connection's reused frame
// buffer. Either way the entry (Entry: buf[off:]) has free room in front
// (buf[:off], at least mledger.EntryHeadroom), which the ledger uses to
// write its entry header without copying the entry again
// (mledger.AddEntryHeadroom); a feature that rewrites an entry
// (Entry.SetData: broker entry metadata, a transaction's id) hands over a
// new buffer with the same room. The SEND path parses the entry once
// (parseSend: framing, checksum, MessageMetadata) and every later stage
// reads that parsed view (Entry.Meta, Entry.Sections); the core parses
// entries only through entryparse.go, where a test counts the parses of
// a SEND. Non-persistent topics have no storage:
// an entry goes to the subscriptions whose consumers have permits at
// publish time and is dropped by the others.
//
// Metadata (tenants, namespaces, partitioned topics, created topics, and
// the features' state such as schemas) lives in a metadata.Store; package
// topicreg (the topic registry, below the core) has the layout.
// public/default, pulsar/system and the cluster are created at Start.
//
// # Goroutines and ownership
//
//   - Per connection: a reader (decodes frames, runs handlers in order),
//     a goroutine per slow command in flight, a connection op (PRODUCER,
//     SUBSCRIBE, UNSUBSCRIBE, the lookups and their authorization, which
//     may load a topic or wait for the metadata store; at most maxConnOps,
//     per-id order kept by pending ops as Pulsar's futures keep it;
//     connops.go), and
//     a writer (drains the outbound queue, package broker/outqueue,
//     coalescing every frame queued during the previous write into one
//     writev; entries of 4 KiB and more are queued by reference, not
//     copied). Handlers never wait for
//     storage on the SEND path: AddEntry is asynchronous and receipts are
//     queued from its callback, in add order, so receipts of one producer
//     are in send order. A closing connection first answers its in-flight
//     SENDs (bounded wait), then flushes its queue. SENDs held by a
//     producer_request_hold quota are dropped unanswered when their
//     producer closes or is detached, or its connection closes (a
//     SEND_ERROR would close the client's whole connection; the client
//     re-sends them after reconnecting); they are never published.
//   - Per subscription: one loop goroutine owns the dispatch state (the
//     cursor, consumers, permits, pending acks, replay and delayed sets).
//     Everything else submits closures with Do (async) or Call (sync) and
//     never touches that state (package broker/dispatch;
//     docs/architecture.md, Design rules).
//   - Features run goroutines of their own (geo-replication's
//     replicators and snapshot controllers, package georep; the
//     transaction coordinators, txn/server); they stop with the topic
//     (TopicHook.CloseTopic) or the broker (Lifecycle.Close).
//   - The accept loop and HTTP server. Close waits for all of them.
//
// # Extension points
//
// The core (this package) declares small interfaces at its extension
// points and calls them; features live in packages of their own that
// import broker (never the other way round: internal/lint checks it),
// implement some of the interfaces, and are registered with Broker.Use
// before Start (extension.go; cmd/magnetar wires them, features.go).
// What a feature sees of the core is the view types of view.go: Topic,
// Subscription, SubLoop (a subscription seen from its loop), Producer,
// Conn, Entry, and per-topic / per-subscription slots for its own state
// (TopicSlot, SubSlot: the state has one owner, the topic or
// subscription, and is built where the topic loads, never in a side
// table keyed by topic). The hooks, who calls them, and what they may do:
//
//	hook                        goroutine                    held            may                           must not
//	SendInterceptor             connection reader            nothing         rewrite (Entry.SetData),      wait for storage adds
//	  .InterceptSend            (frame order)                                attach a PublishInterceptor,  (bounded one-time setup
//	                                                                         refuse (*SendError)           on a topic is allowed)
//	PublishInterceptor          the publishing goroutine     topic.pub (R),  Entry.SetData, bookkeeping    block, take topic locks,
//	  .BeforeAdd                (reader, or one releasing    topic.addMu,                                  call the topic or a
//	                            held sends)                  [topic.held]                                  subscription
//	  .AfterAdd                 managed-ledger callback      (ledger's)      leaf locks, wake-ups          block, do I/O
//	                            (append order)
//	DispatchFilter.SkipEntry    subscription loop; reader    nothing         read its own state (leaf      block, take topic or
//	                            (GET_LAST_MESSAGE_ID)                        locks)                        subscription locks
//	Topic.SetReadBound's func   managed ledger, every read   mledger's lock  atomic loads                  anything else
//	AckHook.InterceptAck        connection reader            nothing         Subscription.Do, answer       block on the loop
//	                                                                         later (AckRequest.Reply)      (Call), take topic.mu
//	AckHook.HeldEntry           subscription loop            (loop owner)    keep the Withheld entry       block
//	TopicHook.LoadTopic         the goroutine loading t      nothing; t not  storage and metadata I/O,     publish
//	                            (a request's)                yet visible     TopicSlot.Set,
//	                                                                         Subscription.Call (idle)
//	TopicHook.CloseTopic        the goroutine closing t      nothing         I/O (snapshots), close its    use t's subscriptions
//	                                                                         own ledgers                   (stopped)
//	LedgerHook.LedgerOpened     the goroutine loading t      nothing; t not  set the managed ledger's      block, read or write
//	                            (persistent topics)          yet visible     settings (offload policy)     the ledger
//	TopicTicker.TickTopic       stats loop                   nothing         short metadata writes         block long
//	AttachHook.AttachProducer   connection op (one at a      nothing         metadata I/O (bounded by      publish, take topic
//	  / .AttachConsumer         time per producer/consumer                   ctx), refuse (*AttachError)   locks
//	                            id)
//	DeletionObserver            the deleting goroutine       nothing         metadata I/O (bounded by      fail the deletion
//	  .TopicDeleted             (a request's, inactive GC)                   ctx)
//	Command.Handle              connection reader            nothing         Conn.Send, start a goroutine  block
//	                            (frame order)                                that answers later
//	BundleObserver              ClusterNode.UnloadBundle     nothing         release what the bundle held  load topics
//	Ownership (all methods)     any (Owns, Holds: publish    any             metadata I/O (TopicBundle,    block (Owns, Holds)
//	                            and ack paths)                               Lookup, Leave)
//	CompactedReads              where the subscription is    nothing         wrap the cursor; the wrapper  share the wrapper with
//	  .CompactedCursor          created, or its loop                         is the loop's afterwards      another goroutine
//	LastReadableCursor          connection reader            nothing         read the feature's own        move the cursor
//	  .LastReadable             (GET_LAST_MESSAGE_ID)                        state (leaf locks)
//	TopicPinner.Pinned          Topic.IdleUnloadable (the    nothing         atomic loads, leaf locks      take topic locks
//	                            idle unloader's goroutines)
//	StoreObserver.Stored        managed-ledger callback      (ledger's)      atomic counts, wake-ups       block, take topic locks
//	                            (append order)
//	PolicyObserver              the goroutine refreshing     nothing         open and delete cursors,      block long
//	  .PolicyApplied            the topic's policy                           start goroutines, wait for
//	                                                                         its own to stop
//	PublishLatencyObserver      managed-ledger callback      (ledger's)      observe a histogram (leaf     block
//	  .ObservePublishLatency    (append order)                               locks)
//	ReplicatedSubscriptions     subscription loop            (loop owner)    SubSlot, SubLoop.Acknowledge  block, Subscription.Call
//	  .MarkerRead,              (replicated subscriptions                    (from Subscription.Do),
//	  .MarkDeleteMoved          only)                                        append markers (async)
//	SystemSubscriptions         Broker.Use                   b.mu            return fixed names            call the broker
//	Lifecycle.Start / .Close    Broker.Start / .Close        nothing         I/O; Close must tolerate a
//	                                                                         feature never started
//	Admission                   connection reader (Send),    nothing         read t's policy, Topic's      take topic locks, block
//	  (AdmitTopics, Producer,   connection op (Producer,                     Producer/ConsumerCount,       long
//	  Consumer, Send)           Consumer); an admin or                       metadata I/O (Topics)
//	                            lookup request (Topics)
//	Admission                   connection op                topic.mu        read t's policy, judge the    take topic locks, call
//	  .AdmitSubscription                                                       count it is given             the subscriptions
//	Admission.AdmitSubscriber   subscription loop            (loop owner)    read t's policy               call the subscription
//	Limiter (Limits: Publish,   connection reader (SEND);    nothing; under  count, leaf locks             block, take topic locks
//	  Dispatch, Subscription's, subscription loop;           topic.limits.mu
//	  Replicator's), Subscribe  replicator loop;             (Subscription)
//	                            connection op (Subscribe)
//	Quota.AdmitProducer         connection op                nothing         read backlogs, storage        take topic locks
//	Quota.AdmitSend             connection reader, or the    topic.held      read backlogs, storage;       take topic locks, publish
//	                            goroutine releasing                          Subscription.Call (evict)
//	PolicyWatcher               the goroutine loading t,     nothing         Topic.RefreshPolicy, I/O      block long
//	  .RefreshPolicy            once t is visible
//	CursorObserver              the admin request's          nothing         Topic.ReleaseHeld, I/O        block long
//	  .CursorsMoved
//	CommandAuthorizer           connection op (core          nothing         metadata I/O (bounded by      send, touch the
//	  .AuthorizeCommand         commands), connection                        ctx), return a Denial         connection
//	                            reader (features')
//
// Order within the core: SENDs are verified and parsed once (parseSend,
// entryparse.go), admitted by the Admissions (registration order),
// passed to the SendInterceptors (registration order), admitted or held by the
// topic's Quota (held.go), deduplicated, then published: broker-wide
// BeforeAdd (registration order, under topic.addMu, which the core takes
// only when some are registered), the entry's own hook, the append; in
// the callback the entry's own AfterAdd, then the broker-wide ones, then
// the receipt. A PRODUCER or SUBSCRIBE passes the core's checks (topic
// load, the Admissions, the Quota, subscribe rate; a new subscription is
// admitted again under topic.mu, a consumer on the subscription's loop),
// then the AttachHooks (registration order), before anything is attached. With
// authorization on, the core asks the CommandAuthorizer (access.go;
// package brokerauthz holds the rules, a table over the protocol's
// command types) before it serves a command naming a topic or namespace
// (PRODUCER, SUBSCRIBE, the lookups), and before a feature's command
// reaches Handle (its rule: Command.SuperUserOnly, Command.Access); it
// sends the Denial's answer and serves nothing. Start fails with
// authorization on and no authorizer registered: the core fails closed. A SEND or ACK carrying a transaction id that no hook
// claims is refused with NotAllowed (transactions are off); a command
// type no feature serves closes the connection, except the transaction
// commands, which are answered with NotAllowed (pulsarproto.Refusal).
// Off, a hook costs the core a nil check or a range over an empty slice
// on its path; a topic without Limits costs one atomic load per SEND,
// dispatch and SUBSCRIBE.
//
// A feature plugs in so: declare its per-topic state and get a
// TopicSlot (NewTopicSlot) in its constructor; implement the hooks it
// needs on one type with a Name; register it with b.Use(f) before
// b.Start (wiring in cmd/magnetar and in broker/brokertest Options); put
// its admin surface (stats, operations) on its own type and hand that to
// admin, not on *Broker; test it with broker/brokertest. Package
// entrymeta (broker entry metadata: a PublishInterceptor and a
// TopicHook) is the small example.
//
// # Geo-replication
//
// Geo-replication is a feature outside the core (package georep). What
// the core keeps for it on its own paths (the configuration store,
// ReplicatorPrefix, ReplicatorOrigin, the replicated flag of a
// subscription, markers) is listed in package georep's doc ("In the
// core").
//
// # Dispatch
//
// A subscription and its dispatch loop are package broker/dispatch's
// (its doc.go has the rules: permits, backpressure, the replay set and
// redelivery counts, unacked limits, how Exclusive, Failover, Shared and
// Key_Shared choose a consumer, chunked messages). The core makes a
// subscription where a topic creates one (subscription.go: its cursor,
// the entry parse, the topic's unacked and delayed-delivery policy, the
// dispatch rate limiters, and the features as the loop's Hooks: the
// DispatchFilters, AckHooks and ReplicatedSubscriptions; topicsub.go),
// serves FLOW, ACK, REDELIVER_UNACKNOWLEDGED_MESSAGES, SEEK and the
// consumer's lifecycle over its methods (handlers.go,
// handlers_consumer.go, topicsub.go), and is
// each consumer's Sink (conn.go: MESSAGE, ACTIVE_CONSUMER_CHANGE,
// CLOSE_CONSUMER and the Writable backpressure).
//
// # Transactions
//
// Transactions are a feature outside the core (package txn/server,
// docs/transactions.md), plugged into the extension points above.
// Without it the core refuses a SEND or ACK carrying a transaction id,
// and every transaction command, with NotAllowed (ErrTxnDisabled).
//
// # Policies, limits, stats
//
// A topic's effective policy (policy.Resolved) is its topic-level
// policies over its namespace's over the broker defaults, resolved when
// it loads (policy.go) and held as a snapshot; the core reads from it
// what it does itself (deduplication, delayed delivery, unacked
// messages). Admission limits (an Admission, limits.go), keeping the
// snapshots current, rate limits (Limiters the core counts its work
// against), backlog quotas (a Quota; held sends, held.go), message TTL,
// inactive topics and idle subscriptions are the feature package
// enforcement's (its doc.go and docs/policies.md have the rules).
//
// The core builds no stats shape: it counts (cumulative counters; messages
// in count stored messages only) and rolls rates per fixed window with one
// timer (Config.StatsUpdateInterval, stats.go), and Topic.Snapshot
// (snapshot.go) reads a topic, its producers, subscriptions (on their
// loops) and consumers as plain values (package broker/snap). Package
// topicstats builds Pulsar's
// TopicStats, internal stats and their sums from snapshots for the admin
// API, /metrics and the console; a feature adds its part to them
// (geo-replication's replication section, compaction's internal fields)
// as a topicstats Source, found among Broker.Features.
//
// # Many topics
//
// A subscription's loop goroutine runs only while it has timers or
// queued work, consumers or not: idle, it exits; Do (a flow, an ack, a
// consumer joining) and Wake (new entries, with consumers connected)
// start it again, and Call runs its function inline (the caller owns the
// loop state meanwhile; the handover goes through Subscription.run, a
// leaf lock; package broker/dispatch), so an idle subscription holds no
// goroutine, nor does a live one whose consumers wait for messages. Its pending sets (and each
// consumer's) are dropped when emptied. Persistent topics idle (no producer,
// connected consumer, replicator, compaction or held send) for
// Config.IdleTopicUnloadTime are unloaded by package enforcement and
// reloaded on the next use with nothing lost, their cached topic-level
// policies dropped; the core tells it what keeps a topic loaded
// (Topic.IdleUnloadable, LastUsed; idleunload.go) and returns the memory
// a sweep of 10,000 or more freed to the operating system at once
// (ReleaseUnloaded). The console history (package topichistory) keeps
// an idle stretch as one run and samples counters without building
// stats (Topic.Counters). With
// HideTopicLevelMetrics, /metrics (package brokermetrics) sums topic
// metrics per namespace. docs/scale.md has the per-topic memory accounting.
//
// # Locking
//
// Lock order (docs/locking.md has the full table): topic.held (held
// sends) > topic.mu > topic.limits.mu, producer.mu. No topic lock is
// held while a TopicHook, PolicyObserver, topicstats Source or Lifecycle
// hook runs, so a feature may wait there for goroutines of its own that
// call the topic (georep's replicators). Broker.mu, conn.mu,
// the outbound queue lock, topic.last, a subscription's run lock
// (package broker/dispatch) and the policy
// cache lock are leaves (nothing is taken and no topic or subscription method is called
// while holding them). The subscription loop never takes topic.held,
// topic.mu or Broker.mu, so code holding those may call a subscription
// (Call/Do). Call returns only once f ran, or once the loop exited
// without running it. Managed-ledger callbacks take only leaf locks
// (producer.mu, topic.last and the outbound queue lock).
//
// # Deviations and limits
//
//   - Deduplication state (last sequence id per producer name) is kept in
//     memory and rebuilt at topic load by the DedupRecovery feature
//     (package dedupsnap: Pulsar's snapshots in the pulsar.dedup cursor),
//     or without one from the last DedupRecoveryEntries entries; when
//     deduplication is turned on for a loaded topic, the feature raises
//     it (Topic.RaiseDedup).
//   - Config.DispatchBatch and Config.MaxPartitionsPerTopic change at
//     run time (SetDispatchBatch, SetMaxPartitionsPerTopic: Pulsar's
//     dynamic dispatcherMaxReadBatchSize and
//     maxNumPartitionsPerPartitionedTopic, wired by the stack to package
//     dynconfig); the rest of Config is fixed once New returns.
//   - Topic compaction and read_compacted: package compact (a feature),
//     docs/compaction.md. Schemas: package schemareg (a feature),
//     docs/schema.md.
//   - Chunked messages are kept whole per consumer on
//     Shared and Key_Shared subscriptions (package broker/dispatch,
//     chunk.go; docs/chunking.md).
package broker
