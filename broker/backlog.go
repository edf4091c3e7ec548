package broker

import (
	"context"
	"time"

	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/policy"
)

// Backlog operations: what the admin API's skip and expire do to a
// durable subscription, and what a feature's backlog quotas and message
// TTL do through the views below.

// Backlog returns the subscription's entries and messages not yet
// acknowledged. Safe from any goroutine.
func (v Subscription) Backlog() (entries, messages int64) { return v.s.Cursor().Backlog() }

// Durable reports whether the subscription's cursor persists.
func (v Subscription) Durable() bool { return v.s.Cursor().Durable() }

// SystemSubscription reports whether s is a subscription a feature keeps
// for its own use (SystemSubscriptions): message TTL and backlog quotas
// leave it alone, and its backlog is no consumer's.
func (v Topic) SystemSubscription(s Subscription) bool { return v.t.b.ext.system[s.s.Name()] }

// Consumers returns the number of consumers attached.
func (l SubLoop) Consumers() int { return l.s.Consumers() }

// LastActive returns when the subscription was last active: created, a
// consumer attached or detached, an ack, a dispatch.
func (l SubLoop) LastActive() time.Time { return l.s.LastActive() }

// SkipEntries skips n entries of a durable subscription's backlog (the
// slowest cursor's, for a consumer_backlog_eviction quota).
func (v Topic) SkipEntries(s Subscription, n int64) error {
	ca, ok := s.s.Cursor().(*storage.LedgerCursor)
	if !ok {
		return reason(ErrNotAllowed, "operation not supported on this subscription")
	}
	var err error
	s.s.Call(func() { err = ca.Skip(n) })
	return err
}

// ExpireMessages acknowledges the messages of s published more than secs
// ago (message TTL), counted in its stats as expired.
func (v Topic) ExpireMessages(s Subscription, secs int64) error {
	return expireBacklog(s.s, secs, v.t.b.ext.system)
}

// expireBacklog acknowledges the messages of s published more than secs
// ago, unless s is one of the system subscriptions.
func expireBacklog(s *subscription, secs int64, system map[string]bool) error {
	ca, ok := s.Cursor().(*storage.LedgerCursor)
	if !ok || system[s.Name()] {
		// Expiring a feature's cursor (the compactor's) would let data
		// not yet compacted be trimmed.
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	cutoff, some := policy.ExpiryCutoff(time.Now().UnixMilli(), secs)
	if !some {
		return nil
	}
	p, found, err := ca.FirstPublishedAt(ctx, cutoff)
	if err != nil {
		return err
	}
	s.Call(func() {
		_, before := s.Cursor().Backlog()
		defer func() {
			if _, after := s.Cursor().Backlog(); after < before {
				s.Expired(before - after)
			}
		}()
		err = ca.AckBefore(p, found)
	})
	return err
}

// EarliestInBacklog returns the publish time (unix ms) of the first
// unacknowledged message of s, 0 when s has none or it cannot be read (a
// storage read).
func (v Topic) EarliestInBacklog(s Subscription) int64 { return earliestInBacklog(v.t, s.s) }

// cursorsMoved tells the CursorObservers that an admin operation moved
// cursors of t.
func (b *Broker) cursorsMoved(t *topic) {
	for _, o := range b.ext.cursors {
		o.CursorsMoved(Topic{t})
	}
}
