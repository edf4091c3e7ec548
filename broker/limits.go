package broker

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// The limits the core enforces on its hot paths.
//
// A topic's effective policy (policy.Resolved: its topic-level policies
// over its namespace's over the broker defaults, policy.go) is a snapshot
// the topic holds and swaps whole. PRODUCER, SUBSCRIBE and SEND read it
// with one atomic load for the checks the core makes itself: producers
// and consumers per topic, consumers per subscription, required
// encryption, deduplication, and (subscription.go) unacknowledged
// messages.
//
// The other limits are a feature's (package enforcement): it puts them on
// a topic as one Limits value (Topic.SetLimits), read with one atomic
// load as well, and the core counts its work against them: rate limiters
// for publish, dispatch (the topic's, each subscription's, each
// replicator's) and subscribe, and a Quota that admits producers and
// SENDs (backlog quotas; a SEND it holds waits in the topic's held sends,
// held.go). A topic without Limits has none of these.

// Limiter is a rate limit that work is counted against after it is done
// (package ratelimit: token buckets that go into debt). It must be safe
// for concurrent use and quick: the core calls it on its hot paths.
type Limiter interface {
	// Take counts msgs messages of size bytes done at now and returns
	// how long until the limit allows more (0: now).
	Take(now time.Time, msgs, bytes int) time.Duration
	// Wait returns how long until one more message may go (0: now).
	Wait(now time.Time) time.Duration
	// Budget returns how many messages may go now (math.MaxInt: no
	// message limit).
	Budget(now time.Time) int
}

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

// subLimits are what a subscription's dispatch counts against: its
// topic's limiter and its own.
type subLimits struct {
	topic, sub Limiter
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
	var sl subLimits
	if l != nil {
		sl.topic = l.Dispatch
		if l.Subscription != nil {
			sl.sub = l.Subscription(s.name)
		}
	}
	if sl.topic == nil && sl.sub == nil {
		s.limits.Store(nil)
	} else {
		s.limits.Store(&sl)
	}
	s.wake()
}

// take, wait and budget ask a limiter that may be nil (no limit).
func take(l Limiter, now time.Time, msgs, bytes int) time.Duration {
	if l == nil {
		return 0
	}
	return l.Take(now, msgs, bytes)
}

func wait(l Limiter, now time.Time) time.Duration {
	if l == nil {
		return 0
	}
	return l.Wait(now)
}

func budget(l Limiter, now time.Time) int {
	if l == nil {
		return math.MaxInt
	}
	return l.Budget(now)
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

// Refusals of the checks below, as Pulsar words them.
const (
	msgMustBeEncrypted       = "Messages must be encrypted"
	msgMaxConsumersPerSubReg = "Subscription reached max consumers limit"
)

// admitProducer refuses a new producer on t at the max-producers limit
// or when its Quota refuses it.
func (t *topic) admitProducer() (int32, string, bool) {
	if m := t.pol.Load().MaxProducers; m > 0 {
		t.mu.Lock()
		n := len(t.mu.producers) + len(t.mu.waiting)
		t.mu.Unlock()
		if n >= m {
			return codeProducerBusy, fmt.Sprintf("Topic '%s' reached max producers limit", t.full), false
		}
	}
	if q := t.limits.quota(); q != nil {
		if e := q.AdmitProducer(); e != nil {
			return int32(e.Code), e.Msg, false
		}
	}
	return 0, "", true
}

// admitConsumer refuses a new consumer on t at the max-consumers limit.
func (t *topic) admitConsumer() (int32, string, bool) {
	m := t.pol.Load().MaxConsumers
	if m <= 0 {
		return 0, "", true
	}
	n := 0
	for _, s := range *t.subList.Load() {
		s.call(func() { n += len(s.consumers) })
	}
	if n >= m {
		return codeConsumerBusy, fmt.Sprintf("Topic '%s' reached max consumers limit", t.full), false
	}
	return 0, "", true
}

// subConsumersFull reports whether s already holds the most consumers
// pol's maxConsumersPerSubscription allows (on s's loop).
func subConsumersFull(pol *policy.Resolved, s *subscription) bool {
	m := pol.MaxConsumersPerSubscription
	return m > 0 && len(s.consumers) >= m
}

// refuseUnencrypted reports whether the SEND of entry by p must be
// refused because t's namespace requires encryption and the entry's
// metadata carries no encryption keys. Replicator producers are exempt
// (the origin cluster checked), as in Pulsar.
func refuseUnencrypted(p *producer, e *Entry) bool {
	if p.remote != "" || !p.topic.pol.Load().EncryptionRequired {
		return false
	}
	// Pulsar counts encryption_keys (an encryption_algo alone does not
	// make a message encrypted).
	md := e.Meta()
	return md == nil || md.EncryptionKeys == 0
}

// refusesUnencryptedProducer reports whether a topic under pol refuses
// the producer m at creation: its namespace requires encryption and m
// declares itself unencrypted (CommandProducer.encrypted false, as the
// Java and C++ clients send it), as Pulsar refuses it. An unset flag is
// let through (pulsar-client-go never sets it, even when it encrypts);
// its SENDs are checked one by one (refuseUnencrypted). Replicators are
// exempt.
func refusesUnencryptedProducer(pol *policy.Resolved, m *pb.CommandProducer) bool {
	return pol.EncryptionRequired && m.Encrypted != nil && !m.GetEncrypted() &&
		ReplicatorOrigin(m.GetProducerName()) == ""
}

// dedupEnabled reports whether t deduplicates (broker-wide or by policy).
func (t *topic) dedupEnabled() bool {
	return t.b.cfg.Deduplication || t.pol.Load().Deduplication
}

// AppliedPolicy returns the topic's effective policy now (never nil; never
// modified: a change swaps it whole).
func (v Topic) AppliedPolicy() *policy.Resolved { return v.t.pol.Load() }

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
	r := v.t.inWin.get()
	return r[winMsgs], r[winBytes]
}

// InUse reports whether the topic has producers or connected consumers.
func (v Topic) InUse() bool { return topicInUse(v.t) }

// Owned reports whether this broker still serves the topic.
func (v Topic) Owned() bool { return v.t.b.owns(v.t) }
