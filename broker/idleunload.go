package broker

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Idle topic unloading (Config.IdleTopicUnloadTime, the magnetar key
// topicUnloadIdleSeconds). Unlike inactive topic deletion
// (package enforcement) this deletes nothing: a persistent topic that has had
// no producer, no connected consumer, no replicator, no compaction and
// no held send for the idle time is unloaded like an admin unload (its
// cursors are flushed and its managed ledger closed), and is loaded
// again by the next lookup, producer, subscription or admin call.
// Messages, cursors (mark-delete and individual acks, persisted by the
// managed ledger's close) and deduplication state (rebuilt from the log
// tail on load) survive. A loaded topic holds a subscription loop
// goroutine per subscription and a write handle per managed ledger;
// an unloaded one holds nothing in memory, which is what lets a broker
// keep a million idle topics.
//
// One ticker walks the loaded topics (every IdleTopicUnloadTime/4,
// between 1 s and 1 min); idleness is measured from the last time a
// check, a load, or a producer or consumer detaching found the topic in
// use.

// idleCheckInterval is how often the idle unloader looks at the topics.
func (c *Config) idleCheckInterval() time.Duration {
	return min(max(c.IdleTopicUnloadTime/4, time.Second), time.Minute)
}

// touch records that t is in use now.
func (t *topic) touch() { t.lastUsed.Store(time.Now().UnixNano()) }

// idleUnloadable reports whether nothing but idleness keeps t loaded.
func (t *topic) idleUnloadable() bool {
	if !t.persistent() || t.isClosed() || !t.b.owns(t) {
		return false
	}
	if t.held.n.Load() > 0 {
		return false
	}
	for _, p := range t.b.ext.pinners {
		if p.Pinned(Topic{t}) {
			return false // a feature works on it (a compaction, replicators)
		}
	}
	t.mu.Lock()
	busy := len(t.mu.producers) > 0 || len(t.mu.waiting) > 0
	t.mu.Unlock()
	return !busy && !topicInUse(t)
}

// releaseAfterUnload is how many topics one sweep must unload for it to
// hand the memory they held back to the operating system at once
// (debug.FreeOSMemory: a full collection, then every free page released).
// The runtime would return it only gradually (its background scavenger is
// paced to a small share of a CPU), and until then the resident set counts
// it: in TestScaleTopicsMemory, right after a collection, 322 MiB of free
// heap kept from the OS after 20,000 topics were unloaded, 8 MiB with the
// release. A collection of the whole heap is worth that only after a large
// sweep; topics idling out a few thousand per sweep are left to the
// runtime.
const releaseAfterUnload = 10_000

// idleUnloadParallel bounds the unloads in flight: each closes a ledger
// (a metadata write), and concurrent writes share a commit.
const idleUnloadParallel = 64

// unloadIdleTopics unloads the topics idle for IdleTopicUnloadTime at
// now, up to idleUnloadParallel at a time; it returns how many it
// unloaded. After releaseAfterUnload or more it releases the freed
// memory to the operating system.
func (b *Broker) unloadIdleTopics(now time.Time) int {
	limit := b.cfg.IdleTopicUnloadTime
	var n atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, idleUnloadParallel)
	for _, t := range b.loadedTopics("") {
		if b.isClosing() {
			break
		}
		if now.Sub(time.Unix(0, t.lastUsed.Load())) < limit {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if !t.idleUnloadable() {
				t.lastUsed.Store(now.UnixNano())
				return
			}
			if b.unloadTopic(t.full) {
				n.Add(1)
				b.log.Debug("unloaded idle topic", "topic", t.full)
			}
		}()
	}
	wg.Wait()
	u := n.Load()
	if u >= releaseAfterUnload {
		b.releaseUnloaded(u)
	}
	return int(u)
}

// walkWaitLimit bounds how long releaseUnloaded waits for the walks over
// the loaded topics in flight: longer than one takes over a million
// topics.
const walkWaitLimit = time.Minute

// releaseUnloaded hands the memory of the u topics a sweep unloaded back
// to the operating system. It first waits for the walks in flight (the
// history sampler, the stats and policy loops, a metrics scrape): each
// holds the list of topics it started with, and a collection while one
// runs would keep the unloaded topics it lists, to be freed by the next
// collection and then kept from the operating system (in
// TestScaleTopicsMemory, half of 239 MiB when a history tick began
// halfway through the sweep).
func (b *Broker) releaseUnloaded(u int64) {
	t0 := time.Now()
	if !b.walks.wait(walkWaitLimit, b.done) {
		if b.isClosing() {
			return
		}
		b.log.Warn("unloaded idle topics: walks over the topics still running, releasing anyway", "after", time.Since(t0).Round(time.Millisecond))
	}
	t1 := time.Now()
	debug.FreeOSMemory()
	b.log.Info("unloaded idle topics, released their memory", "topics", u, "waited", t1.Sub(t0).Round(time.Millisecond), "release", time.Since(t1).Round(time.Millisecond))
}

// idleUnloadLoop runs unloadIdleTopics until the broker closes.
func (b *Broker) idleUnloadLoop() {
	b.every(b.cfg.idleCheckInterval(), func(now time.Time) { b.unloadIdleTopics(now) })
}

// isClosing reports whether Close has begun.
func (b *Broker) isClosing() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}
