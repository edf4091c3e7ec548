package enforcement

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/broker"
)

// checkInterval is how often TTL expiry, backlog eviction and the release
// of held sends are evaluated (admin changes and admin cursor moves
// trigger an immediate check).
const checkInterval = time.Second

// refreshChecks: every this many checks the policy store's cache is
// dropped and every loaded topic re-resolved (writes made through other
// brokers).
const refreshChecks = 10

// requestTimeout bounds the metadata and storage work of one check.
const requestTimeout = 30 * time.Second

// Enforcer enforces the policies of one broker's topics (see the package
// doc). Create it with Enable; the broker starts and stops it.
type Enforcer struct {
	b      *broker.Broker
	log    *slog.Logger
	topics broker.TopicSlot[topicState]
	// version counts the policy changes announced (PolicyVersion).
	version atomic.Uint64
	// maxMessageSize is the broker's (Config.MaxMessageSize), for
	// AdmitSend.
	maxMessageSize int

	unsubscribe func()
	// inactiveEvery changes the period of the inactive-topic check.
	inactiveEvery chan time.Duration
	done          chan struct{}
	closeOnce     sync.Once
	wg            sync.WaitGroup
}

// topicState is the enforcement's state of one loaded topic, built when
// it loads.
type topicState struct {
	t broker.Topic
	// lastActive (unix ns) is when the inactivity check last found the
	// topic active, or its load (inactive.go).
	lastActive atomic.Int64
	rates      rates // rates.go
}

var (
	_ broker.TopicHook      = (*Enforcer)(nil)
	_ broker.TopicTicker    = (*Enforcer)(nil)
	_ broker.PolicyWatcher  = (*Enforcer)(nil)
	_ broker.CursorObserver = (*Enforcer)(nil)
	_ broker.Lifecycle      = (*Enforcer)(nil)
)

// Enable registers the enforcement on b (before Start).
func Enable(b *broker.Broker) (*Enforcer, error) {
	e := &Enforcer{b: b, log: b.Logger(), done: make(chan struct{}), maxMessageSize: b.Config().MaxMessageSize,
		inactiveEvery: make(chan time.Duration, 1)}
	e.topics = broker.NewTopicSlot[topicState](b)
	if err := b.Use(e); err != nil {
		return nil, err
	}
	return e, nil
}

// Name implements broker.Feature.
func (e *Enforcer) Name() string { return "policy enforcement" }

// Start implements broker.Lifecycle: it subscribes to the policy store
// and starts the periodic checks.
func (e *Enforcer) Start(context.Context) error {
	e.unsubscribe = e.b.Policies().Subscribe(e.policiesChanged)
	cfg := e.b.Config()
	e.wg.Add(2)
	go e.checkLoop()
	go e.inactivityLoop(cfg.DeleteInactiveTopicsFrequency, cfg.SubscriptionExpiryCheckInterval)
	if cfg.IdleTopicUnloadTime > 0 {
		e.wg.Add(1)
		go e.idleLoop(cfg.IdleTopicUnloadTime) // idle.go
	}
	return nil
}

// Close implements broker.Lifecycle: it stops the checks and the policy
// store subscription.
func (e *Enforcer) Close() {
	e.closeOnce.Do(func() {
		if e.unsubscribe != nil {
			e.unsubscribe()
		}
		close(e.done)
	})
	e.wg.Wait()
}

// LoadTopic implements broker.TopicHook: the topic's state, and its
// limits from the policy it loaded with.
func (e *Enforcer) LoadTopic(_ context.Context, t broker.Topic) error {
	st := &topicState{t: t}
	st.lastActive.Store(time.Now().UnixNano())
	e.topics.Set(t, st)
	e.apply(st)
	return nil
}

// CloseTopic implements broker.TopicHook (nothing to release).
func (e *Enforcer) CloseTopic(broker.Topic) {}

// TickTopic implements broker.TopicTicker: dispatch rates relative to
// the publish rate follow the topic's publish rate of the window that
// just closed.
func (e *Enforcer) TickTopic(t broker.Topic) {
	if st := e.topics.Get(t); st != nil {
		msgs, bytes := t.PublishRateIn()
		st.rates.rebase(time.Now(), msgs, bytes)
	}
}

// PolicyVersion implements broker.PolicyWatcher.
func (e *Enforcer) PolicyVersion() uint64 { return e.version.Load() }

// RefreshPolicy implements broker.PolicyWatcher: t's policy is resolved
// again and applied, its limits rebuilt and checked.
func (e *Enforcer) RefreshPolicy(t broker.Topic) (unloaded bool) {
	if t.RefreshPolicy() {
		return true
	}
	if st := e.topics.Get(t); st != nil {
		e.apply(st)
		e.check(st)
	}
	return false
}

// CursorsMoved implements broker.CursorObserver: a backlog quota may
// admit again.
func (e *Enforcer) CursorsMoved(t broker.Topic) {
	if st := e.topics.Get(t); st != nil {
		e.check(st)
	}
}

// policiesChanged is the policy store subscription: ns ("" for every
// namespace) changed.
func (e *Enforcer) policiesChanged(ns string) {
	// Moved before the loaded topics are listed: a topic that resolved
	// its policy before this change but is listed only after it finds
	// the version moved when its load completes and refreshes itself.
	e.version.Add(1)
	e.b.EachTopic(func(t broker.Topic) bool {
		if ns == "" || t.TopicName().NamespaceName() == ns {
			e.RefreshPolicy(t)
		}
		return true
	})
}

// apply puts the limits of the topic's policy on it.
func (e *Enforcer) apply(st *topicState) {
	t := st.t
	pol := t.EffectivePolicy()
	var q broker.Quota
	if t.Persistent() && len(pol.BacklogQuotas) > 0 {
		q = quota{t}
	}
	t.SetLimits(st.rates.update(pol, q))
}

// checkLoop runs the periodic checks until Close.
func (e *Enforcer) checkLoop() {
	defer e.wg.Done()
	tk := time.NewTicker(checkInterval)
	defer tk.Stop()
	for n := 1; ; n++ {
		select {
		case <-e.done:
			return
		case now := <-tk.C:
			if n%refreshChecks == 0 {
				e.b.Policies().Refresh() // re-resolves and checks every topic
				continue
			}
			e.eachTopic(func(st *topicState) {
				e.check(st)
				st.rates.prune(now, func() map[string]bool { return subscriptionNames(st.t) })
			})
		}
	}
}

// eachTopic calls fn with the state of every loaded topic.
func (e *Enforcer) eachTopic(fn func(*topicState)) {
	e.b.EachTopic(func(t broker.Topic) bool {
		if st := e.topics.Get(t); st != nil {
			fn(st)
		}
		return true
	})
}
