package broker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/broker/dispatch"
	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// The limits of a topic, counted or checked on the core's hot paths.
//
// A topic's effective policy (policy.Resolved: its topic-level policies
// over its namespace's over the broker defaults, policy.go) is a snapshot
// the topic holds and swaps whole; the core reads from it what it does
// itself: deduplication, delayed delivery and unacknowledged messages
// (the last two handed to its subscriptions, subscription.go).
//
// The limits are a feature's (package enforcement), behind two
// extension points. An Admission is asked before topics are created and
// before a producer, consumer, subscription or SEND is admitted (max
// producers, consumers and subscriptions, required encryption, message
// size...); the subscription count is passed under the lock that
// creates subscriptions, so a bound holds against concurrent
// SUBSCRIBEs. Limits, put on a topic as one value (Topic.SetLimits) and
// read with one atomic load, are what the core counts its work against:
// rate limiters for publish, dispatch (the topic's, each
// subscription's, each replicator's) and subscribe, and a Quota that
// admits producers and SENDs (backlog quotas; a SEND it holds waits in
// the topic's held sends, held.go). A topic without Limits has none of
// these.

// Limiter is a rate limit that work is counted against after it is done
// (package ratelimit: token buckets that go into debt), declared by
// package broker/dispatch, whose subscriptions count against it.
type Limiter = dispatch.Limiter

// Limits are the limits a feature puts on one topic (Topic.SetLimits).
// A nil field is no limit. The core reads them with one atomic load; the
// functions run on the core's goroutines (under the topic's limits lock
// for Subscription) and must be quick and take no topic lock.
type Limits struct {
	// Publish limits the topic's SENDs: a SEND that leaves it in debt
	// pauses its connection's reads for as long as the debt lasts (every
	// producer on that connection waits; TCP pushes back on the client).
	Publish Limiter
	// Dispatch limits the entries the topic's subscriptions dispatch,
	// all together: a subscription finding it (or its own) in debt stops
	// dispatching until a timer.
	Dispatch Limiter
	// Subscription returns the dispatch limiter of one subscription (nil:
	// none). It is asked when a subscription is created and, for each
	// subscription, when the limits are set.
	Subscription func(name string) Limiter
	// Replicator returns the dispatch limiter of the replicator to one
	// remote cluster (nil: none), asked when a replicator starts and when
	// the limits change.
	Replicator func(remote string) Limiter
	// Subscribe reports whether a consumer identity (consumer name @
	// client host) may subscribe now, counting it; false refuses the
	// SUBSCRIBE with TooManyRequests.
	Subscribe func(identity string) bool
	// Quota admits producers and SENDs.
	Quota Quota
}

// Quota admits producers and SENDs on one topic (the backlog quotas of
// package enforcement). Its methods run on connection readers (and the
// goroutine releasing held sends) and may call a subscription (Do, Call)
// and read storage; they must not take topic locks.
type Quota interface {
	// AdmitProducer runs for each PRODUCER on the topic: nil admits,
	// else the PRODUCER is refused with its code and message.
	AdmitProducer() *SendError
	// AdmitSend runs for each SEND the topic would publish now (none
	// held before it), under the topic's held-sends lock: hold keeps the
	// SEND, in order with those after it, until Topic.ReleaseHeld finds
	// the quota admitting again; a refusal disconnects the SEND's
	// producer (CLOSE_PRODUCER) and answers the SEND with it. It runs
	// again, for the oldest held SEND, on each Topic.ReleaseHeld: there
	// only hold keeps the held SENDs.
	AdmitSend() (hold bool, refuse *SendError)
}

// PolicyWatcher keeps the loaded topics' policies current as the policy
// store changes (package enforcement watches it and calls
// Topic.RefreshPolicy). A topic resolves its policy when it loads, before
// its managed ledger opens; a change announced while it loads may pass it
// by, so the core reads PolicyVersion before and after the load and, if
// it moved, calls RefreshPolicy once the topic is visible. At most one
// feature is a PolicyWatcher.
type PolicyWatcher interface {
	// PolicyVersion counts the changes announced so far; it moves before
	// the watcher lists the loaded topics to refresh.
	PolicyVersion() uint64
	// RefreshPolicy re-resolves and applies t's policy (as on a change),
	// on the loading goroutine, no lock held; it reports whether t
	// unloaded to reopen (Topic.RefreshPolicy), and the core then loads
	// it again.
	RefreshPolicy(t Topic) (unloaded bool)
}

