package broker

import (
	"context"
	"time"

	"github.com/magnetar-mq/magnetar/policy"
)

// Inactive topic deletion and subscription expiry (Pulsar's
// inactive_topic_policies and subscription_expiration_time_minutes).
//
// Every Config.DeleteInactiveTopicsFrequency each loaded topic whose
// resolved InactiveTopic policy has deleteWhileInactive is checked. It is
// active while it has producers or connected consumers, and also
//   - delete_when_no_subscriptions: while it has subscriptions;
//   - delete_when_subscriptions_caught_up: while a subscription has a
//     backlog.
// A topic inactive for maxInactiveDurationSeconds (measured from the last
// check that found it active, or its load) is deleted like DeleteTopic
// without force, unless its retention policy still keeps its data (an
// infinite retention time, or a time not yet past since it was last
// active). Only loaded topics are checked, as in Pulsar; a partition is
// deleted alone, the partitioned topic's metadata stays.
//
// Every Config.SubscriptionExpiryCheckInterval each durable subscription
// without consumers whose last activity (consumer attached or detached,
// ack, dispatch) is older than the resolved
// SubscriptionExpirationMinutes (> 0) is deleted.

// inactivityLoop runs both checks until the broker closes.
func (b *Broker) inactivityLoop() {
	defer b.wg.Done()
	topics := time.NewTicker(b.cfg.DeleteInactiveTopicsFrequency)
	defer topics.Stop()
	subs := time.NewTicker(b.cfg.SubscriptionExpiryCheckInterval)
	defer subs.Stop()
	for {
		select {
		case <-b.done:
			return
		case now := <-topics.C:
			for t := range b.everyLoaded("") {
				b.checkInactive(t, now)
			}
		case now := <-subs.C:
			for t := range b.everyLoaded("") {
				b.expireSubscriptions(t, now)
			}
		}
	}
}

// topicActive reports whether t counts as active under mode.
func topicActive(t *topic, mode string) bool {
	if topicInUse(t) {
		return true
	}
	subs := *t.subList.Load()
	if mode != policy.DeleteWhenSubscriptionsCaughtUp {
		return len(subs) > 0
	}
	for _, s := range subs {
		if _, msgs := s.cur.Backlog(); msgs > 0 {
			return true
		}
	}
	return false
}

// checkInactive deletes t if it has been inactive long enough.
func (b *Broker) checkInactive(t *topic, now time.Time) {
	pol := t.pol.Load()
	it := pol.InactiveTopic
	if !it.DeleteWhileInactive || t.isClosed() || !b.owns(t) {
		t.lastActive.Store(now.UnixNano())
		return
	}
	if topicActive(t, it.InactiveTopicDeleteMode) {
		t.lastActive.Store(now.UnixNano())
		return
	}
	idle := now.Sub(time.Unix(0, t.lastActive.Load()))
	if idle < policy.Seconds(int64(it.MaxInactiveDurationSeconds)) {
		return
	}
	if r := pol.Retention; r != nil && t.persistent() && r.RetentionTimeInMinutes != 0 {
		if entries, _ := t.ml.Size(); entries > 0 && (r.Time() < 0 || idle < r.Time()) {
			return // retention still keeps its data
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	if err := b.DeleteTopic(ctx, t.full, false); err != nil {
		b.log.Info("inactive topic not deleted", "topic", t.full, "err", err)
		return
	}
	b.log.Info("deleted inactive topic", "topic", t.full, "inactive", idle.Round(time.Second))
}

// expireSubscriptions deletes the durable subscriptions of t that have
// had no consumer for the policy's expiration time.
func (b *Broker) expireSubscriptions(t *topic, now time.Time) {
	mins := t.pol.Load().SubscriptionExpirationMinutes
	if mins <= 0 || !t.persistent() || t.isClosed() || !b.owns(t) {
		return
	}
	limit := time.Duration(mins) * time.Minute
	for _, s := range *t.subList.Load() {
		if !s.cur.Durable() {
			continue
		}
		var idle bool
		s.call(func() {
			idle = len(s.consumers) == 0 && now.Sub(time.UnixMilli(s.lastActiveLocked())) >= limit
		})
		if !idle {
			continue
		}
		if err := t.deleteSubscription(s.name, false); err != nil {
			b.log.Info("expired subscription not deleted", "topic", t.full, "sub", s.name, "err", err)
			continue
		}
		b.log.Info("deleted expired subscription", "topic", t.full, "sub", s.name, "after", limit)
	}
}

// lastActiveLocked is the unix ms of the subscription's last activity.
func (s *subscription) lastActiveLocked() int64 {
	return max(s.created, s.lastAck, s.lastConsume, s.lastDetach)
}
