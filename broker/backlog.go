package broker

import (
	"context"
	"time"

	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/policy"
)

// Backlog operations: what the admin API's skip and expire do to a
// durable subscription, and what a feature's backlog quotas and message
// TTL do through the views below.

// Backlog returns the subscription's entries and messages not yet
// acknowledged. Safe from any goroutine.
func (v Subscription) Backlog() (entries, messages int64) { return v.s.cur.Backlog() }

// Durable reports whether the subscription's cursor persists.
func (v Subscription) Durable() bool { return v.s.cur.Durable() }

// SystemSubscription reports whether s is a subscription a feature keeps
// for its own use (SystemSubscriptions): message TTL and backlog quotas
// leave it alone, and its backlog is no consumer's.
func (v Topic) SystemSubscription(s Subscription) bool { return v.t.b.ext.system[s.s.name] }

// Consumers returns the number of consumers attached.
func (l SubLoop) Consumers() int { return len(l.s.consumers) }

// LastActive returns when the subscription was last active: created, a
// consumer attached or detached, an ack, a dispatch.
func (l SubLoop) LastActive() time.Time {
	s := l.s
	return time.UnixMilli(max(s.created, s.lastAck, s.lastConsume, s.lastDetach))
}

// SkipEntries skips n entries of a durable subscription's backlog (the
// slowest cursor's, for a consumer_backlog_eviction quota).
func (v Topic) SkipEntries(s Subscription, n int64) error {
	ca, ok := s.s.cur.(*storage.LedgerCursor)
	if !ok {
		return reason(ErrNotAllowed, "operation not supported on this subscription")
	}
	return skipBacklog(s.s, ca, n)
}

// skipBacklog skips n entries of s's backlog (n < 0: all of it).
func skipBacklog(s *subscription, ca *storage.LedgerCursor, n int64) error {
	var err error
	s.call(func() {
		if n < 0 {
			err = ca.Managed().ClearBacklog()
		} else {
			err = ca.Managed().SkipEntries(n)
		}
	})
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
	ca, ok := s.cur.(*storage.LedgerCursor)
	if !ok || system[s.name] {
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
	p, found, err := ca.Ledger().FindByPublishTime(ctx, cutoff, storage.PublishTime)
	if err != nil {
		return err
	}
	s.call(func() {
		_, before := s.cur.Backlog()
		defer func() {
			if _, after := s.cur.Backlog(); after < before {
				s.expiredN.Add(before - after)
				s.lastExpire.Store(time.Now().UnixMilli())
			}
		}()
		if !found {
			err = ca.Managed().ClearBacklog()
			return
		}
		prev, ok := positionBefore(ca.Ledger(), p)
		if ok && ca.Managed().MarkDeletePosition().Less(prev) {
			err = ca.Managed().MarkDelete(prev)
		}
	})
	return err
}

// positionBefore returns the entry before p in ml.
func positionBefore(ml *mledger.ManagedLedger, p mledger.Position) (mledger.Position, bool) {
	if p.EntryID > 0 {
		return mledger.Position{LedgerID: p.LedgerID, EntryID: p.EntryID - 1}, true
	}
	var prev mledger.Position
	ok := false
	for _, l := range ml.Stats().Ledgers {
		if l.LedgerID >= p.LedgerID {
			break
		}
		if l.Entries > 0 {
			prev, ok = mledger.Position{LedgerID: l.LedgerID, EntryID: l.Entries - 1}, true
		}
	}
	return prev, ok
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