// CursorObserver hears that an admin operation moved cursors of a topic
// (skip, expire, reset, a subscription created or deleted), after it,
// on the request's goroutine: a backlog quota may admit again.
type CursorObserver interface {
	CursorsMoved(t Topic)
}

// topicLimits are the Limits of a topic: cur is swapped whole under mu,
// which also orders the installs of the subscriptions' limiters (taken
// after topic.mu, never before it).
type topicLimits struct {
	mu  sync.Mutex
	cur atomic.Pointer[Limits]
	// publishLimited counts the SENDs that paused their connection
	// (publishRateLimitedTimes).
	publishLimited atomic.Int64
}

// Limits returns the limits a feature put on the topic (nil: none).
func (v Topic) Limits() *Limits { return v.t.limits.cur.Load() }

// SetLimits puts l on the topic (nil: none), replacing its limits whole,
// and installs the dispatch limiters on its subscriptions (replicators
// ask for theirs on their next read).
func (v Topic) SetLimits(l *Limits) {
	t := v.t
	t.limits.mu.Lock()
	defer t.limits.mu.Unlock()
	t.limits.cur.Store(l)
	for _, s := range *t.subList.Load() {
		installSubLimits(s, l)
	}
}

// install installs the topic's dispatch limiters on s, a new
// subscription (published in the topic's subscription list first, so
// that a SetLimits meanwhile reaches it too).
func (l *topicLimits) install(s *subscription) {
	l.mu.Lock()
	defer l.mu.Unlock()
	installSubLimits(s, l.cur.Load())
}

// installSubLimits installs l's dispatch limiters on s (t.limits.mu
// held) and wakes it: a limit that went away lets it dispatch.
func installSubLimits(s *subscription, l *Limits) {
	var topic, sub Limiter
	if l != nil {
		topic = l.Dispatch
		if l.Subscription != nil {
			sub = l.Subscription(s.Name())
		}
	}
	s.Limit(topic, sub)
}

// publishThrottle counts a SEND of n messages and b bytes on the topic's
// publish limiter and returns how long its connection must stop reading
// (0: not at all).
func (l *topicLimits) publishThrottle(n, b int) time.Duration {
	cur := l.cur.Load()
	if cur == nil || cur.Publish == nil {
		return 0
	}
	d := cur.Publish.Take(time.Now(), n, b)
	if d > 0 {
		l.publishLimited.Add(1)
	}
	return d
}

// quota returns the topic's Quota (nil: none).
func (l *topicLimits) quota() Quota {
	if cur := l.cur.Load(); cur != nil {
		return cur.Quota
	}
	return nil
}

// allowSubscribe reports whether identity may subscribe now.
func (l *topicLimits) allowSubscribe(identity string) bool {
	cur := l.cur.Load()
	return cur == nil || cur.Subscribe == nil || cur.Subscribe(identity)
}

// Admission admits or refuses, by the topics' policies, what the core is
// about to create, attach or publish (package enforcement: topics per
// namespace, producers and consumers per topic, subscriptions per topic,
// consumers per subscription, auto subscription creation, required
// encryption, message size, delivery delay). Every registered Admission
// is asked, in registration order; the first refusal is answered to the
// client and nothing is created, attached or stored. Without one the
// core admits everything. No method may take a topic lock itself;
// AdmitProducer and AdmitConsumer may count through Topic.ProducerCount
// and Topic.ConsumerCount, AdmitSubscription and AdmitSubscriber must not
// call the topic or its subscriptions. doc.go ("Extension points") has
// the goroutines and locks.
type Admission interface {
	// AdmitTopics runs before topics are created (the admin API, a
	// lookup's, a producer's or a consumer's auto-creation); a refusal
	// wrapping ErrTooManyTopics is answered as Pulsar answers it, any
	// other error fails the creation with it.
	AdmitTopics(ctx context.Context, nt NewTopics) error
	// AdmitProducer runs for each PRODUCER cmd on t, once t is loaded.
	AdmitProducer(t Topic, cmd *pb.CommandProducer) *SendError
	// AdmitConsumer runs for each SUBSCRIBE cmd on t, once t is loaded.
	AdmitConsumer(t Topic, cmd *pb.CommandSubscribe) *SendError
	// AdmitSubscription runs before a SUBSCRIBE creates a subscription on
	// t, which has subs subscriptions, under the lock of t's
	// subscription table: no subscription is created or removed until it
	// returns, so a bound on subs holds against concurrent SUBSCRIBEs.
	AdmitSubscription(t Topic, subs int, durable bool) *SendError
	// AdmitSubscriber runs on a subscription's loop before a consumer
	// joins it; consumers are those attached to it.
	AdmitSubscriber(t Topic, consumers int) *SendError
	// AdmitSend runs for each SEND of e on t before the SendInterceptors;
	// size counts its metadata and payload, replicator tells a
	// replicator's producer (ReplicatorOrigin).
	AdmitSend(t Topic, e *Entry, size int, replicator bool) *SendError
}

