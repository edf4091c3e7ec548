package broker

import (
	"context"
	"maps"
	"sync/atomic"

	"github.com/magnetar-mq/magnetar/broker/dispatch"
	"github.com/magnetar-mq/magnetar/broker/storage"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// SubType is a subscription type, with Pulsar's wire values (package
// broker/dispatch's Type).
type SubType = dispatch.Type

const (
	SubExclusive = dispatch.Exclusive
	SubShared    = dispatch.Shared
	SubFailover  = dispatch.Failover
	SubKeyShared = dispatch.KeyShared
)

// consumer is the core's short name for a subscription's consumer.
type consumer = dispatch.Consumer

// subscription is a topic's subscription: package broker/dispatch's
// Subscription (its loop, consumers and dispatch; embedded, one
// allocation) with what the core adds: the cursor's stored properties
// (the replicated flag) and the features (the dispatch's Hooks, the
// per-subscription slots).
type subscription struct {
	dispatch.Subscription
	// mc is the managed-ledger cursor behind the cursor (nil when not
	// durable), fixed at creation: other goroutines use it for cursor
	// properties.
	mc *mledger.Cursor
	// replicated is set by a SUBSCRIBE with
	// replicate_subscription_state, by the admin API or by the
	// geo-replication feature (persisted as a cursor property).
	replicated atomic.Bool
	// Features (extension.go): ext is the broker's (a persistent
	// topic's subscriptions only, nil otherwise: no dispatch filters, ack
	// hooks or replicated subscriptions), tv the topic's view for the
	// dispatch filters; slots are the features' values (SubSlot),
	// loop-owned.
	ext   *extensions
	tv    Topic
	slots []any
}

// newSubscription makes the subscription name of t over cur (see
// topic.addSubLocked).
func newSubscription(t *topic, name string, typ SubType, cur cursor) *subscription {
	s := &subscription{mc: durableCursor(cur)}
	if t.persistent() {
		s.tv, s.ext = Topic{t}, &t.b.ext
	}
	s.Init(dispatch.Config{
		Name: name, Topic: t.name.String(), Type: typ, Partition: t.name.PartitionIndex,
		Cursor: cur, Parse: dispatchEntryMeta, Batch: &t.b.tun.dispatchBatch,
		Unacked: t.pol.unackedLimits, DelayActive: t.pol.delayActive,
		ConsistentHashing: t.b.cfg.KeySharedUseConsistentHashing,
		Hooks:             s, Log: t.log,
	})
	s.loadReplicated()
	return s
}

// The features as the subscription's loop calls them (dispatch.Hooks).

// Filtering reports whether the broker has DispatchFilters for s.
func (s *subscription) Filtering() bool { return s.ext != nil && len(s.ext.filters) > 0 }

// Skip reports whether a DispatchFilter skips an entry.
func (s *subscription) Skip(md *pulsarproto.Metadata) bool {
	if s.ext == nil {
		return false
	}
	return skipEntry(s.ext.filters, s.tv, md)
}

// Hold reports whether an AckHook withholds an entry read for dispatch.
func (s *subscription) Hold(e *dispatch.Entry) bool {
	if s.ext == nil {
		return false
	}
	for _, h := range s.ext.acks {
		if h.HeldEntry(SubLoop{s}, Withheld{e}) {
			return true
		}
	}
	return false
}

// Skipped shows a replicated subscription's markers, and its mark-delete
// moving past what dispatch skipped, to the ReplicatedSubscriptions
// feature.
func (s *subscription) Skipped(marker int32, data []byte) {
	if r := s.replSubs(); r != nil {
		if marker != 0 {
			r.MarkerRead(SubLoop{s}, marker, data)
		}
		r.MarkDeleteMoved(SubLoop{s})
	}
}

// MarkDeleteMoved tells the ReplicatedSubscriptions feature that a
// replicated subscription's mark-delete position may have moved.
func (s *subscription) MarkDeleteMoved() {
	if r := s.replSubs(); r != nil {
		r.MarkDeleteMoved(SubLoop{s})
	}
}

// replSubs is the replicated-subscriptions feature when s is replicated,
// or nil.
func (s *subscription) replSubs() ReplicatedSubscriptions {
	if s.ext == nil || s.ext.replSubs == nil || !s.replicated.Load() {
		return nil
	}
	return s.ext.replSubs
}

// replicatedProperty is the cursor property that marks a replicated
// subscription ("1"), Pulsar's name for it: the flag survives restarts
// and ownership changes with the cursor.
const replicatedProperty = "pulsar.replicated.subscription"

// loadReplicated sets the replicated flag from the cursor's properties
// (a new subscription, or one loaded with its topic).
func (s *subscription) loadReplicated() {
	if mc := s.mc; mc != nil && mc.Properties()[replicatedProperty] == "1" {
		s.replicated.Store(true)
	}
}

// markReplicated sets the replicated flag and, when it changes a durable
// cursor's property, persists it before returning.
func (s *subscription) markReplicated(on bool) error {
	s.replicated.Store(on)
	mc := s.mc
	if mc == nil {
		return nil
	}
	props := mc.Properties()
	if (props[replicatedProperty] == "1") == on {
		return nil
	}
	next := maps.Clone(props)
	if next == nil {
		next = map[string]string{}
	}
	if on {
		next[replicatedProperty] = "1"
	} else {
		delete(next, replicatedProperty)
	}
	ctx, cancel := context.WithTimeout(context.Background(), storage.Timeout)
	defer cancel()
	if err := mc.SetProperties(ctx, next); err != nil {
		s.Logger().Warn("persist replicated subscription flag", "topic", s.TopicName(), "sub", s.Name(), "err", err)
		return err
	}
	return nil
}

// durableCursor returns the managed-ledger cursor behind c (nil for
// non-durable and non-persistent cursors).
func durableCursor(c cursor) *mledger.Cursor {
	switch x := c.(type) {
	case *storage.LedgerCursor:
		if x.Managed().IsDurable() {
			return x.Managed()
		}
	case interface{ Unwrap() storage.Cursor }: // a feature's view (read_compacted)
		return durableCursor(x.Unwrap())
	}
	return nil
}
