package enforcement

import (
	"context"
	"time"

	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/policy"
)

// inactivityLoop deletes inactive topics every topicsEvery and expired
// subscriptions every subsEvery until Close.
func (e *Enforcer) inactivityLoop(topicsEvery, subsEvery time.Duration) {
	defer e.wg.Done()
	topics := time.NewTicker(topicsEvery)
	defer topics.Stop()
	subs := time.NewTicker(subsEvery)
	defer subs.Stop()
	for {
		select {
		case <-e.done:
			return
		case d := <-e.inactiveEvery:
			topics.Reset(d)
		case now := <-topics.C:
			e.eachTopic(func(st *topicState) { e.checkInactive(st, now) })
		case now := <-subs.C:
			e.eachTopic(func(st *topicState) { e.expireSubscriptions(st.t, now) })
		}
	}
}

// SetInactiveTopicsFrequency changes how often inactive topics are
// looked for (Pulsar's brokerDeleteInactiveTopicsFrequencySeconds,
// dynamic); d <= 0 restores the broker's configured frequency. The next
// check is d from now.
func (e *Enforcer) SetInactiveTopicsFrequency(d time.Duration) {
	if d <= 0 {
		d = e.b.Config().DeleteInactiveTopicsFrequency
	}
	for { // the latest value wins over one not yet taken
		select {
		case e.inactiveEvery <- d:
			return
		default:
		}
		select {
		case <-e.inactiveEvery:
		default:
		}
	}
}

// active reports whether t counts as active under mode.
func active(t broker.Topic, mode string) bool {
	if t.InUse() {
		return true
	}
	subs := t.Subscriptions()
	if mode != policy.DeleteWhenSubscriptionsCaughtUp {
		return len(subs) > 0
	}
	for _, s := range subs {
		if _, msgs := s.Backlog(); msgs > 0 {
			return true
		}
	}
	return false
}

// checkInactive deletes the topic if it has been inactive long enough.
func (e *Enforcer) checkInactive(st *topicState, now time.Time) {
	t := st.t
	pol := t.EffectivePolicy()
	it := pol.InactiveTopic
	if !it.DeleteWhileInactive || t.Closed() || !t.Owned() || active(t, it.InactiveTopicDeleteMode) {
		st.lastActive.Store(now.UnixNano())
		return
	}
	idle := now.Sub(time.Unix(0, st.lastActive.Load()))
	if idle < policy.Seconds(int64(it.MaxInactiveDurationSeconds)) {
		return
	}
	if r := pol.Retention; r != nil && t.Persistent() && r.RetentionTimeInMinutes != 0 {
		if entries, _ := t.Ledger().Size(); entries > 0 && (r.Time() < 0 || idle < r.Time()) {
			return // retention still keeps its data
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	if err := e.b.Registry().DeleteTopic(ctx, t.Name(), false); err != nil {
		e.log.Info("inactive topic not deleted", "topic", t.Name(), "err", err)
		return
	}
	e.log.Info("deleted inactive topic", "topic", t.Name(), "inactive", idle.Round(time.Second))
}

// expireSubscriptions deletes the durable subscriptions of t that have
// had no consumer for the policy's expiration time.
func (e *Enforcer) expireSubscriptions(t broker.Topic, now time.Time) {
	mins := t.EffectivePolicy().SubscriptionExpirationMinutes
	if mins <= 0 || !t.Persistent() || t.Closed() || !t.Owned() {
		return
	}
	limit := time.Duration(mins) * time.Minute
	for _, s := range t.Subscriptions() {
		if !s.Durable() {
			continue
		}
		var idle bool
		s.Call(func(l broker.SubLoop) {
			idle = l.Consumers() == 0 && now.Sub(l.LastActive()) >= limit
		})
		if !idle || t.Closed() {
			continue
		}
		err := t.DeleteSubscription(s.Name(), false)
		t.CursorsMoved()
		if err != nil {
			e.log.Info("expired subscription not deleted", "topic", t.Name(), "sub", s.Name(), "err", err)
			continue
		}
		e.log.Info("deleted expired subscription", "topic", t.Name(), "sub", s.Name(), "after", limit)
	}
}