// NewTopics are topics about to be created (Admission.AdmitTopics): Name
// itself (N 1; a partition of a partitioned topic that already exists,
// being loaded, is one too) or the N partitions of the partitioned topic
// Name.
type NewTopics struct {
	Name pulsarproto.TopicName
	N    int
	// Policy resolves Name's effective policy (a metadata read unless
	// cached).
	Policy func() *policy.Resolved
}

// ErrTooManyTopics is an Admission's refusal of topics over the
// namespace's limit (Pulsar's text): the admin API answers 412, a
// lookup, producer or consumer NotAllowedError.
var ErrTooManyTopics = reason(ErrPreconditionFailed, "Exceed maximum number of topics in namespace.")

// isTooManyTopics reports a refusal wrapping ErrTooManyTopics.
func isTooManyTopics(err error) bool { return errors.Is(err, ErrTooManyTopics) }

// admitTopics asks the Admissions about creating n topics named tn,
// whose policy resolve returns.
func (x *extensions) admitTopics(ctx context.Context, tn topicName, n int, resolve func(topicName) *policy.Resolved) error {
	if len(x.admission) == 0 {
		return nil
	}
	nt := NewTopics{Name: tn, N: n, Policy: func() *policy.Resolved { return resolve(tn) }}
	for _, a := range x.admission {
		if err := a.AdmitTopics(ctx, nt); err != nil {
			return err
		}
	}
	return nil
}

// admit returns the first refusal of ask by the Admissions (nil: all
// admit).
func (x *extensions) admit(ask func(Admission) *SendError) *SendError {
	for _, a := range x.admission {
		if e := ask(a); e != nil {
			return e
		}
	}
	return nil
}

// ProducerCount returns the producers attached to the topic or waiting
// for its exclusive access.
func (v Topic) ProducerCount() int {
	t := v.t
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.mu.producers) + len(t.mu.waiting)
}

// ConsumerCount returns the consumers attached to the topic's
// subscriptions (a call on each subscription's loop).
func (v Topic) ConsumerCount() int {
	n := 0
	for _, s := range *v.t.subList.Load() {
		s.Call(func() { n += s.Consumers() })
	}
	return n
}

// topicPolicy is a topic's effective policy, swapped whole when it is
// resolved again (policy.go); its methods are what the topic's
// subscriptions read from it.
type topicPolicy struct {
	atomic.Pointer[policy.Resolved]
}

// unackedLimits returns the topic's maxUnackedMessagesPerConsumer and
// ...PerSubscription (0: unlimited) for its subscriptions.
func (p *topicPolicy) unackedLimits() (perConsumer, perSub int) {
	if r := p.Load(); r != nil {
		return r.MaxUnackedPerConsumer, r.MaxUnackedPerSubscription
	}
	return 0, 0
}

// delayActive reports whether the topic's delayed-delivery policy is
// active for its subscriptions: inactive, deliverAt is ignored and
// messages go out at once; active, a Shared or Key_Shared subscription
// holds a message until deliverAt, never earlier (pulsar-client-go's
// suite requires a 3 s delay to last 3 s against Pulsar's test broker; a
// non-strict tick that releases a message a tick early failed it).
func (p *topicPolicy) delayActive() bool {
	if r := p.Load(); r != nil {
		return r.DelayedDelivery.Active
	}
	return true
}

// RefreshPolicy resolves the topic's policy again and applies what the
// core derives from it: a changed retention or persistence reopens the
// managed ledger (the topic unloads and reports true; clients
// reconnect), a changed unacked limit re-evaluates dispatch, offload and
// replication follow the new policy. Storage and metadata I/O; no lock
// held.
func (v Topic) RefreshPolicy() (unloaded bool) { return v.t.b.refreshPolicy(v.t) }

// PublishRateIn returns the topic's publish rate in the last stats window
// (messages and bytes per second).
func (v Topic) PublishRateIn() (msgs, bytes float64) {
	r := v.t.inWin.Rates()
	return r[dispatch.WinMsgs], r[dispatch.WinBytes]
}

// InUse reports whether the topic has producers or connected consumers.
func (v Topic) InUse() bool { return topicInUse(v.t) }

// Owned reports whether this broker still serves the topic.
func (v Topic) Owned() bool { return v.t.b.cluster.owns(v.t) }
