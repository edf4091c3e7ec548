package broker

import (
	"runtime/debug"
	"sync/atomic"
	"time"
)

// Idle topic unloading is a feature (package enforcement: a persistent
// topic idle for Config.IdleTopicUnloadTime is unloaded, and loaded again
// on its next use with nothing lost). The core keeps what its own paths
// touch: when a topic was last found in use (a load, a producer or
// consumer detaching), whether anything but idleness keeps it loaded
// (Topic.IdleUnloadable: producers, connected consumers, held sends, a
// TopicPinner), and the release of the memory a large sweep freed
// (Broker.ReleaseUnloaded, which waits for the walks over the loaded
// topics in flight).

// useClock is when a topic was last found in use (unix ns).
type useClock struct{ ns atomic.Int64 }

// mark records that the topic was found in use at now.
func (u *useClock) mark(now time.Time) { u.ns.Store(now.UnixNano()) }

// LastUsed returns when the topic was last found in use: loaded, a
// producer or consumer detaching, or a MarkUsed.
func (v Topic) LastUsed() time.Time { return time.Unix(0, v.t.lastUsed.ns.Load()) }

// MarkUsed records that the topic was found in use at now.
func (v Topic) MarkUsed(now time.Time) { v.t.lastUsed.mark(now) }

// IdleUnloadable reports whether nothing but idleness keeps the topic
// loaded: it is persistent, open, owned, and has no producer (attached or
// waiting), connected consumer or held send, and no TopicPinner pins it
// (a compaction, replicators).
func (v Topic) IdleUnloadable() bool {
	t := v.t
	if !t.persistent() || t.isClosed() || !t.b.cluster.owns(t) {
		return false
	}
	if t.held.n.Load() > 0 {
		return false
	}
	for _, p := range t.b.ext.pinners {
		if p.Pinned(v) {
			return false
		}
	}
	t.mu.Lock()
	busy := len(t.mu.producers) > 0 || len(t.mu.waiting) > 0
	t.mu.Unlock()
	return !busy && !topicInUse(t)
}

// ReleaseAfterUnload is how many topics one sweep must unload for
// ReleaseUnloaded to hand the memory they held back to the operating
// system at once (debug.FreeOSMemory: a full collection, then every free
// page released). The runtime would return it only gradually (its
// background scavenger is paced to a small share of a CPU), and until
// then the resident set counts it: in TestScaleTopicsMemory, right after
// a collection, 322 MiB of free heap kept from the OS after 20,000
// topics were unloaded, 8 MiB with the release. A collection of the
// whole heap is worth that only after a large sweep; topics idling out a
// few thousand per sweep are left to the runtime.
const ReleaseAfterUnload = 10_000

// unloadParallel bounds the topic closes Close has in flight: each closes
// a ledger (a metadata write), and concurrent writes share a commit.
const unloadParallel = 64

// walkWaitLimit bounds how long ReleaseUnloaded waits for the walks over
// the loaded topics in flight: longer than one takes over a million
// topics.
const walkWaitLimit = time.Minute

// ReleaseUnloaded hands the memory of the u topics a sweep just unloaded
// back to the operating system, if u >= ReleaseAfterUnload. It first
// waits for the walks in flight (the history sampler, the stats and
// policy loops, a metrics scrape, EachTopic): each holds the list of
// topics it started with, and a collection while one runs would keep the
// unloaded topics it lists, to be freed by the next collection and then
// kept from the operating system (in TestScaleTopicsMemory, half of 239
// MiB when a history tick began halfway through the sweep). A sweep
// must not call it from inside a walk.
func (b *Broker) ReleaseUnloaded(u int) {
	if u < ReleaseAfterUnload {
		return
	}
	t0 := time.Now()
	if !b.walks.Wait(walkWaitLimit, b.done) {
		select {
		case <-b.done:
			return
		default:
		}
		b.log.Warn("unloaded idle topics: walks over the topics still running, releasing anyway", "after", time.Since(t0).Round(time.Millisecond))
	}
	t1 := time.Now()
	debug.FreeOSMemory()
	b.log.Info("unloaded idle topics, released their memory", "topics", u, "waited", t1.Sub(t0).Round(time.Millisecond), "release", time.Since(t1).Round(time.Millisecond))
}
