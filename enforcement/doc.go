// Package enforcement enforces the namespace and topic policies of a
// broker's topics over time, as a feature of the broker core (package
// broker's extension points): it keeps each loaded topic's effective
// policy current as the policy store changes, puts the limits it derives
// from it on the topic (broker.Limits: rate limiters and the backlog
// quotas), and runs the periodic checks (message TTL, backlog quotas,
// inactive topics, idle subscriptions), and unloads idle topics from
// memory. docs/policies.md has the rules.
//
// The Enforcer is also the core's Admission: it admits or refuses the
// topics, producers, consumers, subscriptions and SENDs the core is about
// to create, attach or publish, by the topic's policy (admit.go). The
// core counts its work against the Limits this package sets, and itself
// reads from a topic's policy only what it does (deduplication, delayed
// delivery, unacked messages); it resolves a topic's policy when the
// topic loads (package policy). Without this feature a broker keeps the
// policies it resolved at load and has no admission limits (topics per
// namespace, producers, consumers, subscriptions, required encryption,
// message size, delivery delay), rate limits, quotas, TTL or inactivity
// deletion. Wiring, before Start:
//
//	e, err := enforcement.Enable(b)
//
// # Policy changes
//
// The Enforcer subscribes to the broker's policy store (broker.Policies):
// a change to a namespace (or, with ns "", any) re-resolves its loaded
// topics (broker.Topic.RefreshPolicy: a changed retention or persistence
// reopens the topic), rebuilds their limits and checks them at once.
// Every checkInterval × refreshChecks (10 s) the store's cache is dropped
// and every topic re-resolved, which picks up writes made through other
// brokers. A topic loading while a change is announced refreshes itself
// once visible (broker.PolicyWatcher: PolicyVersion moves before the
// loaded topics are listed).
//
// # Backlog quotas and message TTL
//
// Checked on every SEND and PRODUCER of a topic whose policy has backlog
// quotas (broker.Quota), every checkInterval (1 s; Pulsar checks every
// few minutes) and after every admin cursor move
// (broker.CursorObserver):
//
//   - destination_storage bounds the largest durable subscription backlog
//     in bytes (entries × average entry size), message_age the age of the
//     oldest message after the slowest mark-delete. Subscriptions a
//     feature keeps for itself (the compaction cursor) do not count.
//   - producer_request_hold: the core holds SENDs in the topic's FIFO
//     until the backlog is under the limit (broker.Topic.ReleaseHeld, on
//     every check) and new producers are refused with
//     ProducerBlockedQuotaExceededError.
//   - producer_exception: the SEND's producer is disconnected and the
//     SEND refused; producers are refused with
//     ProducerBlockedQuotaExceededException.
//   - consumer_backlog_eviction: entries of the slowest cursor are
//     skipped (storage), or acknowledged by age (message_age).
//   - message TTL: every check, the cursors of the topic mark-delete the
//     entries published before now - TTL.
//
// # Rate limits
//
// Token buckets that go into debt (package ratelimit), built from the
// policy; a limiter whose setting did not change keeps its state when the
// policy changes.
//
//   - publish: per topic. A SEND that leaves the bucket in debt pauses
//     the reads of its connection for as long as the debt lasts (Pulsar
//     disables auto-read on the producer's channel), so every producer
//     on that connection waits and TCP pushes back on the client.
//   - dispatch: per topic (shared by its subscriptions), per subscription
//     and per replicator. A subscription in debt stops dispatching and
//     re-arms a timer for the moment its buckets are positive again. A
//     rate relative to the publish rate is re-based on the topic's
//     publish rate on every stats update (broker.TopicTicker).
//   - subscribe: per consumer identity (consumer name and client host)
//     and topic; a SUBSCRIBE over the limit is refused with
//     TooManyRequests. Identities idle for a period are forgotten.
//
// # Inactive topics and idle subscriptions
//
// Pulsar's inactive_topic_policies and
// subscription_expiration_time_minutes. Every
// Config.DeleteInactiveTopicsFrequency each loaded topic whose policy
// has deleteWhileInactive is checked. It is active while it has
// producers or connected consumers, and also
//
//   - delete_when_no_subscriptions: while it has subscriptions;
//   - delete_when_subscriptions_caught_up: while a subscription has a
//     backlog.
//
// A topic inactive for maxInactiveDurationSeconds (measured from the last
// check that found it active, or its load) is deleted like DeleteTopic
// without force, unless its retention policy still keeps its data (an
// infinite retention time, or a time not yet past since it was last
// active). Only loaded topics are checked, as in Pulsar; a partition is
// deleted alone, the partitioned topic's metadata stays.
//
// Every Config.SubscriptionExpiryCheckInterval each durable subscription
// without consumers whose last activity (consumer attached or detached,
// ack, dispatch) is older than the policy's SubscriptionExpirationMinutes
// (> 0) is deleted.
//
// # Idle topics
//
// A persistent topic nothing keeps loaded (broker.Topic.IdleUnloadable:
// no producer, connected consumer, held send, replicator or compaction)
// for Config.IdleTopicUnloadTime is unloaded, not deleted: it loads
// again on its next use with nothing lost (idle.go, docs/scale.md). The
// sweep runs every quarter of that time (1 s to 1 min), 64 unloads at a
// time; after 10,000 or more the broker returns the memory freed to the
// operating system (broker.Broker.ReleaseUnloaded).
//
// # Goroutines and state
//
// Two loops (checks, inactivity), and a third (idle topics) when
// Config.IdleTopicUnloadTime > 0, started by Start and stopped by Close;
// the policy store's notifications run on the writer's goroutine. The
// state of one topic (its limiters, when it was last active) is a
// broker.TopicSlot, built when the topic loads. A Quota runs on the
// SEND's connection reader under the topic's held-sends lock: it reads
// cursor backlogs, may read the oldest unacknowledged entry (message_age)
// and may skip entries of a subscription (eviction), never taking a
// topic lock.
package enforcement
