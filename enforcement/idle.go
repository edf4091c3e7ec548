package enforcement

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-mq/magnetar/broker"
)

// Idle topic unloading (brokerconf.Config.IdleTopicUnloadTime, the magnetar
// key topicUnloadIdleSeconds). Unlike inactive topic deletion
// (inactive.go) this deletes nothing: a persistent topic that has had no
// producer, no connected consumer, no replicator, no compaction and no
// held send for the idle time (broker.Topic.IdleUnloadable) is unloaded
// like an admin unload (its cursors are flushed and its managed ledger
// closed), and is loaded again by the next lookup, producer,
// subscription or admin call. Messages, cursors (mark-delete and
// individual acks, persisted by the managed ledger's close) and
// deduplication state (rebuilt on load) survive. A loaded topic holds a
// write handle per managed ledger and its subscriptions' state; an
// unloaded one holds nothing in memory, which is what lets a broker keep
// a million idle topics.
//
// One ticker walks the loaded topics (every IdleTopicUnloadTime/4,
// between 1 s and 1 min); idleness is measured from the last time a
// check, a load, or a producer or consumer detaching found the topic in
// use (broker.Topic.LastUsed).

// idleCheckInterval is how often the idle unloader looks at the topics
// when they may idle for limit.
func idleCheckInterval(limit time.Duration) time.Duration {
	return min(max(limit/4, time.Second), time.Minute)
}

// idleUnloadParallel bounds the unloads in flight: each closes a ledger
// (a metadata write), and concurrent writes share a commit.
const idleUnloadParallel = 64

// idleLoop runs UnloadIdle until Close.
func (e *Enforcer) idleLoop(limit time.Duration) {
	defer e.wg.Done()
	tk := time.NewTicker(idleCheckInterval(limit))
	defer tk.Stop()
	for {
		select {
		case <-e.done:
			return
		case now := <-tk.C:
			e.UnloadIdle(now, limit)
		}
	}
}

// UnloadIdle unloads the topics idle for limit at now, up to
// idleUnloadParallel at a time, and returns how many it unloaded; after
// a large sweep the broker hands the memory freed back to the operating
// system (broker.Broker.ReleaseUnloaded).
func (e *Enforcer) UnloadIdle(now time.Time, limit time.Duration) int {
	// The candidates are listed first: the release waits for the walks
	// over the topics, this one included.
	var idle []broker.Topic
	e.b.EachTopic(func(t broker.Topic) bool {
		if now.Sub(t.LastUsed()) >= limit {
			idle = append(idle, t)
		}
		return true
	})
	var n atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, idleUnloadParallel)
	for _, t := range idle {
		if e.closing() {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if !t.IdleUnloadable() {
				t.MarkUsed(now)
				return
			}
			if ok, _ := e.b.UnloadTopic(t.Name()); ok {
				n.Add(1)
				e.log.Debug("unloaded idle topic", "topic", t.Name())
			}
		}()
	}
	idle = nil // the release must not find them referenced here
	wg.Wait()
	u := int(n.Load())
	if !e.closing() {
		e.b.ReleaseUnloaded(u)
	}
	return u
}

// closing reports whether Close has begun.
func (e *Enforcer) closing() bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}
